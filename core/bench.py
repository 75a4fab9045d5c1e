"""Benchmarks: graph overhead against injected model latency, grading concurrency, the offline stack.

``python -m core bench [--json] [--large]``. Figures are printed, never asserted: a benchmark
is a measurement, and docs/BENCHMARKS.md records them with the date and machine.
"""

from __future__ import annotations

import json
import platform
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda

from core import graders
from core.config import Settings
from core.tools import new_call

LATENCY = 1.0  # seconds per injected model call: a typical hosted or local model call


class LatencyModel(BaseChatModel):
    """A measuring instrument, not a model: sleeps a fixed latency per call, returns a preset reply.

    Structured output returns the happy-path verdict for the schema (so each pattern takes its
    shortest accepted path). With tools bound, the first call of a turn calls the first tool and
    the call after its result answers; under the ReAct text protocol (``stop`` at "Observation:")
    it writes one Action, then a Final Answer. Plain calls return a short cited sentence. Call
    intervals are kept, so the critical path (calls that could not overlap) can be counted.
    """

    latency: float = LATENCY
    verdicts: dict = {}
    answer: str = "시그니처 스테이크는 ₩35,000입니다 [1]."
    react_tool: str = "japan_ict"  # the tool a ReAct text reply names
    query: str = "스테이크 가격"  # what its tool calls search for

    def model_post_init(self, __context) -> None:
        object.__setattr__(self, "_intervals", [])
        object.__setattr__(self, "_lock", threading.Lock())

    @property
    def _llm_type(self) -> str:
        return "latency-bench"

    def _sleep(self) -> None:
        start = time.perf_counter()
        time.sleep(self.latency)
        with self._lock:
            self._intervals.append((start, time.perf_counter()))

    def _reply(self, messages, stop, schema_name: str, tool_names: list[str] | None) -> AIMessage:
        if schema_name:
            return AIMessage(json.dumps(self.verdicts[schema_name], ensure_ascii=False))
        if tool_names:  # native tool calling: call a tool once, answer once its result is back
            if any(m.type == "tool" for m in messages):
                return AIMessage(self.answer)
            return AIMessage("", tool_calls=[new_call(tool_names[0], self.query)])
        if stop and any("Observation" in s for s in stop):  # the ReAct text protocol
            if any(m.type == "human" and str(m.content).startswith("Observation:") for m in messages):
                return AIMessage(f"Thought: the report answers it.\nFinal Answer: {self.answer}")
            return AIMessage(f"Thought: search the report.\nAction: {self.react_tool}\nAction Input: {self.query}")
        return AIMessage(self.answer)

    def _generate(self, messages, stop=None, run_manager=None, schema_name: str = "",
                  tool_names: list[str] | None = None, **kwargs) -> ChatResult:
        self._sleep()
        message = self._reply(messages, stop, schema_name, tool_names)
        message.usage_metadata = {"input_tokens": 100, "output_tokens": 12, "total_tokens": 112}
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools, **kwargs):
        names = [t.get("function", t).get("name") if isinstance(t, dict) else getattr(t, "name", str(t)) for t in tools]
        return self.bind(tool_names=names)

    def with_structured_output(self, schema, **kwargs):
        parse = RunnableLambda(lambda message: schema.model_validate_json(message.content))
        return self.bind(schema_name=schema.__name__) | parse

    def critical_calls(self) -> int:
        """The longest run of calls made one after another (none overlapping the next).

        Concurrent calls count once; a worker pool of c over n calls counts ceil(n / c). Wall time
        can never be below this many latencies, so the ratio measures everything else the run costs.
        """
        chain, end = 0, float("-inf")
        for start, stop in sorted(self._intervals, key=lambda interval: interval[1]):  # earliest end first
            if start >= end:
                chain += 1
                end = stop
        return chain


HAPPY = {
    "Route": {"route": "restaurant_menu"}, "Sources": {"sources": ["restaurant_menu", "restaurant_wine"]},
    "Complexity": {"complexity": "compare"},
    "SubQuestions": {"questions": ["스테이크 가격은?", "파스타 가격은?"]}, "RetrievalNeed": {"retrieve": "yes"},
    "Relevance": {"relevant": "yes"}, "CragGrade": {"grade": "ambiguous", "confidence": 0.6},
    "Grounded": {"grounded": "yes"}, "Usefulness": {"useful": "yes", "score": 5},
    "Rewrite": {"question": "스테이크 가격"},
    "Extraction": {"relations": [{"source": "시그니처 스테이크", "relation": "가격", "target": "₩35,000"}]},
    "QuestionEntities": {"entities": ["시그니처 스테이크"]},
}
MENU_QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"
POLICY_QUESTION = "일본의 디지털 정책에서 AI 관련 내용은 무엇인가요?"
# (pattern, run options, question): every pattern on its shortest accepted path
PATTERN_CASES = [
    ("basic", {}, MENU_QUESTION), ("adaptive", {}, MENU_QUESTION),
    ("adaptive", {"variant": "complexity"}, MENU_QUESTION), ("self_rag", {}, MENU_QUESTION),
    ("corrective", {}, MENU_QUESTION), ("agentic", {}, MENU_QUESTION), ("react", {}, POLICY_QUESTION),
    ("react_native", {}, POLICY_QUESTION), ("graph_rag", {"source_ids": ["restaurant_menu"]}, MENU_QUESTION),
]


def _bench_web(query):
    from core.web_search import WebResult

    return WebResult("ok", [Document("Steak is 35,000 won.", metadata={"source": "https://example.org",
                                                                       "url": "https://example.org", "title": "w"})],
                     query=query)


def _measure(pattern_id: str, question: str, settings: Settings, model: LatencyModel, ctx, options: dict) -> dict:
    from core.runner import run

    model._intervals.clear()
    start = time.perf_counter()
    result = run(pattern_id, question, settings, ctx=ctx, **options)
    wall = time.perf_counter() - start
    critical = model.critical_calls()
    return {"llm_calls": result.get("llm_calls", 0), "critical_calls": critical, "wall_s": round(wall, 3),
            "ratio": round(wall / (max(critical, 1) * model.latency), 3),
            "termination": result.get("termination_reason") or result.get("error", "")}


def bench_patterns(settings: Settings, latency: float = LATENCY, cases=PATTERN_CASES) -> list[dict]:
    """Per pattern: wall time / (critical-path LLM calls x latency).

    A warm-up run first pays the one-off costs (imports, caches; Graph RAG's graph extraction,
    which is reported as its own row), then the measured run asks the same question in a new thread.
    """
    from core import entity_graph
    from core.context import make_context

    rows = []
    for pattern_id, options, question in cases:
        model = LatencyModel(latency=latency, verdicts=HAPPY)
        ctx = make_context(settings, llm=model, grader=model, web=_bench_web)
        name = pattern_id + (f" ({options['variant']})" if "variant" in options else "")
        if pattern_id == "graph_rag":  # measure the one-off graph build, then answer from the stored graph
            for collection in options.get("source_ids", []):
                entity_graph.drop_graph(settings, collection)
            rows.append({"pattern": f"{name} (first run: builds the graph)",
                         **_measure(pattern_id, question, settings, model, ctx, options)})
        else:
            _measure(pattern_id, question, settings, model, ctx, options)
        rows.append({"pattern": name, **_measure(pattern_id, question, settings, model, ctx, options)})
    return rows


def bench_grading(latency: float = LATENCY, max_concurrency: int = 8) -> list[dict]:
    """Grading n documents concurrently vs one call latency and vs the one-by-one loop."""
    rows = []
    for n in (4, 8):
        docs = [Document(f"문서 {i}: 시그니처 스테이크 ₩35,000") for i in range(n)]
        model = LatencyModel(latency=latency, verdicts=HAPPY)
        start = time.perf_counter()
        graders.grade_documents(model, "스테이크 가격?", docs, max_concurrency)
        concurrent = time.perf_counter() - start
        start = time.perf_counter()
        for doc in docs:  # the specification's loop, one call after another
            graders.grade_documents(model, "스테이크 가격?", [doc], 1)
        sequential = time.perf_counter() - start
        rows.append({"documents": n, "concurrent_s": round(concurrent, 3), "vs_one_call": round(concurrent / latency, 3),
                     "sequential_s": round(sequential, 3), "speedup": round(sequential / concurrent, 2)})
    return rows


def bench_embedded_model() -> dict:
    """Load time, time to first token and decode speed of the embedded chat model."""
    from core import embedded_llm

    start = time.perf_counter()
    path = embedded_llm.embedded_model_path()
    assemble = time.perf_counter() - start
    llama = embedded_llm.get_llama(path)
    load = embedded_llm.LOAD_SECONDS.get(str(path), 0.0)
    model = embedded_llm.EmbeddedChatModel(max_tokens=128)
    start, first = time.perf_counter(), None
    for chunk in model.stream("스테이크에 대해 설명해 주세요."):
        if chunk.content:
            first = time.perf_counter() - start
            break
    # decode speed on plain continuation: the chat transcript stops early on a base model
    start, tokens, first_raw = time.perf_counter(), 0, 0.0
    with embedded_llm._llama_lock:
        for _part in llama.create_completion("The history of the restaurant began", max_tokens=128, stream=True,
                                            temperature=0.0):
            tokens += 1
            first_raw = first_raw or time.perf_counter() - start
    decode = (tokens - 1) / max(time.perf_counter() - start - first_raw, 1e-9)
    start = time.perf_counter()
    model.with_structured_output(graders.Relevance).invoke("Question: 스테이크 가격? Document: 스테이크 ₩35,000")
    grade = time.perf_counter() - start
    del llama
    return {"assemble_check_s": round(assemble, 2), "load_s": round(load, 2), "first_token_s": round(first or 0, 3),
            "decoded_tokens": tokens, "tokens_per_s": round(decode, 1), "structured_grade_s": round(grade, 2)}


def bench_embeddings(n: int = 64) -> dict:
    from core.embeddings import EmbeddedE5

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
    from core.knowledge import KnowledgeBase

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

    script = Path(__file__).resolve().parent.parent / "scripts" / "bench_render.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_all(settings: Settings, large: bool = False, latency: float = LATENCY) -> dict:
    from core.knowledge import KnowledgeBase

    # its own data directory: benchmark threads stay out of the user's thread list
    settings = settings.with_(data_dir=str(settings.data_path / "bench"))
    KnowledgeBase(settings).ensure_samples()
    return {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {platform.system()}, Python {platform.python_version()}, "
                   f"{__import__('os').cpu_count()} cores",
        "latency_s": latency,
        "patterns": bench_patterns(settings, latency),
        "grading": bench_grading(latency),
        "embedded_model": bench_embedded_model(),
        "embeddings": bench_embeddings(),
        "ingestion": bench_ingestion(settings),
        "chroma": bench_chroma((10_000, 100_000) if large else (10_000,)),
        "chat_page_render": bench_render(),
    }


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

    table("patterns: wall / (critical-path calls x latency), target <= 1.15", report["patterns"])
    table("grading: concurrent vs one call latency (target <= 1.3) and vs the sequential loop", report["grading"])
    table("embedded chat model", [report["embedded_model"]])
    table("embedded embeddings", [report["embeddings"]])
    table("sample corpora ingestion", [report["ingestion"]])
    table("chroma query latency (top-3)", report["chroma"])
    table("chat page render, 200-message thread (AppTest)", [report["chat_page_render"]])
    return "\n".join(lines)


def main(settings: Settings, as_json: bool, large: bool, latency: float = LATENCY) -> int:
    report = run_all(settings, large, latency)
    print(json.dumps(report, ensure_ascii=False, indent=2) if as_json else render(report))
    return 0
