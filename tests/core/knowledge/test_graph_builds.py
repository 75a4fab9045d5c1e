"""Graphs before they are asked for: batched extraction with provenance, graphs keyed by chunks and model,
builds at ingest in the background, a Graph RAG question on a graph not ready, shipped sample graphs."""

import importlib.util
import json
import re
import threading
import time
from pathlib import Path

import pytest
from langchain_core.documents import Document

from core.config import load_settings
from core.knowledge import entity_graph as eg
from core.knowledge import graph_builds
from core.knowledge import graph_extraction as gx
from core.knowledge.base import SAMPLES_DIR, KnowledgeBase
from core.prompts import fence
from core.run.runner import run
from core.runtime.context import make_context
from support.fakes import HashEmbeddings
from support.graph_support import PAIRING_Q, Extractor, calls_for
from support.paths import ROOT
from support.scripted import ScriptedChatModel


class NamedExtractor(Extractor):
    """The same extractor under another model's name."""

    model_name: str = "another-model"


def _kb(path: Path) -> KnowledgeBase:
    return KnowledgeBase(load_settings(data_dir=str(path), provider="embedded"), HashEmbeddings())


@pytest.fixture
def kb(tmp_path):
    """The sample wine list in a collection of its own (hash embeddings, real Chroma)."""
    kb = _kb(tmp_path / "data")
    assert not kb.ingest([SAMPLES_DIR / "restaurant_wine.md"], "wine").errors
    eg._cache.clear()
    return kb


def _ask(kb, grader, question=PAIRING_Q, **options):
    ctx = make_context(kb.settings, llm=ScriptedChatModel(replies=["바롤로가 어울립니다."]), grader=grader, kb=kb)
    return run("graph_rag", question, kb.settings, ctx=ctx, source_ids=[options.pop("source", "wine")], **options)


def _load_event(result):
    return next(e for e in result["trace"] if e["node"] == "load_graph")


# ---------------------------------------------------------------- extraction


def test_one_call_reads_several_chunks_and_each_triple_keeps_its_chunk():
    docs = [Document(f"text {i}", metadata={"source": "a.md", "chunk_id": f"id{i}"}, id=f"id{i}") for i in (1, 2, 3)]
    model = ScriptedChatModel(replies=[{"t": [{"c": 2, "s": "Barolo", "r": "grape", "o": "Nebbiolo"},
                                              {"c": 1, "s": "Steak", "r": "price", "o": "₩35,000"},
                                              {"c": 3, "s": "Chablis", "r": "region", "o": "Burgundy"},
                                              {"c": 2, "s": "Barolo", "r": "pairs with", "o": "Steak"}]}])
    graph = eg.nx.MultiDiGraph()
    assert gx.extract_into(graph, model, docs, "c") == []
    (system, human), = [(m[0].content, m[-1].content) for m in model.calls]
    assert system == gx.extraction_system() and "Chunk" not in system  # instructions only: a prefix every call shares
    assert human.index("Chunk 1:") < human.index("text 1") < human.index("Chunk 2:") < human.index("Chunk 3:")
    by_chunk = {}
    for u, v, data in graph.edges(data=True):
        by_chunk.setdefault(data["chunk_id"], set()).add((u, data["relation"], v))
    assert by_chunk == {"id1": {("steak", "price", "₩35,000")}, "id2": {("barolo", "grape", "nebbiolo"),
                                                                       ("barolo", "pairs with", "steak")},
                        "id3": {("chablis", "region", "burgundy")}}


def test_the_schema_allows_only_the_calls_chunk_numbers_and_a_wrong_one_fails_that_call():
    schema = gx.batch_schema(2).model_json_schema()
    triple = schema["$defs"]["Triple"]
    assert triple["properties"]["c"]["enum"] == [1, 2] and set(triple["required"]) == {"c", "s", "r", "o"}
    docs = [Document(f"text {i}", metadata={"chunk_id": f"id{i}"}, id=f"id{i}") for i in (1, 2)]
    wrong = {"t": [{"c": 3, "s": "Barolo", "r": "grape", "o": "Nebbiolo"}]}
    graph = eg.nx.MultiDiGraph()
    errors = gx.extract_into(graph, ScriptedChatModel(replies=[wrong, wrong]), docs, "c")
    assert len(errors) == 1 and errors[0].startswith("id1, id2:") and graph.number_of_edges() == 0


# ---------------------------------------------------------------- keyed by chunks and model


def test_a_stale_stored_graph_is_refused_and_rebuilt(kb, tmp_path):
    first = Extractor()
    _, info = eg.ensure_graph(kb.settings, kb, first, "wine")
    assert info["status"] == "built" and info["ready"]
    old_digest = info["digest"]
    extra = tmp_path / "special.md"
    extra.write_text("# 오늘의 와인\n## 1. 루나 로사 프로세코\n- 포도 품종: 글레라\n- 어울리는 음식: 부라타 샐러드",
                     encoding="utf-8")
    kb.ingest([extra], "wine")
    graph, info = eg.current_graph(kb.settings, kb, "wine", eg.model_label(first))
    assert info["digest"] != old_digest and not info["ready"] and info["status"] == "missing" and len(graph) == 0
    assert json.loads(eg.graph_path(kb.settings, "wine").read_text())["digest"] == old_digest  # still on disk, unused
    again = Extractor()
    graph, info = eg.ensure_graph(kb.settings, kb, again, "wine")
    assert info["status"] == "built" and again.extraction_calls() == calls_for(info["chunks"])
    assert "루나로사프로세코" in graph


def test_a_graph_built_by_another_model_is_refused(kb):
    eg.ensure_graph(kb.settings, kb, Extractor(), "wine")
    other = NamedExtractor()
    _, info = eg.current_graph(kb.settings, kb, "wine", "another-model")
    assert not info["ready"] and info["status"] == "missing"
    _, info = eg.ensure_graph(kb.settings, kb, other, "wine")
    assert info["status"] == "built" and info["model"] == "another-model" and other.extraction_calls() > 0
    eg._cache.clear()
    _, info = eg.current_graph(kb.settings, kb, "wine", "Extractor")  # and now the first model's is gone
    assert not info["ready"]


# ---------------------------------------------------------------- builds in the background


def test_a_background_build_reports_progress_and_stores_the_graph_as_it_grows(kb):
    seen = []

    def stored_while_extracting(messages):
        """The last call waits until the batches before it are stored, and notes what it found."""
        if "knowledge graph" in messages[0].content:
            seen.append("call")
            if len(seen) == calls_for(kb.info("wine")["chunks"]):
                deadline = time.monotonic() + 10
                while (record := eg.stored_graph(kb.settings, "wine")) is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                seen.append((record or {}).get("complete"))
                seen.append(len((record or {}).get("done") or []))
        return 0.0

    grader = Extractor()
    grader.delay = stored_while_extracting
    build = graph_builds.start(kb.settings.with_(max_concurrency=1), kb, grader, "wine")  # one batch at a time
    progress = []
    assert build.wait(lambda done, total: progress.append((done, total)), timeout=60)
    chunks = kb.info("wine")["chunks"]
    assert build.state == "ready" and build.done == build.total == chunks
    assert progress[-1] == (chunks, chunks) and [d for d, _ in progress] == sorted({d for d, _ in progress})
    batches = calls_for(chunks)
    assert seen[batches:] == [False, (batches - 1) * gx.CHUNKS_PER_CALL]  # the earlier batches stored, as partial
    record = eg.stored_graph(kb.settings, "wine")
    assert record["complete"] and record["model"] == "Extractor" and len(record["done"]) == chunks


def test_the_ingest_command_returns_once_the_chunks_are_searchable_and_builds_the_graph_when_asked(
        tmp_path, monkeypatch, capsys):
    import core.cli.common
    import core.knowledge.base
    import core.llm.models
    from core.cli.main import main

    grader = Extractor()
    monkeypatch.setattr(core.llm.models, "get_chat_model", lambda settings, role="main": grader)
    monkeypatch.setattr(core.cli.common, "prepare_model", lambda settings: None)
    monkeypatch.setattr(core.knowledge.base, "get_embeddings", lambda settings: HashEmbeddings())
    monkeypatch.setenv("RAG_GRAPH_AT_INGEST", "1")  # the Knowledge page's switch: the CLI waits only when asked
    data = tmp_path / "data"
    wine = str(SAMPLES_DIR / "restaurant_wine.md")
    assert main(["--data-dir", str(data), "ingest", wine, "--collection", "wine"]) == 0
    out, err = capsys.readouterr()
    assert not (data / "graphs" / "wine.json").exists() and grader.extraction_calls() == 0
    assert "Graph RAG's first question on it starts the build in the background (or add --graph" in err
    assert main(["--data-dir", str(data), "collections", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["wine"]["graph"] == {"state": "none"} and rows["wine"]["chunks"] > 0  # searchable, no graph
    assert main(["--data-dir", str(data), "ingest", wine, "--collection", "wine", "--no-graph"]) == 0  # old flag
    assert main(["--data-dir", str(data), "ingest", wine, "--collection", "wine", "--graph"]) == 0  # indexed: builds
    out, err = capsys.readouterr()
    chunks = json.loads((data / "graphs" / "wine.json").read_text())["chunks"]
    assert "graph wine" in err and f"{chunks}/{chunks}" in err
    assert "graph  wine:" in out and f"from {chunks} chunks (built, Extractor)" in out
    assert grader.extraction_calls() == calls_for(chunks)
    assert main(["--data-dir", str(data), "collections"]) == 0
    lines = capsys.readouterr().out.splitlines()
    line = lines[next(i for i, ln in enumerate(lines) if ln.startswith("wine ")) + 2]  # name, description, graph
    assert line.strip().startswith("graph: ready,") and f"{chunks}/{chunks} chunks read (Extractor)" in line


# ---------------------------------------------------------------- a question on a graph not ready


def test_the_chunk_queue_reads_prioritized_chunks_next_and_says_when_they_are_read():
    docs = [Document(page_content=f"chunk {i}", id=f"c{i}") for i in range(10)]
    queue = gx.ChunkQueue()
    queue.prioritize(["c9"])  # before the build filled it: kept for the fill
    queue.fill(docs)
    assert [d.id for d in queue.take(2)] == ["c9", "c0"]
    queue.prioritize(["c7", "c5", "c0", "missing"])  # c0 is being read, "missing" is not in this build
    assert [d.id for d in queue.take(4)] == ["c5", "c7", "c1", "c2"]  # document order among the first
    read = []
    waiter = threading.Thread(target=lambda: read.append(queue.wait_read(["c5", "c0", "missing"])))
    waiter.start()
    queue.finish([queue_doc for queue_doc in docs if queue_doc.id in ("c9", "c0")])
    waiter.join(0.2)
    assert waiter.is_alive()  # c5 is still being read
    queue.finish([d for d in docs if d.id in ("c5", "c7", "c1", "c2")])
    waiter.join(10)
    assert read == [2]  # c5 and c0 were this build's to read; "missing" never was
    assert queue.wait_read(["c3"], timeout=0.01) == 1  # still pending: the timeout ends the wait
    queue.close()
    assert queue.wait_read(["c3"]) == 1 and queue.take(4) == []  # a closed build keeps nobody waiting


def test_a_question_on_a_graph_being_built_reads_its_own_chunks_first_and_answers_from_what_is_built(tmp_path):
    """Before, the question answered from whatever batches happened to be done (nothing, early on) and found no
    node; now the build reads the chunks the question retrieves next, and the question waits for those alone."""
    settings = load_settings(data_dir=str(tmp_path / "data"), provider="embedded").with_(
        chunk_size=300, max_concurrency=1)  # many small chunks, read one batch at a time
    kb = KnowledgeBase(settings, HashEmbeddings())
    assert not kb.ingest([SAMPLES_DIR / "restaurant_wine.md"], "wine").errors
    chunks = kb.info("wine")["chunks"]
    assert calls_for(chunks) > 3  # so most of the build is still to do when the question is answered
    eg._cache.clear()
    grader = Extractor(entities=["시그니처 스테이크"])
    prioritized, release = threading.Event(), threading.Event()
    wanted: list[str] = []  # the texts of the chunks the question asked to have read first
    calls: list[str] = []

    def delay(messages):
        if "knowledge graph" not in messages[0].content:
            return 0.0
        human = messages[-1].content
        calls.append(human)
        if len(calls) == 1:
            prioritized.wait(30)  # the first batch is in flight when the question comes
        elif not all(text in wanted for text in re.findall(r"Chunk \d+:\n(.*?)(?=\n\nChunk \d+:\n|\Z)", human, re.S)):
            release.wait(30)  # any batch but the question's waits: the build is still running when it answers
        return 0.0

    grader.delay = delay
    build = graph_builds.start(settings, kb, grader, "wine")  # as an ingest would
    prioritize = build.queue.prioritize

    def prioritize_then_go(ids):
        wanted.extend(fence(t) for t in kb.chunk_texts("wine", ids).values())
        prioritize(ids)
        prioritized.set()

    build.queue.prioritize = prioritize_then_go
    result = _ask(kb, grader)
    event = _load_event(result)
    assert event["verdict"] == "not_ready" and "chunk(s) the question retrieves were read first" in event["reason"]
    assert result["termination_reason"] == "answered", result["termination_message"]
    relations = next(e for e in result["trace"] if e["node"] == "collect_relations")["relations"]
    assert any("실버 크릭" in line for line in relations), relations  # read off the question's chunks
    assert result["answer"].endswith("'그래프 기다리기'(graph_wait)를 켜고 물어 보세요.")  # asked in Korean
    assert build.running and build.done < chunks  # the rest is still being built
    release.set()
    assert build.wait(timeout=60) and build.state == "ready"
    assert grader.extraction_calls() == calls_for(chunks)  # every chunk read once
    result = _ask(kb, grader)
    assert _load_event(result)["verdict"] == "cached" and result["termination_reason"] == "answered"
    assert "graph_wait" not in result["answer"]


def test_waiting_follows_the_running_build_to_its_end(kb, monkeypatch):
    grader = Extractor(entities=["시그니처 스테이크"])
    release = threading.Event()
    grader.delay = lambda messages: (release.wait(30) and 0.0) if "knowledge graph" in messages[0].content else 0.0
    build = graph_builds.start(kb.settings, kb, grader, "wine")  # as an ingest would
    wait = graph_builds.GraphBuild.wait

    def wait_then_release(self, progress=None, timeout=None):
        assert self is build and self.running  # the question joins the build under way
        release.set()
        return wait(self, progress, timeout)

    monkeypatch.setattr(graph_builds.GraphBuild, "wait", wait_then_release)
    result = _ask(kb, grader, graph_wait=True)
    assert _load_event(result)["verdict"] == "built" and result["termination_reason"] == "answered"
    assert grader.extraction_calls() == calls_for(kb.info("wine")["chunks"])  # one build, not two


# ---------------------------------------------------------------- shipped sample graphs


def _script():
    spec = importlib.util.spec_from_file_location("build_sample_graphs", ROOT / "scripts" / "build_sample_graphs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_shipped_graph_with_the_right_digest_and_model_is_used_and_nothing_is_extracted(tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(eg, "SHIPPED_GRAPHS", shipped)
    builder = Extractor()
    logged = []
    infos = _script().build_sample_graphs(builder, shipped, ["restaurant_wine"], _kb(tmp_path / "build"), logged.append)
    assert [i["collection"] for i in infos] == ["restaurant_wine"] and (shipped / "restaurant_wine.json").is_file()
    assert builder.extraction_calls() == calls_for(infos[0]["chunks"]) and "restaurant_wine:" in logged[-1]
    eg._cache.clear()

    fresh = _kb(tmp_path / "fresh")
    fresh.ensure_samples()
    grader = Extractor(entities=["시그니처 스테이크"])
    result = _ask(fresh, grader, source="restaurant_wine")
    assert _load_event(result)["verdict"] == "shipped" and result["termination_reason"] == "answered"
    assert grader.extraction_calls() == 0 and eg.graph_path(fresh.settings, "restaurant_wine").is_file()

    record = json.loads((shipped / "restaurant_wine.json").read_text())
    for change in ({"digest": "0" * 16}, {"model": "another-model"}):
        (shipped / "restaurant_wine.json").write_text(json.dumps({**record, **change}), encoding="utf-8")
        eg._cache.clear()
        other = _kb(tmp_path / f"fresh-{next(iter(change))}")
        other.ensure_samples()
        _, info = eg.current_graph(other.settings, other, "restaurant_wine", "Extractor")
        assert info["status"] == "missing" and not info["ready"], change
        assert not eg.graph_path(other.settings, "restaurant_wine").exists()


# ---------------------------------------------------------------- the benchmark's plumbing


def test_the_extraction_benchmark_counts_tokens_per_chunk_for_both_formats(kb):
    from benchmarks import graph_extraction as bench
    from support.graph_support import read_batch, read_wine_chunk

    def respond(messages):
        system, human = messages[0].content, messages[-1].content
        return read_wine_chunk(human) if system == bench.OLD_SYSTEM else read_batch(human)

    rows = bench.compare(ScriptedChatModel(responder=respond), kb, ["wine"])
    chunks = kb.info("wine")["chunks"]
    old, new = rows
    assert (old["chunks"], old["calls"], new["calls"]) == (chunks, chunks, calls_for(chunks))
    assert old["tokens_per_chunk"] == 15.0  # the scripted model reports 10 prompt + 5 completion tokens a call
    assert new["tokens_per_chunk"] == round(15 * calls_for(chunks) / chunks, 1) and new["vs_old"] < 0.5
    assert new["triples_per_chunk"] == old["triples_per_chunk"] > 0  # the same facts read either way
