"""AppTest of the Knowledge base page: uploads with a corrupt file, preview, search, delete, re-index."""

import hashlib

import numpy as np
from langchain_core.embeddings import Embeddings

import core.knowledge.base
from core.config import load_settings
from core.knowledge import upload_budget
from core.knowledge.base import KnowledgeBase
from support.app_support import app_data, assert_clean, button, open_page, scripted, shown, texts  # noqa: F401

KB = "pages/12_Knowledge_base.py"
NOTES = ("# 주차 안내\n\n라 포레스타 건물 지하 2층 주차장을 2시간 무료로 이용할 수 있습니다. "
         "발레파킹은 저녁 6시부터 ₩5,000입니다.\n").encode()


def _kb():
    return KnowledgeBase(load_settings())


def test_upload_indexes_good_files_and_reports_each_bad_one(app_data):
    at = open_page(KB)
    assert {"restaurant_menu", "restaurant_wine", "japan_ict", "usa_ict"} <= {
        e.label.split("**")[1] for e in at.expander if e.label.startswith("**")}
    at.file_uploader[0].set_value([("parking.md", NOTES, "text/markdown"),
                                   ("broken.pdf", b"%PDF-1.7 this is not a pdf", "application/pdf"),
                                   ("slides.pptx", b"PK\x03\x04", "application/octet-stream")])
    at.text_input(key="kb_new_name").set_value("site_info")
    at.number_input(key="kb_size").set_value(300)
    at.number_input(key="kb_overlap").set_value(0)
    button(at, key_end="kb_index").click().run()
    assert_clean(at)
    assert [shown(s.value) for s in at.success] == ["parking.md: 1 chunks added to site_info"]
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 2
    assert errors[0].startswith("broken.pdf: cannot read this PDF")
    assert errors[1].startswith("slides.pptx: unsupported file type .pptx")
    assert _kb().info("site_info")["sources"] == ["parking.md"]
    # without a reload: the new collection is listed with its count, model and a chunk preview
    [site] = [e for e in at.expander if e.label.startswith("**site_info**")]
    assert "1 chunks" in site.label and "embedded:multilingual-e5-small" in shown(site.label)
    assert "지하 2층 주차장" in "\n".join(t.value for t in site.text)

    at.selectbox(key="kb_test_collection").set_value("site_info")
    button(at, key_end="kb_test_search").click().run()  # nothing typed yet: said, not silently ignored
    assert "Type what to search for first." in [w.value for w in at.warning]
    at.text_input(key="kb_test_query").set_value("주차는 무료인가요?")
    button(at, key_end="kb_test_search").click().run()
    assert_clean(at)
    captions = [shown(c.value) for c in at.caption]
    assert "Keyword tokens of the query (highlighted below): 주차 무료" in captions
    assert "The keyword list counts 1.0 in the fusion: the share of the query's tokens it matched." in captions
    # three columns, one per retriever, each listing the one chunk with its rank in every list
    assert [shown(m.value) for m in at.markdown if m.value in ("**Dense**", "**Keyword**", "**Fused (RRF)**")] == [
        "**Dense**", "**Keyword**", "**Fused (RRF)**"]
    ranks = [c for c in captions if c.startswith("Dense #1 (")]
    assert len(ranks) == 3 and all(" · Keyword #1 (" in c and " · Fused (RRF) #1 (" in c for c in ranks)
    chunks = [m.value for m in at.markdown if "지하 2층" in m.value]
    assert len(chunks) == 3 and all("**무료**" in c and "**주차**" in c for c in chunks)  # the matched terms, in bold


def test_invalid_collection_name_and_no_files_are_refused(app_data):
    at = open_page(KB)
    button(at, key_end="kb_index").click().run()
    assert at.warning[0].value == "Choose at least one file."
    at.file_uploader[0].set_value(("a.md", NOTES, "text/markdown"))
    at.text_input(key="kb_new_name").set_value("bad name!")
    button(at, key_end="kb_index").click().run()
    assert at.error[0].value.startswith("Collection names use 3–63 letters")
    assert "bad name!" not in _kb().names()


def test_delete_a_document_then_the_collection(app_data):
    _kb().ingest([], "site_info", files={"parking.md": NOTES, "hours.txt": "영업시간은 11시부터 22시까지입니다.".encode()})
    at = open_page(KB)
    button(at, key_end="kb_del_site_info_hours.txt").click().run()
    assert_clean(at)
    assert "Deleted site_info/hours.txt." in shown(texts(at))
    assert _kb().info("site_info")["sources"] == ["parking.md"]
    delete = button(at, key_end="kb_delcol_site_info")
    assert delete.disabled  # needs the confirmation first
    at.checkbox(key="kb_sure_site_info").check().run()
    button(at, key_end="kb_delcol_site_info").click().run()
    assert "Deleted site_info." in shown(texts(at))
    assert "site_info" not in _kb().names()


class HashEmbeddings(Embeddings):
    """A deterministic stand-in for a second embedding model (an Ollama server is not available)."""

    model_id = "ollama:hash-test"

    def _vector(self, text: str) -> list[float]:
        seed = int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)
        vec = np.random.default_rng(seed).normal(size=32)
        return (vec / np.linalg.norm(vec)).tolist()

    def embed_documents(self, texts):
        return [self._vector(t) for t in texts]

    def embed_query(self, text):
        return self._vector(text)


def test_switching_the_embedder_flags_collections_and_reindexes_them(app_data, monkeypatch):
    real = core.knowledge.base.get_embeddings
    monkeypatch.setattr(core.knowledge.base, "get_embeddings",
                        lambda s: HashEmbeddings() if s.embedding_provider == "ollama" else real(s))
    monkeypatch.setattr(core.knowledge.base, "SAMPLE_COLLECTIONS", {"restaurant_wine": "restaurant_wine.md"})
    _kb().ingest([], "site_info", files={"parking.md": NOTES})
    at = open_page(KB)
    at.selectbox(key="kb_embedding_provider").set_value("ollama").run()
    assert_clean(at)
    # the sample collection is rebuilt with the new embedder on first use; the user's is flagged
    assert any(e.label.startswith("**restaurant_wine**") and "ollama:hash-test" in shown(e.label) for e in at.expander)
    assert sorted(_flagged(at)) == ["japan_ict", "restaurant_menu", "site_info", "usa_ict"]
    warning = shown(at.warning[0].value)
    assert "Indexed with embedded:multilingual-e5-small" in warning and "ollama:hash-test" in warning
    button(at, key_end="kb_reindex_site_info").click().run()
    assert_clean(at)
    assert "Re-indexed site_info: 1 chunks." in shown(texts(at))
    info = KnowledgeBase(load_settings(embedding_provider="ollama")).info("site_info")
    assert info["embedding_model"] == "ollama:hash-test" and info["sources"] == ["parking.md"]
    assert "site_info" not in _flagged(at)


def _flagged(at) -> list[str]:
    """Collections whose expander warns that they were indexed with another embedder."""
    return [e.label.split("**")[1] for e in at.expander if any("Re-index it" in w.value for w in e.warning)]


def test_sample_documents_are_indexed_on_first_use(app_data, tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "fresh"))
    monkeypatch.setattr(core.knowledge.base, "SAMPLE_COLLECTIONS", {"restaurant_wine": "restaurant_wine.md"})
    at = open_page("pages/1_Basic_RAG.py")  # any chat page prepares the knowledge base first
    assert_clean(at)
    assert _kb().names() == ["restaurant_wine"] and _kb().info("restaurant_wine")["chunks"] > 0
    assert at.chat_input[0].placeholder == "Ask a question"


def test_a_new_collection_is_described_when_created_then_edited_suggested_and_switched_off(app_data, scripted):
    from core.knowledge.sources import get_source

    at = open_page(KB)
    at.file_uploader[0].set_value(("parking.md", NOTES, "text/markdown"))
    at.text_input(key="kb_new_name").set_value("site_info")
    at.text_input(key="kb_new_display").set_value("건물 안내")
    at.text_area(key="kb_new_description").set_value("주차장과 발레파킹 안내. Parking and valet service.")
    button(at, key_end="kb_index").click().run()
    assert_clean(at)
    source = get_source(_kb(), "site_info")
    assert (source.name, source.enabled) == ("건물 안내", True)
    assert source.description == "주차장과 발레파킹 안내. Parking and valet service."

    at.run()
    assert [e for e in at.expander if e.label.startswith("**site_info** · 건물 안내 · 1 chunks")]
    assert at.text_area(key="kb_desc_site_info").value == source.description
    scripted.responder = lambda messages: {"description": "건물 주차 안내: 무료 주차 시간과 발레파킹 요금."}
    button(at, key_end="kb_suggest_site_info").click().run()
    assert_clean(at)
    assert at.text_area(key="kb_desc_site_info").value == "건물 주차 안내: 무료 주차 시간과 발레파킹 요금."
    assert "지하 2층 주차장" in scripted.calls[-1][-1].content  # drafted from the collection's chunks
    assert get_source(_kb(), "site_info").description == source.description  # a draft, not saved yet

    at.toggle(key="kb_enabled_site_info").set_value(False)
    button(at, key_end="kb_save_site_info").click().run()
    assert_clean(at)
    saved = get_source(_kb(), "site_info")
    assert (saved.description, saved.enabled) == ("건물 주차 안내: 무료 주차 시간과 발레파킹 요금.", False)
    assert "Saved the description of site_info." in shown(texts(at))


def test_reserved_collection_names_are_refused(app_data):
    at = open_page(KB)
    at.file_uploader[0].set_value(("a.md", NOTES, "text/markdown"))
    at.text_input(key="kb_new_name").set_value("web")
    button(at, key_end="kb_index").click().run()
    assert shown(at.error[0].value).startswith("'web' and 'direct' are route names")
    assert "web" not in _kb().names()


def test_uploads_past_the_hourly_budget_are_refused_in_one_clear_error_and_nothing_is_indexed(app_data, monkeypatch):
    monkeypatch.setenv("RAG_MAX_UPLOAD_MB_PER_HOUR", "1")
    monkeypatch.setattr(upload_budget, "BUDGET", upload_budget.UploadBudget())  # every AppTest has one session id
    at = open_page(KB)
    at.file_uploader[0].set_value(("slides.pptx", b"PK\x03\x04" + b"\0" * 700_000, "application/octet-stream"))
    at.text_input(key="kb_new_name").set_value("site_info")
    button(at, key_end="kb_index").click().run()
    assert_clean(at)
    [error] = at.error
    assert shown(error.value).startswith("slides.pptx: unsupported file type .pptx")
    # a second batch: its bytes and the first's (counted though none was indexed) pass the hour's budget
    at.file_uploader[0].set_value(("parking.md", NOTES + b"\n" * 500_000, "text/markdown"))
    button(at, key_end="kb_index").click().run()
    assert_clean(at)
    assert [shown(e.value) for e in at.error] == [
        "refused: this upload (0.5 MB) would pass the limit of 1 MB uploaded per visitor per hour "
        "(RAG_MAX_UPLOAD_MB_PER_HOUR): you uploaded 0.7 MB in the last hour; it fits again in 60 minutes"]
    assert "site_info" not in _kb().names()


def test_autos_policy_shows_each_kinds_pattern_and_what_it_rests_on_and_refreshes_by_advise(app_data, monkeypatch):
    from core.llm.models import model_name, resolve_provider
    from core.store import advice_records
    from core.studio import advise
    from core.studio.question_set import save_question_set

    settings = load_settings()
    provider = resolve_provider(settings)
    items = [{"id": f"q{n}", "question": f"메뉴 질문 {n}?", "sources": ["restaurant_menu"], "facts": ["1"],
              "answerable": True, "category": "single", "kind": "single", "lang": "ko"} for n in range(3)]
    save_question_set(settings, "menu-set", items)
    save_question_set(settings, "wine-set", [{**items[0], "sources": ["restaurant_wine"]}])
    rows = {"basic": (0.60, 4.0), "self_rag": (0.95, 30.0)}
    advice_records.save(settings, {
        "id": "20261201-120000-abcdef", "date": "2026-12-01 12:00", "status": "done", "items": items,
        "report": {"date": "2026-12-01 12:00", "provider": provider, "model": model_name(settings, provider),
                   "recommendation": {"margin": 0.05},
                   "patterns": {p: {"quality": q, "mean_seconds": sec, "mean_llm_calls": 2.0,
                                    "kinds": {"single": {"questions": 3, "quality": q, "mean_seconds": sec}}}
                                for p, (q, sec) in rows.items()}}})
    started = []
    monkeypatch.setattr(advise, "start", lambda *a, **kw: started.append((a, kw)) or "20261207-000000-ffffff")
    at = open_page(KB)
    assert_clean(at)
    at.multiselect(key="policy_collections").set_value(["restaurant_menu"]).run()
    [table] = [d.value for d in at.dataframe if "kind of question" in d.value.columns]
    single = table[table["kind of question"] == "single fact"].iloc[0]
    assert single["pattern"] == "self_rag" and single["quality"] == 0.95 and single["seconds per question"] == 30.0
    assert single["questions behind it"] == 3 and single["advice of"] == "2026-12-01"
    assert single["why"] == "single fact → self_rag: 0.95 vs basic 0.60 over 3 questions of your set (2026-12-01)"
    small = table[table["kind of question"] == "small talk"].iloc[0]
    assert small["pattern"] == "self_rag" and small["advice of"] == "default policy"
    assert small["why"].endswith("default policy (no advice for these collections)")
    # only the sets over the chosen collections are offered; refreshing advises afresh over the four patterns
    assert at.selectbox(key="policy_set").options == ["menu-set.jsonl"]
    button(at, key_end="policy_refresh").click().run()
    assert_clean(at)
    [(args, kw)] = started
    assert args[1] == items and args[2] == list(advise.POLICY_PATTERNS) and kw["fresh"] is True
    assert any("Advice started" in s.value for s in at.success)
