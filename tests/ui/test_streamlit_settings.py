"""Streamlit's own settings are the safe ones for a shared deployment (issue 53, item 5)."""

import re
import tomllib

from core.config import PROJECT_ROOT

CONFIG = tomllib.loads((PROJECT_ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
DOCKERFILE = (PROJECT_ROOT / "Dockerfile").read_text(encoding="utf-8")
DEPLOY = (PROJECT_ROOT / "docs" / "DEPLOY.md").read_text(encoding="utf-8")


def test_forged_cross_site_requests_and_other_origins_are_refused():
    assert CONFIG["server"]["enableXsrfProtection"] is True
    assert CONFIG["server"]["enableCORS"] is True  # true = CORS protection on: no other origin is allowed


def test_visitors_never_see_a_traceback():
    # "none": an uncaught exception shows a generic line, not the file paths, code and values of a traceback
    assert CONFIG["client"]["showErrorDetails"] == "none"


def test_no_file_watcher_in_a_deployment():
    # a watcher re-runs scripts when files change: in a shared deployment nothing should, and it costs inotify handles
    assert CONFIG["server"]["fileWatcherType"] == "none"
    assert CONFIG["server"]["runOnSave"] is False
    command = re.search(r"^CMD (.*?\])", DOCKERFILE, re.MULTILINE | re.DOTALL).group(1)
    assert '"--server.fileWatcherType", "none"' in command


def test_the_deployment_notes_say_so():
    for name in ("enableXsrfProtection", "enableCORS", "showErrorDetails", "fileWatcherType", "maxUploadSize"):
        assert name in DEPLOY, name
