"""python -m core: the command line, in core.cli."""

import sys

from core.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
