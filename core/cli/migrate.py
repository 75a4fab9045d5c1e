"""Copy a single-user data directory to the team back ends: ``python -m core migrate --to-database URL``.

Threads, runs, forks, checkpoints, saved comparisons and evaluations go to Postgres; collections
(with their embeddings, so nothing is embedded again) go to a Chroma server. Every copy is keyed by
what identifies the row, so running it again copies nothing twice; the counts say what was new.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from core.store.checkpoint import database_path, get_checkpointer
from core.store.db import shared_database

CHROMA_BATCH = 500


def migrate(data_dir: Path, to_database: str = "", to_chroma: str = "", progress=None) -> dict:
    """Copy what ``data_dir`` holds; returns ``{what: {"copied": n, "present": m}}`` (present: already there)."""
    say = progress or (lambda text: None)
    counts: dict = {}
    if to_database:
        say("registry: threads, runs, forks")
        counts.update(_registry(Path(data_dir), to_database))
        say("checkpoints")
        counts["checkpoints"] = _checkpoints(Path(data_dir), to_database)
        say("comparisons and evaluations")
        counts.update(_saved(Path(data_dir), to_database))
    if to_chroma:
        say("collections")
        counts.update(_collections(Path(data_dir), to_chroma))
    return counts


def _tally(copied: int, total: int) -> dict:
    return {"copied": copied, "present": total - copied}


def _registry(data_dir: Path, url: str) -> dict:
    path = data_dir / "threads.sqlite"
    if not path.is_file():
        return {"threads": _tally(0, 0), "runs": _tally(0, 0), "forks": _tally(0, 0)}
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    source.row_factory = sqlite3.Row
    target = shared_database(url)
    try:
        threads = [dict(r) for r in source.execute("SELECT * FROM threads")]
        runs = [dict(r) for r in source.execute("SELECT * FROM runs ORDER BY id")]  # ids in order: turns stay in order
        has_forks = source.execute("SELECT 1 FROM sqlite_master WHERE name='forks'").fetchone()
        forks = [dict(r) for r in source.execute("SELECT * FROM forks")] if has_forks else []
    finally:
        source.close()
    copied = {"threads": 0, "runs": 0, "forks": 0}
    with target.transaction() as tx:
        for t in threads:
            copied["threads"] += tx.execute(
                "INSERT INTO threads(thread_id, pattern, title, status, created_at, updated_at, origin) "
                "VALUES (?,?,?,?,?,?,?) ON CONFLICT(thread_id) DO NOTHING",
                (t["thread_id"], t["pattern"], t["title"], t["status"], t["created_at"], t["updated_at"],
                 t.get("origin") or "chat")).rowcount
        for r in runs:  # a run is the same run when thread, start time and question match
            copied["runs"] += tx.execute(
                "INSERT INTO runs(thread_id, started_at, finished_at, question, status, result, owner_host, owner_pid, "
                "owner_started) SELECT ?,?,?,?,?,?,?,?,? WHERE NOT EXISTS (SELECT 1 FROM runs "
                "WHERE thread_id=? AND started_at=? AND question=?)",
                (r["thread_id"], r["started_at"], r["finished_at"], r["question"], r["status"], r["result"],
                 r.get("owner_host"), r.get("owner_pid"), r.get("owner_started"),
                 r["thread_id"], r["started_at"], r["question"])).rowcount
        for f in forks:
            copied["forks"] += tx.execute(
                "INSERT INTO forks(thread_id, parent, turn, record, runs_before, created_at) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT(thread_id) DO NOTHING",
                (f["thread_id"], f["parent"], f["turn"], f["record"], f["runs_before"], f["created_at"])).rowcount
    return {"threads": _tally(copied["threads"], len(threads)), "runs": _tally(copied["runs"], len(runs)),
            "forks": _tally(copied["forks"], len(forks))}


def _checkpoints(data_dir: Path, url: str) -> dict:
    """Every checkpoint of every thread and namespace, with its pending writes (the review a run waits on)."""
    if not database_path(data_dir).is_file():
        return _tally(0, 0)
    source, target = get_checkpointer(data_dir), get_checkpointer(url)
    total = copied = 0
    for item in source.list(None):
        total += 1
        conf = item.config["configurable"]
        if target.get_tuple({"configurable": dict(conf)}) is not None:
            continue
        parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        put_conf = {"configurable": {"thread_id": conf["thread_id"], "checkpoint_ns": conf.get("checkpoint_ns", ""),
                                     "checkpoint_id": parent}}
        # every channel as new: the Postgres saver stores channel values separately and must get them all
        saved = target.put(put_conf, item.checkpoint, item.metadata, dict(item.checkpoint.get("channel_versions", {})))
        by_task: dict[str, list] = {}
        for task_id, channel, value in item.pending_writes or []:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            target.put_writes(saved, writes, task_id)
        copied += 1
    return _tally(copied, total)


def _saved(data_dir: Path, url: str) -> dict:
    out = {}
    target = shared_database(url)
    for folder, kind, key in (("comparisons", "comparison", "comparisons"), ("evals", "evaluation", "evaluations")):
        files = sorted((data_dir / folder).glob("*.json")) if (data_dir / folder).is_dir() else []
        copied = 0
        for path in files:
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a half-written or foreign file is not a record
            record_id = path.stem if kind == "comparison" else path.name  # the names the app lists them by
            copied += target.execute(
                "INSERT INTO saved_records(kind, id, record, updated_at) VALUES (?,?,?,?) ON CONFLICT(kind, id) DO NOTHING",
                (kind, record_id, json.dumps(record, ensure_ascii=False), path.stat().st_mtime)).rowcount
        out[key] = _tally(copied, len(files))
    return out


def _collections(data_dir: Path, url: str) -> dict:
    """Each collection with its metadata (embedding model, description) and stored embeddings."""
    from core.knowledge.base import local_client, server_client

    if not (data_dir / "chroma" / "chroma.sqlite3").is_file():
        return {"collections": _tally(0, 0), "chunks": _tally(0, 0)}
    source, target = local_client(data_dir / "chroma"), server_client(url)
    existing = {c.name for c in target.list_collections()}
    collections = source.list_collections()
    new_collections = chunks = new_chunks = 0
    for listed in collections:
        collection = source.get_collection(listed.name)
        new_collections += listed.name not in existing
        into = target.get_or_create_collection(listed.name, metadata=collection.metadata)
        have = set(into.get(include=[])["ids"]) if listed.name in existing else set()
        offset = 0
        while True:
            batch = collection.get(include=["documents", "metadatas", "embeddings"], limit=CHROMA_BATCH, offset=offset)
            if not batch["ids"]:
                break
            chunks += len(batch["ids"])
            new_chunks += sum(i not in have for i in batch["ids"])
            into.upsert(ids=batch["ids"], documents=batch["documents"], metadatas=batch["metadatas"],
                        embeddings=batch["embeddings"])
            offset += len(batch["ids"])
    return {"collections": _tally(new_collections, len(collections)), "chunks": _tally(new_chunks, chunks)}
