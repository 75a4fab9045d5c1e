"""Load on the team back ends (issue #14): N concurrent CLI processes against one Postgres and one Chroma server.

    python -m benchmarks.teams_load [--runs 20] [--pattern basic] [--database-url URL] [--chroma-url URL] [--json]

Without URLs it starts a throw-away PostgreSQL cluster and a ``chroma run`` server (tests/support/shared_servers.py,
so Debian's ``postgresql`` package is needed) and removes them afterwards. Each run is a whole
``python -m core ask`` process (tests/support/scripted_cli.py: the real CLI with a scripted chat model, so only the
back ends and the app itself are measured, not a model). The samples are indexed on the Chroma server first.

Reports errors (non-zero exits), lost runs (runs not ``done`` in the registry), p50/p95 seconds per run
(the process from start to exit, and the run inside it), and the database size per 1000 checkpoints.
A measurement (printed), never a test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
QUESTIONS = ["스테이크 메뉴의 가격은 얼마인가요?", "와인 가격은?", "주차가 되나요?", "파스타 메뉴가 있나요?"]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def database_figures(url: str) -> dict:
    """pg_database_size and the checkpoint rows of the database behind ``url``."""
    import psycopg

    with psycopg.connect(url) as conn:
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        counts = {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                  for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")}
    return {"bytes": size, **counts}


def registry_statuses(url: str, since: float) -> dict:
    """How the runs started since ``since`` ended, as the registry records them."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT status, count(*) FROM runs WHERE started_at >= %s GROUP BY status", (since,))
        return dict(rows.fetchall())


def prepare(database_url: str, chroma_url: str, data_dir: Path) -> None:
    """Schema and checkpoint tables created once, the samples indexed on the Chroma server (not timed)."""
    from core.config import load_settings
    from core.knowledge.base import KnowledgeBase
    from core.store.checkpoint import get_checkpointer
    from core.store.threads import get_registry

    settings = load_settings(data_dir=str(data_dir), provider="embedded", database_url=database_url,
                             chroma_url=chroma_url)
    get_registry(settings)
    get_checkpointer(settings)
    KnowledgeBase(settings).ensure_samples()


def load(database_url: str, chroma_url: str, runs: int, pattern: str, data_dir: Path) -> dict:
    env = {**os.environ, "RAG_DATABASE_URL": database_url, "RAG_CHROMA_URL": chroma_url, "RAG_K": "2"}
    before = database_figures(database_url)
    load_at_start = os.getloadavg()[0]
    since = time.time()
    outcomes: list[tuple] = [()] * runs

    def one(i: int) -> None:
        command = [sys.executable, str(TESTS / "support" / "scripted_cli.py"), "--data-dir", str(data_dir), "ask", "--pattern",
                   pattern, "--json", QUESTIONS[i % len(QUESTIONS)]]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
        outcomes[i] = (time.perf_counter() - started, done)

    workers = [threading.Thread(target=one, args=(i,)) for i in range(runs)]  # all at once, each timed to its exit
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall, inside, errors = [], [], []
    for seconds, done in outcomes:
        wall.append(seconds)
        if done.returncode:
            errors.append(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
            continue
        try:
            result = json.loads(done.stdout)
        except ValueError:
            errors.append(f"not a JSON result: {done.stdout[:200]!r}")
            continue
        inside.append(result.get("ms", 0) / 1000)
        if result.get("error"):
            errors.append(result["error"])
    total = time.time() - since
    after = database_figures(database_url)
    statuses = registry_statuses(database_url, since)
    new_checkpoints = after["checkpoints"] - before["checkpoints"]
    return {
        "runs": runs, "pattern": pattern, "errors": errors, "statuses": statuses,
        "lost": runs - statuses.get("done", 0),
        "process_seconds": {"p50": percentile(wall, 50), "p95": percentile(wall, 95), "max": max(wall)},
        "run_seconds": ({"p50": percentile(inside, 50), "p95": percentile(inside, 95), "max": max(inside)}
                        if inside else None),
        "total_seconds": total,
        "database": {"before": before, "after": after, "new_checkpoints": new_checkpoints,
                     "bytes_per_1000_checkpoints": after["bytes"] / after["checkpoints"] * 1000 if after["checkpoints"] else None,
                     "growth_bytes_per_1000_new_checkpoints":
                         (after["bytes"] - before["bytes"]) / new_checkpoints * 1000 if new_checkpoints else None},
        "cores": os.cpu_count(), "load_average_at_start": load_at_start, "load_average_at_end": os.getloadavg()[0],
    }


def render(report: dict) -> str:
    mb = 1024 * 1024
    db = report["database"]
    lines = [
        f"{report['runs']} concurrent `ask --pattern {report['pattern']}` processes, {report['total_seconds']:.1f} s in all",
        f"errors: {len(report['errors'])}" + "".join(f"\n  - {e}" for e in report["errors"]),
        f"lost runs (not done): {report['lost']}  registry: {report['statuses']}",
        "per process (start to exit): p50 {p50:.1f} s, p95 {p95:.1f} s, max {max:.1f} s".format(**report["process_seconds"]),
    ]
    if report["run_seconds"]:
        lines.append("per run (inside the process): p50 {p50:.2f} s, p95 {p95:.2f} s, max {max:.2f} s"
                     .format(**report["run_seconds"]))
    lines += [
        f"checkpoints: {db['before']['checkpoints']} -> {db['after']['checkpoints']} "
        f"(blobs {db['after']['checkpoint_blobs']}, writes {db['after']['checkpoint_writes']})",
        f"database: {db['before']['bytes'] / mb:.1f} MiB -> {db['after']['bytes'] / mb:.1f} MiB",
    ]
    if db["bytes_per_1000_checkpoints"]:
        lines.append(f"database size per 1000 checkpoints: {db['bytes_per_1000_checkpoints'] / mb:.1f} MiB "
                     f"(whole database / checkpoints)")
    if db["growth_bytes_per_1000_new_checkpoints"]:
        lines.append(f"growth per 1000 new checkpoints: {db['growth_bytes_per_1000_new_checkpoints'] / mb:.1f} MiB")
    lines.append(f"{report['cores']} cores, load average {report['load_average_at_start']:.1f} at the start, "
                 f"{report['load_average_at_end']:.1f} at the end")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="concurrent CLI processes (default 20)")
    parser.add_argument("--pattern", default="basic", help="pattern each run uses (default basic)")
    parser.add_argument("--database-url", default=os.environ.get("RAG_DATABASE_URL", ""),
                        help="an existing Postgres database (default: RAG_DATABASE_URL, else a throw-away cluster)")
    parser.add_argument("--chroma-url", default=os.environ.get("RAG_CHROMA_URL", ""),
                        help="an existing Chroma server (default: RAG_CHROMA_URL, else a throw-away `chroma run`)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    sys.path[:0] = [str(ROOT), str(TESTS)]
    started = []
    try:
        database_url, chroma_url = args.database_url, args.chroma_url
        if not database_url:
            from support.shared_servers import PostgresCluster

            started.append(PostgresCluster())
            database_url = started[-1].new_database()
        if not chroma_url:
            from support.shared_servers import ChromaServer

            started.append(ChromaServer())
            chroma_url = started[-1].url
        with tempfile.TemporaryDirectory(prefix="rag-load-") as data_dir:
            prepare(database_url, chroma_url, Path(data_dir))
            report = load(database_url, chroma_url, args.runs, args.pattern, Path(data_dir))
    finally:
        for server in reversed(started):
            server.stop()
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else render(report))
    return 1 if report["errors"] or report["lost"] else 0


if __name__ == "__main__":
    sys.exit(main())
