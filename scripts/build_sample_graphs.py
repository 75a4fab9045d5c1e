#!/usr/bin/env python3
"""Rebuild the Graph RAG graphs shipped with the sample collections (core/samples/graphs/<collection>.json).

The samples are indexed into a throw-away data directory exactly as a fresh install indexes them
(default chunk size and overlap, so the chunk digest matches), each graph is extracted with the
default embedded model (the grader Graph RAG uses on a fresh install) and copied next to the samples.
A fresh data directory then copies a shipped graph whose chunk digest and model match instead of
extracting it; any other graph there is ignored (core.knowledge.entity_graph).

Slow with the real model (about 45 chunks, four per call): run it on an idle machine, then commit
the JSON files.

    python scripts/build_sample_graphs.py                     # all four samples, Qwen2.5-Coder 1.5B
    python scripts/build_sample_graphs.py --collections restaurant_wine
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.config import DEFAULT_CHAT_MODELS, Settings, load_settings  # noqa: E402
from core.knowledge import entity_graph as eg  # noqa: E402
from core.knowledge.base import SAMPLE_COLLECTIONS, KnowledgeBase  # noqa: E402


def default_model(settings: Settings):
    """The embedded default (what a fresh install's Graph RAG extracts with), assembled on first use."""
    from core.llm.models import get_chat_model, prepare_model

    chosen = settings.with_(provider="embedded", embedded_model=DEFAULT_CHAT_MODELS["embedded"], grader_model="")
    prepare_model(chosen)
    return get_chat_model(chosen, role="grader")


def build_sample_graphs(model, out_dir: Path = eg.SHIPPED_GRAPHS, collections: list[str] | None = None,
                        kb: KnowledgeBase | None = None, log=print) -> list[dict]:
    """Extract the samples' graphs with ``model`` into ``out_dir``; returns the build info of each.

    ``kb``: a knowledge base the samples are (or get) indexed in; by default a temporary one.
    """
    names = collections or list(SAMPLE_COLLECTIONS)
    unknown = sorted(set(names) - set(SAMPLE_COLLECTIONS))
    if unknown:
        raise SystemExit(f"not a sample collection: {', '.join(unknown)} (samples: {', '.join(SAMPLE_COLLECTIONS)})")
    temp = None
    if kb is None:
        temp = tempfile.mkdtemp(prefix="sample-graphs-")
        kb = KnowledgeBase(Settings(data_dir=temp))  # defaults, not .env: the chunks of a fresh install
    try:
        kb.ensure_samples()
        infos = []
        for name in names:
            eg.drop_graph(kb.settings, name)  # extract afresh: never copy the shipped graph onto itself
            infos.append(_build_one(kb, model, name, out_dir, log))
        return infos
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)


def _build_one(kb: KnowledgeBase, model, name: str, out_dir: Path, log) -> dict:
    started = time.perf_counter()
    shipped = out_dir / f"{name}.json"
    hidden = shipped.with_suffix(".json.old")
    if shipped.exists():  # the old shipped graph must not stand in for the extraction
        shipped.replace(hidden)
    try:
        _, info = eg.ensure_graph(kb.settings, kb, model, name, eg.GRAPH_MAX_CHUNKS,
                                  progress=lambda done, total: log(f"  {name}: {done}/{total} chunks"))
    except BaseException:
        if hidden.exists():
            hidden.replace(shipped)
        raise
    hidden.unlink(missing_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(eg.graph_path(kb.settings, name), shipped)
    info["seconds"] = round(time.perf_counter() - started, 1)
    log(f"{name}: {info['nodes']} entities, {info['edges']} relations from {info['chunks']} chunks by {info['model']} "
        f"in {info['seconds']} s ({len(info['errors'])} failed call(s)) -> {shipped}")
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collections", help="comma-separated sample collections (default: all)")
    parser.add_argument("--out", type=Path, default=eg.SHIPPED_GRAPHS, help="where the graphs go")
    args = parser.parse_args(argv)
    names = [c.strip() for c in (args.collections or "").split(",") if c.strip()] or None
    model = default_model(load_settings())
    build_sample_graphs(model, args.out, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
