"""Hybrid retrieval: Kiwi keyword tokens, the keyword index's life with its collection, RRF, the CLI, teams."""

import json
import shutil

import pytest
from langchain_core.documents import Document

from core.cli.main import main as cli_main
from core.config import Settings
from core.knowledge import hybrid, keyword_index
from core.knowledge.base import KnowledgeBase
from core.knowledge.korean_tokens import tokens
from support.fakes import HashEmbeddings

MENU_V1 = """# 메뉴 안내

## 파스타
트러플 크림 파스타의 가격은 28,000원입니다. 블랙 트러플을 갈아 올립니다.

## 스테이크
시그니처 스테이크는 35,000원이며 한우 채끝을 숯불에 굽습니다.
"""
MENU_V2 = MENU_V1.replace("블랙 트러플을 갈아 올립니다.", "화이트 트러플 오일을 뿌립니다.")
NOTES = """# 실행 설정

## 재귀 한도
recursion_limit의 기본값은 25가 아니라 10007입니다. generate_with_counter 함수가 호출 횟수를 셉니다.
"""


# ---------------------------------------------------------------- tokens


def test_korean_particles_fall_away_and_the_noun_remains():
    for sentence in ("메뉴의 가격을 알려주세요", "메뉴는 매일 바뀝니다", "메뉴를 추천해 주세요"):
        assert tokens(sentence)[0] == "메뉴", sentence
    assert "가격" in tokens("메뉴의 가격을 알려주세요")
    assert tokens("예쁜 꽃이 피었습니다") == ["예쁘", "꽃", "피"]  # adjective and verb stems, not their endings


def test_identifiers_and_numbers_stay_whole():
    assert tokens("generate_with_counter 함수가 5,000원을 반환했다") == ["generate_with_counter", "함수", "5000", "반환"]
    assert tokens("recursion_limit의 기본값은?") == ["recursion_limit", "기본", "값"]
    assert "v1.2.3" in tokens("버전 v1.2.3에서 RAG_RETRIEVAL=hybrid 설정이 생겼다")
    assert "rag_retrieval" in tokens("버전 v1.2.3에서 RAG_RETRIEVAL=hybrid 설정이 생겼다")


def test_text_without_hangul_gets_the_plain_tokenizer():
    assert tokens("How does generate_with_counter work in v1.2.3?") == ["generate_with_counter", "work", "v1.2.3"]
    assert tokens("Café crème: 5,000 won") == ["café", "crème", "5000", "won"]


# ---------------------------------------------------------------- fusion


def test_rrf_orders_by_the_sum_of_reciprocal_ranks():
    fused = hybrid.rrf([["a", "b", "c"], ["c", "a", "d"]], k=60)
    assert [key for key, _ in fused] == ["a", "c", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[3][1] == pytest.approx(1 / 63)
    # a tie keeps the first list's order, so the same lists always fuse the same way
    assert [key for key, _ in hybrid.rrf([["x", "y"], ["y", "x"]])] == ["x", "y"]
    assert [key for key, _ in hybrid.rrf([["x"], ["y"]], k=1)] == ["x", "y"]


def test_a_weighted_list_moves_the_fusion_less():
    dense, keyword = ["answer", "b", "c", "d"], ["d", "c"]
    assert [key for key, _ in hybrid.rrf([dense, keyword], k=20)] == ["d", "c", "answer", "b"]
    weighted = dict(hybrid.rrf([dense, keyword], k=20, weights=[1.0, 0.1]))
    assert weighted["d"] == pytest.approx(1 / 24 + 0.1 / 21) and weighted["answer"] == pytest.approx(1 / 21)
    assert sorted(weighted, key=lambda key: -weighted[key]) == ["c", "answer", "d", "b"]
    assert [key for key, _ in hybrid.rrf([dense, keyword], weights=[1.0, 0.0])] == dense


def test_the_keyword_weight_is_the_share_of_the_query_tokens_the_keyword_list_matched():
    def doc(*terms):
        return Document("x", metadata={"matched_terms": list(terms)})

    tokens = ["wine", "sommelier", "signature", "steak"]
    assert hybrid.keyword_weight(tokens, [doc("signature", "steak"), doc("steak")]) == 0.5
    assert hybrid.keyword_weight(tokens + ["steak"], [doc("wine", "sommelier", "signature", "steak")]) == 1.0
    assert hybrid.keyword_weight(tokens, []) == 0.0
    assert hybrid.keyword_weight([], [doc("steak")]) == 0.0


def test_unknown_modes_fall_back_to_the_default():
    assert [hybrid.retrieval_mode(m) for m in ("dense", " Keyword ", "bm25", None)] == ["dense", "keyword", "hybrid",
                                                                                        "hybrid"]
    assert hybrid.DEFAULT_MODE == Settings().retrieval == "hybrid"


# ---------------------------------------------------------------- the index and its collection


@pytest.fixture
def kb(settings):
    return KnowledgeBase(settings, HashEmbeddings())


def _write(folder, name, text):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _stored(kb, collection):
    return json.loads(keyword_index.index_path(kb.settings.data_path, collection).read_text(encoding="utf-8"))


def _keyword_sources(kb, collection, query):
    found = hybrid.search(kb, [collection], query, 5, "keyword")
    return [(d.metadata["source"], d.metadata["matched_terms"]) for d in found.documents]


def test_ingest_builds_the_index_delete_and_reingest_update_it(kb, tmp_path):
    kb.ingest([_write(tmp_path, "menu.md", MENU_V1), _write(tmp_path, "notes.md", NOTES)], "docs")
    stored = _stored(kb, "docs")
    assert stored["digest"] == keyword_index.ids_digest(kb.chunk_ids("docs"))
    assert set(stored["tokens"]) == set(kb.chunk_ids("docs"))
    # "세나요" and "셉니다" share the stem 세: verbs match across their endings too
    assert _keyword_sources(kb, "docs", "generate_with_counter는 무엇을 세나요?") == [("notes.md",
                                                                                   ["generate_with_counter", "세"])]
    assert _keyword_sources(kb, "docs", "블랙 트러플")[0] == ("menu.md", ["블랙", "트러플"])

    kb.ingest([_write(tmp_path, "menu.md", MENU_V2)], "docs")  # re-indexing a changed file
    assert _keyword_sources(kb, "docs", "블랙") == []
    assert _keyword_sources(kb, "docs", "화이트 오일")[0] == ("menu.md", ["오일", "화이트"])
    assert set(_stored(kb, "docs")["tokens"]) == set(kb.chunk_ids("docs"))

    kb.delete_source("docs", "notes.md")
    assert _keyword_sources(kb, "docs", "generate_with_counter") == []
    assert set(_stored(kb, "docs")["tokens"]) == set(kb.chunk_ids("docs"))
    kb.delete_collection("docs")
    assert not keyword_index.index_path(kb.settings.data_path, "docs").exists()


def test_an_update_tokenises_only_the_new_chunks_and_reindex_keeps_the_index(kb, tmp_path, monkeypatch):
    kb.ingest([_write(tmp_path, "menu.md", MENU_V1)], "docs")
    seen = []
    real = keyword_index.korean_tokens.tokens
    monkeypatch.setattr(keyword_index.korean_tokens, "tokens", lambda text: seen.append(text) or real(text))
    kb.ingest([_write(tmp_path, "notes.md", NOTES)], "docs")
    assert len(seen) == 1 and "recursion_limit" in seen[0]
    digest = _stored(kb, "docs")["digest"]
    other = KnowledgeBase(kb.settings, HashEmbeddings(model_id="test:other"))
    assert other.reindex("docs") == len(kb.chunk_ids("docs"))
    assert _stored(kb, "docs")["digest"] == digest and len(seen) == 1  # same chunks: nothing tokenised again
    assert _keyword_sources(other, "docs", "recursion_limit 기본값")[0][0] == "notes.md"


def test_a_search_notices_chunks_written_behind_its_back(kb, tmp_path):
    """Written straight to Chroma, by no KnowledgeBase: the chunk count differs, the index follows."""
    kb.ingest([_write(tmp_path, "menu.md", MENU_V1)], "docs")
    assert _keyword_sources(kb, "docs", "트러플")  # cached in memory now
    ids = [i for i in kb.chunk_ids("docs") if "트러플" in kb.chunk_texts("docs", [i])[i]]
    kb.client.get_collection("docs").delete(ids=ids)  # straight to Chroma: no hook of ours ran
    assert _keyword_sources(kb, "docs", "트러플") == []


def test_hybrid_results_carry_every_rank(kb, tmp_path):
    kb.ingest([_write(tmp_path, "menu.md", MENU_V1), _write(tmp_path, "notes.md", NOTES)], "docs")
    found = hybrid.search(kb, ["docs"], "recursion_limit 기본값", 3, "hybrid")
    top = found.documents[0]
    assert top.metadata["source"] == "notes.md" and top.metadata["retrieval"] == "hybrid"
    assert top.metadata["keyword"]["rank"] == 1 and top.metadata["fused"]["rank"] == 1
    assert top.metadata["dense"]["rank"] >= 1 and -1 <= top.metadata["dense"]["score"] <= 1
    assert top.metadata["score"] == top.metadata["fused"]["score"]
    assert [d.metadata["fused"]["rank"] for d in found.documents] == list(range(1, len(found.documents) + 1))
    dense_only = hybrid.search(kb, ["docs"], "recursion_limit 기본값", 3, "dense")
    assert all("keyword" not in d.metadata and "fused" not in d.metadata for d in dense_only.documents)
    assert dense_only.query_tokens == []  # dense mode never calls Kiwi


# ---------------------------------------------------------------- several collections searched together

# "spicy" is in most menu chunks but one of three wine chunks: each collection's own BM25 finds it common in
# the menu and rare in the wine list, so the wine chunk with that one word outscored the menu chunks with both
MENU_CHUNKS = {"m1": "spicy arrabbiata pasta with chili", "m2": "spicy shrimp pasta with garlic",
               "m3": "spicy vodka pasta with cream", "m4": "spicy lamb skewers with cumin",
               "m5": "truffle cream pasta with mushrooms"}
WINE_CHUNKS = {"w1": "a white wine for spicy dishes", "w2": "a red wine for grilled steak",
               "w3": "a sweet wine for dessert"}


def _index(name, chunks):
    return keyword_index.KeywordIndex.build(name, name, {i: tokens(t) for i, t in chunks.items()})


def test_several_collections_are_scored_as_one_corpus():
    menu, wine = _index("menu", MENU_CHUNKS), _index("wine", WINE_CHUNKS)
    query = tokens("spicy pasta")
    own_scores = {h.id: h.score for index in (menu, wine) for h in index.search(query, 10)}
    assert own_scores["w1"] > own_scores["m1"]  # the premise: raw scores of separate indexes favour the wine chunk

    found = keyword_index.search_collections([menu, wine], query, 10)
    union = _index("both", {f"{c}/{i}": t for c, chunks in (("menu", MENU_CHUNKS), ("wine", WINE_CHUNKS))
                            for i, t in chunks.items()})
    assert [(c, h.id, h.score) for c, h in found] == [
        (*h.id.split("/"), h.score) for h in union.search(query, 10)]  # exactly one index over both
    assert [(c, h.id) for c, h in found[:3]] == [("menu", "m1"), ("menu", "m2"), ("menu", "m3")]
    # one word each: the rarer "pasta" counts more; "spicy" alone ties (same length), in id order
    assert [h.id for _, h in found[3:]] == ["m5", "m4", "w1"]
    assert keyword_index.search_collections([wine, menu], query, 10) == found  # the order of sources is no matter
    assert keyword_index.search_collections([menu], query, 3) == [("menu", h) for h in menu.search(query, 3)]


def test_hybrid_search_over_two_collections_ranks_keyword_hits_across_both(kb, tmp_path):
    for name, chunks in (("menu", MENU_CHUNKS), ("wine", WINE_CHUNKS)):
        kb.ingest([_write(tmp_path, f"{i}.txt", text) for i, text in chunks.items()], name)
    found = hybrid.search(kb, ["wine", "menu"], "spicy pasta", 6, "keyword")
    got = [(d.metadata["collection"], d.metadata["source"]) for d in found.documents]
    # ties (same words, same length) go in chunk-id order, which is a hash here: compare them as sets
    assert set(got[:3]) == {("menu", "m1.txt"), ("menu", "m2.txt"), ("menu", "m3.txt")}
    assert got[3] == ("menu", "m5.txt") and set(got[4:]) == {("menu", "m4.txt"), ("wine", "w1.txt")}
    fused = hybrid.search(kb, ["wine", "menu"], "spicy pasta", 8, "hybrid").documents
    keyword_rank = {d.metadata["source"]: d.metadata["keyword"]["rank"] for d in fused if "keyword" in d.metadata}
    assert keyword_rank["w1.txt"] >= 5 and max(keyword_rank[f"m{i}.txt"] for i in (1, 2, 3)) == 3
    keyword_list = hybrid.search(kb, ["wine", "menu"], "spicy pasta", 20, "keyword").documents
    weight = hybrid.keyword_weight(["spicy", "pasta"], keyword_list)
    expected = hybrid.rrf([[hybrid._key(d) for d in found_list] for found_list in (
        hybrid.search(kb, ["wine", "menu"], "spicy pasta", 20, "dense").documents, keyword_list)], weights=[1.0, weight])
    assert [hybrid._key(d) for d in fused] == [key for key, _ in expected][:8]


# ---------------------------------------------------------------- the command line


def test_cli_search_json_lists_each_retrievers_rank(settings, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("core.knowledge.base.get_embeddings", lambda s: HashEmbeddings())
    KnowledgeBase(settings).ingest([_write(tmp_path, "menu.md", MENU_V1), _write(tmp_path, "notes.md", NOTES)], "docs")
    code = cli_main(["--data-dir", settings.data_dir, "search", "--collection", "docs", "--mode", "keyword", "--k", "2",
                     "--json", "generate_with_counter", "함수는?"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["query"] == "generate_with_counter 함수는?" and out["mode"] == "keyword"
    first = out["results"][0]
    assert first["source"] == "notes.md" and "generate_with_counter" in first["text"]
    assert first["keyword"]["rank"] == 1 and first["fused"]["rank"] >= 1 and first["dense"]["rank"] >= 1
    assert first["matched_terms"] == ["generate_with_counter", "함수"] and first["chunk"] >= 1
    ranks = [r["keyword"]["rank"] for r in out["results"] if r["keyword"]]
    assert ranks == sorted(ranks)  # in the mode's order
    assert cli_main(["--data-dir", settings.data_dir, "search", "--collection", "nope", "x"]) == 2


def test_cli_search_refuses_an_empty_query_with_a_clear_message(settings, capsys):
    # before: an empty query was searched, and the chunks nearest to nothing were printed as results
    assert cli_main(["--data-dir", settings.data_dir, "search", "--collection", "docs", "  "]) == 2
    captured = capsys.readouterr()
    assert "the query is empty" in captured.err and captured.out == ""


def _fresh_process(kb):
    """Forget the indexes this process holds: the next search reads what is on disk, as a new process would."""
    keyword_index._cache.clear()
    keyword_index._unions.clear()


@pytest.mark.parametrize("bad", [5, [1, 2], "text", None])
def test_a_damaged_stored_index_is_rebuilt_from_the_chunks_with_one_warning(kb, tmp_path, bad, caplog):
    """Valid JSON, the right digest, but token values that are not lists of strings: search raised TypeError."""
    kb.ingest([_write(tmp_path, "menu.md", MENU_V1)], "docs")
    path = keyword_index.index_path(kb.settings.data_path, "docs")
    record = _stored(kb, "docs")
    path.write_text(json.dumps({**record, "tokens": {chunk: bad for chunk in record["tokens"]}}), encoding="utf-8")
    _fresh_process(kb)
    assert _keyword_sources(kb, "docs", "블랙 트러플")[0] == ("menu.md", ["블랙", "트러플"])
    assert any("keyword index" in r.message and str(path) in r.message for r in caplog.records)
    assert _stored(kb, "docs")["tokens"] == record["tokens"]  # written again, whole


@pytest.mark.parametrize("breakage", ["folder is a file", "index is a folder"])
def test_an_unwritable_index_stays_in_memory_and_every_search_mode_answers(kb, tmp_path, breakage, caplog, capsys,
                                                                           monkeypatch):
    kb.ingest([_write(tmp_path, "menu.md", MENU_V1)], "docs")
    path = keyword_index.index_path(kb.settings.data_path, "docs")
    if breakage == "folder is a file":
        shutil.rmtree(path.parent)
        path.parent.write_text("not a folder")
    else:
        path.unlink()
        path.mkdir()
    kb.ingest([_write(tmp_path, "notes.md", NOTES)], "docs")  # a write: the index must be updated, cannot be stored
    _fresh_process(kb)
    for mode in ("keyword", "hybrid", "dense"):
        found = hybrid.search(kb, ["docs"], "generate_with_counter", 3, mode)
        assert found.documents and not found.problems, mode  # was: FileExistsError / IsADirectoryError
    warned = [r.message for r in caplog.records if "cannot be written" in r.message]
    assert warned and str(path) in warned[0]
    monkeypatch.setattr("core.knowledge.base.get_embeddings", lambda s: HashEmbeddings())
    assert cli_main(["--data-dir", kb.settings.data_dir, "search", "--collection", "docs", "--mode", "dense",
                     "--json", "generate_with_counter"]) == 0
    assert json.loads(capsys.readouterr().out)["results"]


# ---------------------------------------------------------------- teams


@pytest.mark.teams
def test_a_search_reads_the_chunk_ids_only_when_another_writer_changed_the_collection(kb, tmp_path, monkeypatch):
    kb.ingest([_write(tmp_path, "menu.md", MENU_V1)], "docs")
    read = []
    real = KnowledgeBase.chunk_ids
    monkeypatch.setattr(KnowledgeBase, "chunk_ids", lambda self, name: read.append(name) or real(self, name))
    assert _keyword_sources(kb, "docs", "트러플") and _keyword_sources(kb, "docs", "블랙")
    assert read == []  # unchanged: the fingerprint (count, revision) said so; 10,000 ids took 20 ms a search
    count = len(real(kb, "docs"))
    writer = KnowledgeBase(kb.settings, HashEmbeddings())  # another process on the same store
    writer.ingest([_write(tmp_path, "menu.md", MENU_V1.replace("트러플", "포르치니"))], "docs")
    assert len(real(kb, "docs")) == count  # as many chunks as before: only the revision tells
    assert _keyword_sources(kb, "docs", "트러플") == [] and _keyword_sources(kb, "docs", "포르치니")
    assert read == ["docs"]


def test_each_replica_builds_its_index_from_the_chroma_server(team_settings, tmp_path):
    """Two replicas, one Chroma server, data directories of their own: a write by one is seen by the other."""
    first = KnowledgeBase(team_settings, HashEmbeddings())
    second = KnowledgeBase(team_settings.with_(data_dir=str(tmp_path / "replica-2")), HashEmbeddings())
    first.ingest([_write(tmp_path, "menu.md", MENU_V1), _write(tmp_path, "notes.md", NOTES)], "docs")
    assert _keyword_sources(second, "docs", "generate_with_counter")[0][0] == "notes.md"
    assert _stored(second, "docs")["digest"] == keyword_index.ids_digest(first.chunk_ids("docs"))
    first.delete_source("docs", "notes.md")
    assert _keyword_sources(second, "docs", "generate_with_counter") == []
    assert _stored(second, "docs")["digest"] == _stored(first, "docs")["digest"]
