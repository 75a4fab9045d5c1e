"""Where things are, for tests and the scripts they start."""

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
ROOT = TESTS.parent
CORPORA = SUPPORT / "corpora"
