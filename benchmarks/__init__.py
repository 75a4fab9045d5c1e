"""Benchmarks that need a measuring instrument rather than a real model (kept out of the core package)."""
