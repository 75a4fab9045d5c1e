"""`streamlit run` whose password counters read a clock that never moves, for the browser test of the lockout.

    python tests/support/frozen_clock_server.py run streamlit_app.py --server.port N ...

A lock then lasts until the server stops, so the test does not race the 1-second first lock. Nothing
else changes: real Streamlit, real sessions over websockets, the real counters of core.store.access_limit.
"""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TESTS.parent), str(TESTS)]

from streamlit.web import cli  # noqa: E402

from core.store import access_limit  # noqa: E402

FROZEN = 1_000_000.0
access_limit._limiters[""] = access_limit.AccessLimiter(access_limit.MemoryCounters(), lambda: FROZEN)

if __name__ == "__main__":
    sys.argv = ["streamlit", *sys.argv[1:]]
    sys.exit(cli.main())
