"""Which back ends this process uses (embedded files or shared servers), and whether each answers."""

from __future__ import annotations

from dataclasses import dataclass

from core.config import Settings
from core.secrets import mask_url, redact


@dataclass
class Backend:
    role: str  # "database" | "vector store"
    where: str  # what is shown: a path, or a URL with its password masked
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{self.role:<15}: {self.where}: {'ok' if self.ok else 'error'} - {self.detail}"


def report(settings: Settings) -> list[Backend]:
    return [_database(settings), _vector_store(settings)]


def _probe(role: str, where: str, settings: Settings, check) -> Backend:
    """Run ``check()`` (it returns what it found); a failure is reported, never raised: doctor does not crash."""
    try:
        return Backend(role, where, True, check())
    except Exception as exc:
        return Backend(role, where, False, redact(str(exc), settings))


def _database(settings: Settings) -> Backend:
    if not settings.database_url:
        return Backend("database", f"SQLite files under {settings.data_path}", True,
                       "threads.sqlite, checkpoints.sqlite (one machine; RAG_DATABASE_URL for a team)")

    def check() -> str:
        import psycopg

        from core.store.checkpoint import get_checkpointer
        from core.store.db import SCHEMA_VERSION, shared_database

        psycopg.connect(settings.database_url, connect_timeout=5).close()  # a clear error before any pool retries
        row = shared_database(settings.database_url).execute(
            "SELECT version() AS v, (SELECT max(version) FROM rag_schema) AS schema, "
            "(SELECT count(*) FROM threads) AS threads").one()
        get_checkpointer(settings)
        return f"{row['v'].split(' on ')[0]}, schema {row['schema']}/{SCHEMA_VERSION}, {row['threads']} thread(s)"

    return _probe("database", f"Postgres {mask_url(settings.database_url)}", settings, check)


def _vector_store(settings: Settings) -> Backend:
    if not settings.chroma_url:
        return Backend("vector store", f"embedded Chroma under {settings.data_path / 'chroma'}", True,
                       "one process at a time (RAG_CHROMA_URL for a team)")

    def check() -> str:
        from core.knowledge.base import store_client

        client = store_client(settings)
        client.heartbeat()
        return f"Chroma {client.get_version()}, {len(client.list_collections())} collection(s)"

    return _probe("vector store", f"Chroma server {mask_url(settings.chroma_url)}", settings, check)
