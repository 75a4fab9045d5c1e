#!/usr/bin/env bash
# The test command: installs what the tests need (Python packages, Debian's Chromium for the
# browser tests, Debian's PostgreSQL for the team back ends), runs `ruff check`, then the whole suite.
# Extra arguments go to pytest (-m "not teams" leaves out the tests that start Postgres and Chroma servers).
# --fast: the edit-test loop; leaves out the tests that start a real model, a server or a browser (pytest.ini).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-nanum >/dev/null  # Korean glyphs in screenshots
    else
        echo "Chromium is missing: install it (sudo apt-get install chromium) to run the browser tests" >&2
    fi
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then  # the tests start their own throw-away cluster; the package's own one stays off
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
        echo "PostgreSQL is missing: install it (sudo apt-get install postgresql) to run the team tests" >&2
    fi
fi
python -m ruff check .
if [ "${1:-}" = "--fast" ]; then
    shift
    exec python -m pytest -q -m "not real_model and not server and not browser" "$@"
fi
exec python -m pytest -q "$@"
