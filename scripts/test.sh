#!/usr/bin/env bash
# The test command: runs `ruff check`, then the whole suite, inside a virtualenv made from requirements.txt and
# requirements-dev.txt alone (no system site-packages), so a package the files forget fails here, not on a
# user's machine. Also installs Debian's Chromium (browser tests) and PostgreSQL (team back ends) when root.
# The virtualenv is kept under ~/.cache/agentic-rag-studio/test-venvs/, keyed by a hash of the requirement files
# and the Python version: reused while they are unchanged, rebuilt when they change (pip's cache makes that
# cheap; llama-cpp-python is compiled once and its wheel cached). RAG_TEST_VENV names another directory.
# Extra arguments go to pytest (-m "not teams" leaves out the tests that start Postgres and Chroma servers).
# The suite runs in two tiers (tests/conftest.py): the light tests on every core (pytest-xdist; they share no
# port, model or server, only files under their own tmp dirs), then the heavy ones (a real model, a server or a
# browser; pytest.ini) one at a time, since they share ports, models and the CPU.
# --fast: the edit-test loop; the light tier alone.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
key=$({ "$python" -c 'import sys; print(sys.version)'; cat requirements.txt requirements-dev.txt; } | sha256sum | cut -c1-16)
venvs="${XDG_CACHE_HOME:-$HOME/.cache}/agentic-rag-studio/test-venvs"
venv=${RAG_TEST_VENV:-$venvs/$key}
mkdir -p "$(dirname "$venv")"
(
    flock 9  # two test runs at once build one virtualenv, not two half ones
    if [ "$(cat "$venv/.requirements-key" 2>/dev/null)" != "$key" ]; then
        echo "test virtualenv: building $venv from the requirement files (reused until they change)" >&2
        start=$SECONDS
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
        echo "$key" > "$venv/.requirements-key"  # written last: a build cut short is rebuilt next time
        echo "test virtualenv: built in $((SECONDS - start)) s" >&2
        if [ -z "${RAG_TEST_VENV:-}" ]; then  # older builds of other requirement files: only the newest two stay
            ls -dt "$venvs"/*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
        fi
    fi
) 9>"$venv.lock"
export VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH"  # tests that start `python` or `streamlit` get the venv's
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
    exec python -m pytest -q -n auto --tier light "$@"
fi
light=0; python -m pytest -q -n auto --tier light "$@" || light=$?
heavy=0; python -m pytest -q --tier heavy "$@" || heavy=$?
# pytest's 5 is "no test collected": a tier the arguments leave empty is no failure unless both are empty
if [ "$light" = 5 ] && [ "$heavy" = 5 ]; then exit 5; fi
for status in "$light" "$heavy"; do
    if [ "$status" != 0 ] && [ "$status" != 5 ]; then exit "$status"; fi
done
