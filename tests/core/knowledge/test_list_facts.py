"""Facts a document writes as lists under headings, read into the graph without the model."""

import json

from langchain_core.documents import Document

from core.knowledge import entity_graph as eg
from core.knowledge.base import SAMPLES_DIR, KnowledgeBase
from core.knowledge.graph_extraction import clean_name, list_facts
from support.graph_support import Extractor


def _facts(text: str) -> list[tuple[str, str, str]]:
    return [(t.s, t.r, t.o) for t in list_facts(Document(page_content=text))]


def test_a_heading_and_its_fields_become_one_fact_per_item():
    text = ("## 2. 카스텔로 알바 바롤로\n- 생산지: 이탈리아 피에몬테 바롤로\n- 가격: 병 ₩150,000 (글라스 판매 없음)\n"
            "- 어울리는 음식: 시그니처 스테이크, 야생 버섯 리소토\n- **Style**: red, full-bodied. Tar and roses")
    assert _facts(text) == [
        ("카스텔로 알바 바롤로", "생산지", "이탈리아 피에몬테 바롤로"),
        ("카스텔로 알바 바롤로", "가격", "병 ₩150,000 (글라스 판매 없음)"),  # the comma inside brackets splits nothing
        ("카스텔로 알바 바롤로", "어울리는 음식", "시그니처 스테이크"),
        ("카스텔로 알바 바롤로", "어울리는 음식", "야생 버섯 리소토"),
        ("카스텔로 알바 바롤로", "Style", "red"),  # a sentence after ". " is not an item
        ("카스텔로 알바 바롤로", "Style", "full-bodied"),
    ]


def test_fields_written_as_sentences_and_lines_outside_a_heading_are_left_to_the_model():
    text = ("- 가격: ₩10,000\n## 1. 시그니처 스테이크\n- 설명: 라 포레스타를 대표하는 메뉴로, 한우 등심을 구워 냅니다.\n"
            "- 주요 식재료: 최상급 한우 등심(200g), 로즈메리 감자\n그냥 문장: 목록이 아닙니다\n"
            "- 제공: this is a rather long item of many words indeed, 짧은 것")
    assert _facts(text) == [("시그니처 스테이크", "주요 식재료", "최상급 한우 등심(200g)"),
                            ("시그니처 스테이크", "주요 식재료", "로즈메리 감자"),
                            ("시그니처 스테이크", "제공", "짧은 것")]


def test_the_sample_lists_give_their_pairings_and_prices():
    facts = _facts((SAMPLES_DIR / "restaurant_wine.md").read_text(encoding="utf-8"))
    assert ("실버 크릭 나파 밸리 카베르네 소비뇽", "어울리는 음식", "시그니처 스테이크") in facts
    assert ("포레스트 힐 오리건 피노 누아", "가격", "병 ₩88,000") in facts
    assert not any(r == "설명" for _, r, _ in facts)


def test_names_lose_stray_brackets_and_keep_their_own():
    assert clean_name("라 포레스타 (La Foresta)") == "라 포레스타 (La Foresta)"
    assert clean_name("(La Foresta)") == "La Foresta"
    assert clean_name("바롤로)") == "바롤로" and clean_name("(글라스 판매 없음") == "글라스 판매 없음"
    assert clean_name(' "**네비올로**". ') == "네비올로"


def test_a_graph_stored_before_list_facts_gets_them_once_without_the_model(settings):
    KnowledgeBase(settings).ingest([SAMPLES_DIR / "restaurant_wine.md"], "wine")
    kb = KnowledgeBase(settings)
    eg.ensure_graph(settings, kb, Extractor(), "wine")
    path = eg.graph_path(settings, "wine")
    record = json.loads(path.read_text(encoding="utf-8"))
    # as an older build stored it: the model's relations only, no flag; one on a field the list does not state
    record["edges"] = [e for e in record["edges"] if e["relation"] == "포도 품종" and "%" not in e["target_name"]]
    record["edges"].append({**record["edges"][0], "relation": "숙성", "target": "3년", "target_name": "3년"})
    record["nodes"].append({"id": "3년", "name": "3년", "collections": ["wine"]})
    del record["list_facts"]
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    eg._cache.clear()

    untouched = Extractor()
    graph, info = eg.current_graph(settings, kb, "wine", "Extractor")
    lines = {f"{graph.nodes[u]['name']} --[{d['relation']}]--> {graph.nodes[v]['name']}" for u, v, d in graph.edges(data=True)}
    assert "카스텔로 알바 바롤로 --[가격]--> 병 ₩150,000 (글라스 판매 없음)" in lines
    assert "카스텔로 알바 바롤로 --[포도 품종]--> 네비올로 100%" in lines  # the list's, for the model's copy
    assert "카스텔로 알바 바롤로 --[포도 품종]--> 네비올로" not in lines
    assert any(line.endswith("--[숙성]--> 3년") for line in lines)  # the model's relation on another field kept
    assert info["ready"] and untouched.calls == []
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["list_facts"] is True and len(stored["edges"]) == graph.number_of_edges()
    eg._cache.clear()
    again, _ = eg.current_graph(settings, kb, "wine", "Extractor")
    assert again.number_of_edges() == graph.number_of_edges()  # added once, not at every read


def test_relations_that_rank_alike_keep_the_documents_order_whatever_order_the_chunks_were_read_in():
    """A concurrent build adds chunks as they finish; what the relation limit keeps must not depend on it."""
    chunks = [Document(page_content=f"## {i}. 와인 {i}\n- 가격: ₩{i}0,000\n- 어울리는 음식: 스테이크",
                       metadata={"source": "wine.md", "chunk_index": i, "chunk_id": f"c{i}"}, id=f"c{i}")
              for i in range(1, 5)]
    kept = []
    for order in (chunks, chunks[::-1]):
        graph = eg.nx.MultiDiGraph()
        for doc in order:
            eg.add_relations(graph, doc, list_facts(doc), "wine")
        kept.append([eg.relation_line(r) for r in eg.neighbourhood(graph, ["스테이크"], limit=6,
                                                                    question="스테이크와 어울리는 와인")])
    assert kept[0] == kept[1]
    assert kept[0][:2] == ["와인 1 --[어울리는 음식]--> 스테이크 (wine.md)", "와인 2 --[어울리는 음식]--> 스테이크 (wine.md)"]
