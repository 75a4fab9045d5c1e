"""Benchmarks: graph overhead against injected model latency, grading concurrency, the offline stack.

The measuring model behind the overhead figures lives outside the core package (``benchmarks/``).

``python -m core bench [--json] [--large]``. Figures are printed, never asserted: a benchmark
is a measurement, and docs/BENCHMARKS.md records them with the date and machine.
"""

from __future__ import annotations

import json
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document

from core.config import Settings
from core.llm import graders

LATENCY = 1.0  # seconds per injected model call (benchmarks.latency_model)

MENU_QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"


class _Replies(BaseCallbackHandler):
    """Keeps the response_metadata of every reply (prefix-cache figures, timings) of the model it watches."""

    def __init__(self) -> None:
        self.replies: list[dict] = []

    def on_llm_end(self, response, **kwargs) -> None:
        self.replies.append(dict(response.generations[0][0].message.response_metadata))


def bench_embedded_model(settings: Settings, name: str) -> dict:
    """One embedded model: load, time to first token of the basic answer, prompt and decode speed, grades.

    The grades show llama.cpp's prefix cache: a grade after an unrelated prompt (cold), the same question
    on the next document (the system text and question are cached), and another check of that document
    (everything up to the check is cached).
    """
    from core.llm import embedded_llm
    from core.run.runner import stream_run

    settings = settings.with_(provider="embedded", model=name)
    start = time.perf_counter()
    path = embedded_llm.embedded_model_path(name, settings.model_cache_path)
    ready = time.perf_counter() - start
    embedded_llm.get_llama(path)
    load = embedded_llm.LOAD_SECONDS.get(str(path), 0.0)

    start, first, answer = time.perf_counter(), None, ""
    for event in stream_run("basic", MENU_QUESTION, settings, origin="eval"):
        if event["type"] == "token" and first is None:
            first = time.perf_counter() - start
        if event["type"] in ("done", "error"):
            answer = event["result"].get("answer") or event["result"].get("error", "")
    total = time.perf_counter() - start

    watch = _Replies()
    model = embedded_llm.EmbeddedChatModel(model_name=name, model_cache_dir=str(settings.model_cache_path),
                                           max_tokens=128, callbacks=[watch])
    model.invoke("Write three sentences about the history of bread.")  # decode speed, and an unrelated prefix
    decode = watch.replies[-1]
    docs = [Document(text) for text in _bench_documents()]
    graders.grade_documents(model, MENU_QUESTION, docs[:1], 1)
    cold = watch.replies[-1]
    graders.grade_documents(model, MENU_QUESTION, docs[1:2], 1)
    next_doc = watch.replies[-1]
    graders.crag_grade(model, MENU_QUESTION, docs[1:2], 1)
    other_check = watch.replies[-1]

    def grade(meta: dict) -> str:
        return f"{meta['wall_ms'] / 1000:.2f} s ({meta['cached_prompt_tokens']}/{meta['prompt_tokens']} cached)"

    cache, replies = {}, {}
    for label, mb in (("off", 0), ("on", settings.embedded_cache_mb or 1024)):
        figures = _cache_sequence(name, settings, mb, docs)
        replies[label] = figures.pop("replies")
        cache.update({f"cache_{label}_{key}": value for key, value in figures.items()})
    cache["cache_identical_replies"] = replies["off"] == replies["on"]
    return {
        "model": name, "file_ready_s": round(ready, 2), "load_s": round(load, 2),
        "basic_first_token_s": round(first or total, 2), "basic_answer_s": round(total, 2), "basic_answer": answer[:80],
        "prompt_tokens_per_s": round(cold["prompt_eval_tokens"] / max(cold["prompt_eval_ms"], 1) * 1000, 1),
        "decode_tokens_per_s": round(decode["decode_tokens"] / max(decode["decode_ms"], 1) * 1000, 1),
        "grade_cold": grade(cold), "grade_next_document": grade(next_doc), "grade_other_check": grade(other_check),
        **cache,
    }


def _cache_sequence(name: str, settings: Settings, cache_mb: int, docs: list[Document]) -> dict:
    """Documents graded, answered from, checked, then an unrelated prompt and the check again: the calls of
    a Self-RAG turn, with the prompt-state cache at ``cache_mb`` (0: off). Tokens read, seconds, replies."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from core.llm import embedded_llm
    from core.prompts import answer_request, documents_system

    embedded_llm.PROMPT_CACHE.clear()
    for llama in embedded_llm._llama_cache.values():
        llama.stable_tokens = 0  # both runs start from nothing read
    watch = _Replies()
    model = embedded_llm.EmbeddedChatModel(model_name=name, model_cache_dir=str(settings.model_cache_path),
                                           max_tokens=96, cache_mb=cache_mb, callbacks=[watch])
    start = time.perf_counter()
    grades = graders.grade_documents(model, MENU_QUESTION, docs, 1)
    answer = str(model.invoke([SystemMessage(documents_system(docs)), HumanMessage(answer_request(MENU_QUESTION))])
                 .content)
    checks = [graders.grade_grounded(model, docs, answer, MENU_QUESTION).value.grounded]
    model.invoke("Write one sentence about bread.")
    checks.append(graders.grade_grounded(model, docs, answer, MENU_QUESTION).value.grounded)
    return {"seconds": round(time.perf_counter() - start, 2), "calls": len(watch.replies),
            "prompt_tokens": sum(r["prompt_tokens"] for r in watch.replies),
            "prompt_tokens_read": sum(r["prompt_eval_tokens"] for r in watch.replies),
            "replies": [g.value.relevant for g in grades] + [answer] + checks}


def _bench_documents() -> list[str]:
    """Two menu sections of the sample menu (about 450 characters each)."""
    text = (Path(__file__).resolve().parent.parent / "samples" / "restaurant_menu.md").read_text(encoding="utf-8")
    sections = [part.strip() for part in text.split("\n## ")[1:]]
    return sections[1:3]


def bench_embeddings(n: int = 64) -> dict:
    from core.llm.embeddings import EmbeddedE5

    emb = EmbeddedE5()
    emb.embed_query("warm up")
    texts = [f"시그니처 스테이크는 최상급 한우 등심으로 만든 요리입니다. 문장 번호 {i}." * 3 for i in range(n)]
    start = time.perf_counter()
    emb.embed_documents(texts)
    elapsed = time.perf_counter() - start
    start = time.perf_counter()
    for text in texts[:16]:
        emb.embed_query(text)
    query = (time.perf_counter() - start) / 16
    return {"passages": n, "passages_per_s": round(n / elapsed, 1), "query_embed_ms": round(query * 1000, 1)}


def bench_ingestion(settings: Settings) -> dict:
    from core.knowledge.base import KnowledgeBase

    tmp = Path(tempfile.mkdtemp(prefix="rag-bench-"))
    try:
        kb = KnowledgeBase(settings.with_(data_dir=str(tmp)))
        start = time.perf_counter()
        kb.ensure_samples()
        first = time.perf_counter() - start
        start = time.perf_counter()
        kb.ensure_samples()
        again = time.perf_counter() - start
        chunks = sum(kb.info(n)["chunks"] for n in kb.names())
        return {"sample_chunks": chunks, "first_index_s": round(first, 2), "already_indexed_s": round(again, 3)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_chroma(sizes=(10_000,), queries: int = 200, dim: int = 384) -> list[dict]:
    """Query latency of a persistent Chroma collection of n random unit vectors (top-3, cosine)."""
    import chromadb
    import numpy as np

    rows = []
    rng = np.random.default_rng(7)
    for n in sizes:
        tmp = tempfile.mkdtemp(prefix="rag-chroma-")
        try:
            client = chromadb.PersistentClient(path=tmp)
            col = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
            start = time.perf_counter()
            for lo in range(0, n, 5000):
                vecs = rng.standard_normal((min(5000, n - lo), dim)).astype("float32")
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                col.add(ids=[str(i) for i in range(lo, lo + len(vecs))], embeddings=vecs,
                        documents=["x"] * len(vecs), metadatas=[{"source": "bench"}] * len(vecs))
            build = time.perf_counter() - start
            times = []
            for _ in range(queries):
                q = rng.standard_normal(dim).astype("float32")
                q /= np.linalg.norm(q)
                start = time.perf_counter()
                col.query(query_embeddings=[q], n_results=3)
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            rows.append({"chunks": n, "build_s": round(build, 1), "p50_ms": round(statistics.median(times), 2),
                         "p95_ms": round(times[int(0.95 * len(times)) - 1], 2)})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return rows


def bench_render() -> dict:
    """The chat page's render time for a 200-message thread (AppTest, in a subprocess: core has no Streamlit)."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "bench_render.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_all(settings: Settings, large: bool = False, latency: float = LATENCY, only: str = "") -> dict:
    """Every figure; ``only="embedded"`` measures just the embedded chat models (minutes, not seconds)."""
    from benchmarks.overhead import bench_grading, bench_patterns
    from core.knowledge.base import KnowledgeBase
    from core.llm.model_files import EMBEDDED_MODELS

    # its own data directory: benchmark threads stay out of the user's thread list
    settings = settings.with_(data_dir=str(settings.data_path / "bench"))
    KnowledgeBase(settings).ensure_samples()
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {platform.system()}, Python {platform.python_version()}, "
                   f"{__import__('os').cpu_count()} cores",
        "latency_s": latency,
        "embedded_models": [bench_embedded_model(settings, name) for name in EMBEDDED_MODELS],
    }
    if only == "embedded":
        return report
    report.update({
        "patterns": bench_patterns(settings, latency),
        "grading": bench_grading(latency),
        "embeddings": bench_embeddings(),
        "ingestion": bench_ingestion(settings),
        "chroma": bench_chroma((10_000, 100_000) if large else (10_000,)),
        "chat_page_render": bench_render(),
    })
    return report


def render(report: dict) -> str:
    lines = [f"benchmarks {report['date']} on {report['machine']} (injected latency {report['latency_s']} s)", ""]

    def table(title, rows):
        if not rows:
            return
        keys = list(rows[0])
        widths = [max(len(k), *(len(str(r[k])) for r in rows)) for k in keys]
        lines.append(title)
        lines.append("  " + "  ".join(k.ljust(w) for k, w in zip(keys, widths)))
        for r in rows:
            lines.append("  " + "  ".join(str(r[k]).ljust(w) for k, w in zip(keys, widths)))
        lines.append("")

    for model in report["embedded_models"]:
        table(f"embedded chat model {model['model']}", [{k: v for k, v in model.items() if k != "model"}])
    if "patterns" in report:
        table("patterns: wall / (critical-path calls x latency), target <= 1.15", report["patterns"])
        table("grading: concurrent vs one call latency (target <= 1.3) and vs the sequential loop", report["grading"])
        table("embedded embeddings", [report["embeddings"]])
        table("sample corpora ingestion", [report["ingestion"]])
        table("chroma query latency (top-3)", report["chroma"])
        table("chat page render, 200-message thread (AppTest)", [report["chat_page_render"]])
    return "\n".join(lines)


def main(settings: Settings, as_json: bool, large: bool, latency: float = LATENCY, only: str = "") -> int:
    report = run_all(settings, large, latency, only)
    print(json.dumps(report, ensure_ascii=False, indent=2) if as_json else render(report))
    return 0
