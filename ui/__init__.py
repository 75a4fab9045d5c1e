"""Streamlit components shared by the pages (core stays free of Streamlit)."""
