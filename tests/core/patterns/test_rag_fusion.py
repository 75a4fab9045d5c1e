"""RAG-Fusion: rewrites, one search each, reciprocal rank fusion, the answer; each branch and the call bound."""

import shutil

import pytest
from langchain_core.documents import Document

from core.patterns import get_pattern
from core.patterns.rag_fusion import QUERY_REWRITES, RRF_K, clean_queries, reciprocal_rank_fusion
from core.run.runner import run
from core.runtime.context import make_context
from support.helpers import kinds, run_script, web_down
from support.scripted import ScriptedChatModel
from support.workflow_script import Script
from ui.i18n.trace import to_korean
from ui.shell.page_index import page_for

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"
REWRITES = ["시그니처 스테이크 가격", "스테이크 메뉴 가격표", "등심 스테이크 얼마"]


@pytest.fixture
def s(sample_settings):
    return sample_settings.with_(k=2)


@pytest.fixture
def own(sample_data_dir, tmp_path):
    """A private copy of the indexed samples, for a test that writes threads and forks of its own."""
    from core.config import load_settings

    shutil.copytree(sample_data_dir / "chroma", tmp_path / "data" / "chroma")
    return load_settings(data_dir=str(tmp_path / "data"), provider="embedded").with_(k=2)


def _doc(key: str) -> Document:
    return Document(page_content=f"text {key}", metadata={"chunk_id": key})


def _keys(fused) -> list[str]:
    return [doc.metadata["chunk_id"] for doc, _, _ in fused]


def test_reciprocal_rank_fusion_sums_one_over_k_plus_rank():
    a, b, c, d = map(_doc, "abcd")
    fused = reciprocal_rank_fusion([[a, b, c], [b, c, d], [c]])
    assert _keys(fused) == ["c", "b", "a", "d"]  # found by more searches beats first in one search
    scores = {doc.metadata["chunk_id"]: (score, ranks) for doc, score, ranks in fused}
    assert scores["c"] == (pytest.approx(1 / 63 + 1 / 62 + 1 / 61), [3, 2, 1])
    assert scores["b"] == (pytest.approx(1 / 62 + 1 / 61), [2, 1, None])
    assert scores["a"] == (pytest.approx(1 / (RRF_K + 1)), [1, None, None])
    assert scores["d"] == (pytest.approx(1 / 63), [None, 3, None])


def test_fusion_ties_keep_first_seen_order_and_a_repeat_in_one_list_counts_once():
    x, y = _doc("x"), _doc("y")
    assert _keys(reciprocal_rank_fusion([[x], [y]])) == ["x", "y"]
    assert _keys(reciprocal_rank_fusion([[y], [x]])) == ["y", "x"]
    [(_, score, ranks)] = reciprocal_rank_fusion([[x, x]])
    assert ranks == [1] and score == pytest.approx(1 / 61)
    assert reciprocal_rank_fusion([]) == [] and reciprocal_rank_fusion([[], []]) == []


def test_queries_are_the_question_then_distinct_cleaned_rewrites_capped():
    written = ["1. Query: 스테이크  가격", "스테이크 가격", STEAK, "- 와인", "c", "d", "e"]
    assert clean_queries(STEAK, written) == [STEAK, "스테이크 가격", "와인", "c"][: QUERY_REWRITES + 1]


def test_each_rewrite_is_searched_fused_by_rank_and_answered_with_citations(s):
    script = Script(fusion={"queries": REWRITES}, answer="₩35,000입니다 [1].")
    r = run_script("rag_fusion", STEAK, s, script)
    assert r["path"] == ["contextualize", "write_queries", "search_queries", "fuse_rankings", "generate"]
    assert r["termination_reason"] == "answered" and r["termination_message"] == "answered from 2 fused document(s)"
    assert [e["verdict"] for e in kinds(r, "rewrite")] == REWRITES
    searches = [e for e in kinds(r, "tool") if e["grader"] == "retriever"]
    assert [e["reason"] for e in searches] == [STEAK, *REWRITES]  # one search per query, the question first
    # the fusion's order is RRF over the searches' ranked lists, as the trace recorded them
    lists = [[_doc(ref["chunk_id"]) for ref in e["documents"]] for e in searches]
    expected = _keys(reciprocal_rank_fusion(lists))[:2]
    fused = [e for e in kinds(r, "verdict") if e["grader"] == "rrf"]
    assert [e["target"]["chunk_id"] for e in fused] == expected
    assert [e["verdict"] for e in fused] == ["fused rank 1", "fused rank 2"] and all(len(e["ranks"]) == 4 for e in fused)
    assert fused[0]["score"] >= fused[1]["score"] > 0
    prompt = script.prompts["answer"][0][0].content
    assert "[1]" in prompt and "[2]" in prompt and "[3]" not in prompt  # the answer reads the fused top k only
    assert len(r["sources"]) == 2 and r["answer"].endswith("[1].")
    assert script.log == ["fusion", "answer"] and r["llm_calls"] == 2


def test_an_unreadable_rewrite_falls_back_to_the_question_alone(s):
    script = Script(fusion="{not json", answer="₩35,000 [1].")
    r = run_script("rag_fusion", STEAK, s, script)
    [fallback] = kinds(r, "error")
    assert fallback["node"] == "write_queries" and "searching with the question only" in fallback["reason"]
    assert [e["reason"] for e in kinds(r, "tool")] == [STEAK]
    assert r["termination_reason"] == "answered" and script.count("fusion") == 2  # one retry, then the fallback


def test_nothing_found_ends_without_an_answer_call(s):
    script = Script(fusion={"queries": REWRITES})
    model = ScriptedChatModel(responder=script)
    ctx = make_context(s, llm=model, grader=model, web=web_down)
    ctx.search = lambda collections, query, k=None: ([], [])  # every collection empty for every query
    r = run("rag_fusion", STEAK, s, ctx=ctx)
    assert r["termination_reason"] == "no_relevant_documents" and "찾지 못해" in r["answer"]
    assert script.count("answer") == 0 and r["sources"] == []


def test_a_hostile_model_on_a_follow_up_stays_within_the_bound(s):
    first = run_script("rag_fusion", STEAK, s, Script(fusion={"queries": REWRITES}, answer="₩35,000 [1]."))
    script = Script(contextualize="와인 가격은 얼마인가요?", fusion={"queries": ["a", "b", "c", "d", "e"]},
                    answer="모르겠습니다.")
    r = run_script("rag_fusion", "와인은요?", s, script, thread_id=first["thread_id"])
    bound = get_pattern("rag_fusion").max_llm_calls(s)
    assert script.log == ["contextualize", "fusion", "fusion", "answer"]  # too many queries fail the schema twice
    assert len(script.log) == bound == r["llm_calls"] and r["error"] is None


def test_review_shows_the_fused_documents_before_any_answer(s):
    script = Script(fusion={"queries": REWRITES}, answer="₩35,000 [1].")
    paused = run_script("rag_fusion", STEAK, s, script, review=True)
    assert paused["interrupted"] and paused["interrupt"]["node"] == "review_documents"
    fused = [e["target"]["chunk_id"] for e in kinds(paused, "verdict") if e["grader"] == "rrf"]
    assert [d["id"] for d in paused["interrupt"]["documents"]] == fused and script.count("answer") == 0


def test_it_is_listed_with_a_page_and_reads_in_korean():
    pattern = get_pattern("rag_fusion")
    assert page_for("rag_fusion") == "pages/2_RAG_Fusion.py" and pattern.supports_review
    assert to_korean("answered from 2 fused document(s)") == "융합한 문서 2개로 답했습니다"
    assert to_korean("ranks in each search: 1, -, 3") == "검색별 순위: 1, -, 3"
    assert to_korean(f"reciprocal rank fusion (k={RRF_K}) of 4 ranked list(s)") == "순위 목록 4개의 순위 역수 융합 (k=60)"


def test_what_if_the_model_had_written_other_queries(own):
    s = own  # the shared session directory saw a sqlite disk I/O error here in full runs
    from core.studio.fork import fork
    from core.studio.steps import turn_steps

    script = Script(fusion={"queries": REWRITES}, answer="₩35,000 [1].")
    original = run_script("rag_fusion", STEAK, s, script)
    [step] = [st for st in turn_steps(s, original["thread_id"])["steps"] if st["node"] == "write_queries"]
    assert step["editable"]["queries"] == {"kind": "texts", "value": [STEAK, *REWRITES]}
    model = ScriptedChatModel(responder=script)
    forked = fork(s, original["thread_id"], step["n"], {"queries": ["하우스 와인 가격"]},
                  ctx=make_context(s, llm=model, grader=model, web=web_down))
    assert forked["error"] is None and forked["path"][-3:] == ["search_queries", "fuse_rankings", "generate"]
    assert [e["reason"] for e in kinds(forked, "tool")] == ["하우스 와인 가격"]  # only the edited query was searched
