"""Saved calibrations (the thresholds fitted for a model): a row of the shared database for teams, else a
private JSON file per model under data/calibrations."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from core.store import saved_records
from core.store.db import private_dir, private_file

KIND = "calibration"


def _path(settings, model: str) -> Path:
    # a model name may hold "/" or ":" (ollama tags, server paths): a readable stem plus a digest keeps it unique
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", model)[:60]
    digest = hashlib.sha256(model.encode()).hexdigest()[:8]
    return Path(settings.data_path) / "calibrations" / f"{stem}-{digest}.json"


def save(settings, model: str, record: dict) -> None:
    """Keep the calibration of ``model``; a later one replaces it."""
    if saved_records.in_database(settings):
        saved_records.save(settings, KIND, model, record)
        return
    path = _path(settings, model)
    private_dir(path.parent, ours=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")
    private_file(tmp)
    tmp.replace(path)  # a reader never sees half a file


def load(settings, model: str) -> dict | None:
    """The calibration saved for ``model``, or None (none saved, or a file that is not one)."""
    if saved_records.in_database(settings):
        return saved_records.load(settings, KIND, model)
    try:
        record = json.loads(_path(settings, model).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None
