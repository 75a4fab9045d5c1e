"""The command line (python -m core ...), one module per command group."""
