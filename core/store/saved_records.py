"""Saved comparisons and evaluations in the shared database (files under data/ when there is none)."""

from __future__ import annotations

import json
import time

from core.store.db import database_url, shared_database


def in_database(settings) -> bool:
    return bool(database_url(settings))


def save(settings, kind: str, record_id: str, record: dict) -> None:
    """Insert or replace one record (a comparison is saved again as each column finishes)."""
    shared_database(database_url(settings)).execute(
        "INSERT INTO saved_records(kind, id, record, updated_at) VALUES (?,?,?,?) ON CONFLICT(kind, id) "
        "DO UPDATE SET record=excluded.record, updated_at=excluded.updated_at",
        (kind, record_id, json.dumps(record, ensure_ascii=False, default=str), time.time()))


def load(settings, kind: str, record_id: str) -> dict | None:
    row = shared_database(database_url(settings)).execute(
        "SELECT record FROM saved_records WHERE kind=? AND id=?", (kind, record_id)).one()
    return json.loads(row["record"]) if row else None


def listed(settings, kind: str) -> list[tuple[str, dict]]:
    """(id, record) of every record of a kind, newest id first (ids start with their date)."""
    rows = shared_database(database_url(settings)).execute(
        "SELECT id, record FROM saved_records WHERE kind=? ORDER BY id DESC", (kind,)).rows
    return [(row["id"], json.loads(row["record"])) for row in rows]
