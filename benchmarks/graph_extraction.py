"""Graph extraction cost per chunk: the old format (one chunk per call, long keys) against the new one
(CHUNKS_PER_CALL numbered chunks per call, ``{"t": [{"c", "s", "r", "o"}]}``), on the sample collections.

    python -m benchmarks.graph_extraction [--model qwen2.5-coder-1.5b-instruct] [--collections a,b] [--json]

Per format: calls, prompt tokens sent, completion tokens, (prompt + completion) tokens per chunk, seconds
per chunk and triples per chunk, as the model reports its usage. The embedded default by default (the
model Graph RAG extracts with on a fresh install). A measurement (printed), never a test: run it on an
idle machine; the issue's target is new tokens per chunk at most half of old.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from contextvars import ContextVar
from typing import Annotated

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook
from pydantic import BaseModel, Field

from core.config import DEFAULT_CHAT_MODELS, Settings
from core.knowledge import entity_graph as eg
from core.knowledge import graph_extraction as gx
from core.knowledge.base import SAMPLE_COLLECTIONS, KnowledgeBase
from core.llm import graders
from core.prompts import fence
from core.prompts.agents import DATA_NOTE

# The extraction as it was before issue 24, kept verbatim as the baseline
OLD_SYSTEM = f"""Extract facts from the document for a knowledge graph, as triples \
(source entity, relation, target entity). Entities are names written in the text: people, \
organisations, products, places, laws, programmes, technologies, quantities, prices, targets, dates. \
Copy each name exactly as it is written. The relation is a short phrase in the language of the \
document, for example 가격, 목표, 출범, 소속, part of, located in. Give the most important facts first. \
{DATA_NOTE}"""


class OldRelation(BaseModel):
    source: Annotated[str, Field(max_length=gx.NAME_CHARS), gx.cut(gx.NAME_CHARS)]
    relation: Annotated[str, Field(max_length=gx.RELATION_CHARS), gx.cut(gx.RELATION_CHARS)]
    target: Annotated[str, Field(max_length=gx.NAME_CHARS), gx.cut(gx.NAME_CHARS)]


class Extraction(BaseModel):
    """The old schema's name and shape: the facts of one chunk."""

    relations: Annotated[list[OldRelation], Field(max_length=gx.MAX_RELATIONS_PER_CHUNK),
                         gx.first(gx.MAX_RELATIONS_PER_CHUNK)]


class Usage(BaseCallbackHandler):
    """Prompt and completion tokens of every chat call made while it is active."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = self.prompt = self.completion = 0

    def on_llm_end(self, response, **kwargs) -> None:
        for generations in response.generations:
            for gen in generations:
                usage = getattr(getattr(gen, "message", None), "usage_metadata", None) or {}
                with self.lock:
                    self.calls += 1
                    self.prompt += usage.get("input_tokens", 0)
                    self.completion += usage.get("output_tokens", 0)


_active: ContextVar[Usage | None] = ContextVar("graph_extraction_usage", default=None)
register_configure_hook(_active, inheritable=True)  # every call in this context reports to the active Usage


def _measure(label: str, chunks: int, work) -> dict:
    usage = Usage()
    token = _active.set(usage)
    started = time.perf_counter()
    try:
        triples = work()
    finally:
        _active.reset(token)
    seconds = time.perf_counter() - started
    per = max(chunks, 1)
    return {"format": label, "chunks": chunks, "calls": usage.calls, "prompt_tokens": usage.prompt,
            "completion_tokens": usage.completion,
            "tokens_per_chunk": round((usage.prompt + usage.completion) / per, 1),
            "seconds_per_chunk": round(seconds / per, 2), "triples_per_chunk": round(triples / per, 2)}


def old_format(model, docs) -> int:
    """One call per chunk, the old prompt and schema; returns the triples read."""
    return sum(len(graders.ask(model, Extraction, OLD_SYSTEM, fence(d.page_content), Extraction(relations=[]))
                   .value.relations) for d in docs)


def new_format(model, docs) -> int:
    """CHUNKS_PER_CALL chunks per call, the compact schema; returns the triples read."""
    total = 0
    for start in range(0, len(docs), gx.CHUNKS_PER_CALL):
        per_chunk, _ = gx.extract_batch(model, docs[start:start + gx.CHUNKS_PER_CALL])
        total += sum(len(triples) for triples in per_chunk)
    return total


def compare(model, kb: KnowledgeBase, collections: list[str]) -> list[dict]:
    """Old and new format over the same chunks (each collection's first GRAPH_MAX_CHUNKS), old first."""
    docs = []
    for name in collections:
        docs += eg.collection_chunks(kb, name, eg.GRAPH_MAX_CHUNKS)[0]
    rows = [_measure("old: 1 chunk/call", len(docs), lambda: old_format(model, docs)),
            _measure(f"new: {gx.CHUNKS_PER_CALL} chunks/call", len(docs), lambda: new_format(model, docs))]
    old, new = rows[0]["tokens_per_chunk"], rows[1]["tokens_per_chunk"]
    rows[1]["vs_old"] = round(new / old, 3) if old else None
    return rows


def _model(name: str, settings: Settings):
    from core.llm.models import get_chat_model, prepare_model

    chosen = settings.with_(provider="embedded", embedded_model=name, grader_model="")
    prepare_model(chosen)
    return get_chat_model(chosen, role="grader")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="graph extraction tokens per chunk, old format against new")
    parser.add_argument("--model", default=DEFAULT_CHAT_MODELS["embedded"], help="embedded model name")
    parser.add_argument("--collections", help="comma-separated sample collections (default: all four)")
    parser.add_argument("--data-dir", help="a data directory with the samples (default: a temporary one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    import tempfile

    settings = Settings(data_dir=args.data_dir or tempfile.mkdtemp(prefix="graph-bench-"))
    kb = KnowledgeBase(settings)
    kb.ensure_samples()
    names = [c.strip() for c in (args.collections or "").split(",") if c.strip()] or list(SAMPLE_COLLECTIONS)
    rows = compare(_model(args.model, settings), kb, names)
    if args.json:
        print(json.dumps({"model": args.model, "collections": names, "rows": rows}, ensure_ascii=False, indent=2))
        return 0
    print(f"{args.model} on {', '.join(names)}")
    for row in rows:
        print(" · ".join(f"{k} {v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
