"""SQLite / Postgres: threads, runs, checkpoints, forks and saved records."""
