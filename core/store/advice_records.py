"""Saved advice records (core.studio.advise): a private JSON file each under data/advice, or rows of the shared database.

Kept here, below the patterns, because Auto reads the latest advice to choose a pattern per kind of question.
"""

from __future__ import annotations

import json

from core.store import saved_records
from core.store.files import private_folder, write_private

KIND = "advice"


def save(settings, record: dict) -> None:
    """Write one record whole (0600): a reader never sees half a record."""
    if saved_records.in_database(settings):
        saved_records.save(settings, KIND, record["id"], record)
        return
    folder = private_folder(settings.data_path, "advice")
    write_private(folder / f"{record['id']}.json", json.dumps(record, ensure_ascii=False, default=str))


def read_all(settings) -> tuple[list[dict], list[str]]:
    """Every saved record, newest first, and a line for each that could not be read (file name and why)."""
    if saved_records.in_database(settings):
        return [r for _id, r in saved_records.listed(settings, KIND)], []
    folder = settings.data_path / "advice"
    records, problems = [], []
    for path in sorted(folder.glob("2*.json"), reverse=True) if folder.is_dir() else []:
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            problems.append(f"{path.name}: unreadable ({exc.__class__.__name__})")
    return records, problems


def load(settings, advice_id: str) -> dict | None:
    """The record ``advice_id``, or None when there is none."""
    if saved_records.in_database(settings):
        return saved_records.load(settings, KIND, advice_id)
    path = settings.data_path / "advice" / f"{advice_id}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() and "/" not in advice_id else None
