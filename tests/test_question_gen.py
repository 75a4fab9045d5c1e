"""Question sets written from collections: a scripted writer, real Chroma, every check of the generator."""

import re
from collections import Counter

import question_corpus as corpus
from fakes import HashEmbeddings
from langchain_core.documents import Document
from scripted import ScriptedChatModel

from core.knowledge.base import KnowledgeBase
from core.prompts import HANGUL
from core.studio import question_gen
from core.studio.question_set import load_saved_question_set, parse_question_set, save_question_set


def test_sampling_takes_turns_across_files_not_the_top_of_the_first():
    chunks = [Document(page_content=f"{name} chunk {i} " + "x" * 80, metadata={"source": name}, id=f"{name}-{i}")
              for name in ("a.md", "b.md", "c.md") for i in range(4)]
    order = question_gen.sample_chunks(chunks, seed=1)
    assert sorted(c.id for c in order) == sorted(c.id for c in chunks)  # every chunk, once
    assert {c.metadata["source"] for c in order[:3]} == {"a.md", "b.md", "c.md"}
    assert [c.id for c in order] == [c.id for c in question_gen.sample_chunks(list(reversed(chunks)), seed=1)]
    first_of_a = [c.id for c in order if c.metadata["source"] == "a.md"]
    assert first_of_a != sorted(first_of_a) or question_gen.sample_chunks(chunks, seed=2) != order  # shuffled


def test_kinds_need_what_they_are_made_of():
    assert "cross_collection" not in question_gen.plan_kinds(10, 1, 5)
    assert "two_chunks" not in question_gen.plan_kinds(10, 2, 1)
    assert set(question_gen.plan_kinds(6, 2, 5)) == set(question_gen.KINDS)


def test_every_kept_fact_is_quoted_from_its_chunk_and_a_misquote_drops_the_question(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    scripted = corpus.model({"정기권": ("누비라 한 달 정기권은 얼마인가요?", "5000원")})  # the chunk says 5,000원
    done = question_gen.generate(kb, scripted, ["bikes"], count=10)
    assert done.dropped["fact_not_in_chunk"] >= 1
    assert not any("정기권" in i["question"] for i in done.items)
    with_facts = [i for i in done.items if i["facts"]]
    assert with_facts
    for item in with_facts:
        chunks = [corpus.chunk_text(kb, where) for where in item["provenance"]]
        assert all(any(fact in chunk for chunk in chunks) for fact in item["facts"]), item
        assert {p["collection"] for p in item["provenance"]} == {"bikes"} and item["sources"] == ["bikes"]


def test_the_question_is_in_the_language_of_its_chunk(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    scripted = corpus.model({"Harvest": ("수확은 언제인가요?", "late July")})  # Korean for an English chunk
    done = question_gen.generate(kb, scripted, ["bikes", "bees"], count=8)
    assert done.dropped["language"] >= 1
    for item in done.items:
        chunk = corpus.chunk_text(kb, item["provenance"][0]) if item["provenance"][0]["chunk_id"] else ""
        korean = item["lang"] == "ko"
        assert korean == (item["provenance"][0]["collection"] == "bikes")
        assert bool(HANGUL.search(item["question"])) == korean
        assert not chunk or bool(HANGUL.search(chunk)) == korean
    asked = corpus.systems(scripted)
    assert any("Write the question in Korean" in s for s in asked) and any("Write the question in English" in s
                                                                          for s in asked)


def test_an_unanswerable_question_is_kept_only_when_the_collection_really_lacks_the_answer(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    in_corpus = corpus.model({"unanswerable": ("헬멧 대여료는 얼마인가요?", "헬멧")})  # the files do mention helmets
    done = question_gen.generate(kb, in_corpus, ["bikes"], count=4)
    assert done.dropped["not_absent"] >= 1 and not [i for i in done.items if i["kind"] == "unanswerable"]

    searched_says_answered = corpus.model(answered=True)  # the term is absent, but a search finds an answer
    done = question_gen.generate(kb, searched_says_answered, ["bikes"], count=4)
    assert not [i for i in done.items if i["kind"] == "unanswerable"] and done.dropped["not_absent"] >= 1
    checks = [call for call in searched_says_answered.calls
              if corpus._is(str(call[0].content), corpus.P.ANSWERED_CHECK_SYSTEM)]
    assert checks and corpus.documents(checks[0][-1])  # the search's chunks were shown to the model

    absent = corpus.model()
    done = question_gen.generate(kb, absent, ["bikes"], count=4)
    unanswerable = [i for i in done.items if i["kind"] == "unanswerable"]
    assert unanswerable and all(not i["answerable"] and not i["facts"] for i in unanswerable)


def test_duplicates_near_duplicates_and_questions_holding_their_answer_are_dropped(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    same = ("누비라 한 시간 이용권의 가격은 얼마인가요?", "1,000원")
    scripted = corpus.model({"정기권": ("누비라 한 시간 이용권의 가격은 얼마 인가요 ?", "5,000원"),  # near-duplicate
                             "대여소": ("대여소가 312곳이라는데 몇 곳인가요?", "312곳"),  # holds its answer
                             "1시간 이용권": same})
    done = question_gen.generate(kb, scripted, ["bikes"], count=10)
    assert done.dropped["duplicate"] >= 1 and done.dropped["answer_in_question"] >= 1
    questions = [i["question"] for i in done.items]
    assert len({question_gen._norm(q) for q in questions}) == len(questions)
    assert not any("312곳" in q for q in questions)
    assert question_gen.is_duplicate("How many colonies does it keep?", ["how many colonies does it keep"])
    assert not question_gen.is_duplicate("1시간 이용권은 얼마인가요?", ["30일 정기권은 얼마인가요?"])


def test_two_collections_give_cross_collection_questions_and_the_set_saves_and_reads_back(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    done = question_gen.generate(kb, corpus.model(), ["bikes", "bees"], count=10)
    kinds = Counter(i["kind"] for i in done.items)
    assert set(kinds) == set(question_gen.KINDS) and len(done.items) == 10
    cross = next(i for i in done.items if i["kind"] == "cross_collection")
    assert set(cross["sources"]) == {"bikes", "bees"} and len(cross["facts"]) == 2
    assert {p["collection"] for p in cross["provenance"]} == {"bikes", "bees"}
    talk = next(i for i in done.items if i["kind"] == "small_talk")
    assert talk["sources"] == [] and talk["answerable"]
    file = save_question_set(settings, "my set", done.items)
    again = load_saved_question_set(settings, file)
    assert [(i["question"], i["kind"], i["provenance"]) for i in again] == \
        [(i["question"], i["kind"], i["provenance"]) for i in done.items]
    assert parse_question_set('{"question": "q", "kind": "single"}')[0]["kind"] == "single"


def test_generation_stops_when_asked_and_reports_progress_with_a_measured_estimate(tmp_path, settings, monkeypatch):
    import types

    kb = corpus.build(tmp_path, settings)
    ticks = iter(range(0, 1000, 2))  # the generator's clock: every reading is 2 s after the last
    monkeypatch.setattr(question_gen, "time", types.SimpleNamespace(perf_counter=lambda: float(next(ticks))))
    seen = []
    done = question_gen.generate(kb, corpus.model(), ["bikes"], count=6,
                                 progress=lambda kept, wanted, label, left: seen.append((kept, wanted, left)),
                                 should_stop=lambda: len(seen) >= 2)
    assert done.stopped and done.attempts == 2 and len(seen) == 2
    kept = seen[-1][0]
    assert seen[-1][1] == 6 and 0 < kept <= 2
    # seconds left from the measured speed: 2 attempts in 4 s, `kept` of them kept, 6 - kept questions to go
    assert seen[-1][2] == round((6 - kept) * 2 / kept * 2.0, 1)


def test_the_questions_command_prints_json_and_saves_the_set(tmp_path, settings, monkeypatch, capsys):
    import json

    import core.cli.common
    import core.llm.models
    from core.cli.main import main

    kb = corpus.build(tmp_path, settings)
    monkeypatch.setattr(core.cli.common, "knowledge", lambda s: kb)
    monkeypatch.setattr(core.cli.common, "prepare_model", lambda s: None)
    monkeypatch.setattr(core.llm.models, "get_chat_model", lambda s, role="main": corpus.model())
    out = tmp_path / "set.jsonl"
    assert main(["--data-dir", str(settings.data_path), "questions", "--collection", "bikes", "--count", "4",
                 "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["set"] == str(out) and printed["summary"]["kept"] == 4
    assert [i["question"] for i in parse_question_set(out.read_text(encoding="utf-8"))] == \
        [i["question"] for i in printed["items"]]
    assert main(["--data-dir", str(settings.data_path), "questions", "--collection", "nowhere"]) == 2


# Measured with the built-in embedder (multilingual-e5-small); the cosines are in core/studio/question_gen.py.
MEANING_PAIRS = {
    "same": [("정기권은 얼마인가요?", "정기권의 가격은 얼마인가요?"),
             ("대여소는 몇 곳이 있나요?", "대여소가 모두 몇 개인가요?"),
             ("How many colonies does the apiary keep?", "How many bee colonies are kept at the apiary?"),
             ("When is the main honey harvest?", "When does the main harvest of honey take place?"),
             ("스테이크 가격은 얼마인가요?", "스테이크는 얼마예요?"),
             ("What time does the restaurant open?", "When does the restaurant open?")],
    "missed": [("누비라 한 달 정기권은 얼마인가요?", "누비라 30일 정기권 가격이 어떻게 되나요?"),  # paraphrases
               ("헬멧을 빌리려면 돈을 내야 하나요?", "헬멧 대여는 유료인가요?")],  # under the threshold
    "distinct": [("정기권은 얼마인가요?", "1시간 이용권은 얼마인가요?"),
                 ("시그니처 스테이크의 가격은 얼마인가요?", "트러플 크림 파스타의 가격은 얼마인가요?"),
                 ("대여소는 몇 곳이 있나요?", "자전거는 모두 몇 대인가요?"),
                 ("How many colonies does the apiary keep?", "How many hives were lost last winter?"),
                 ("When is the main honey harvest?", "When are varroa mites counted?"),
                 ("스테이크와 어울리는 와인은?", "디저트와 어울리는 와인은?"),
                 ("자전거를 잃어버리면 보상금은 얼마인가요?", "자전거는 하루 중 언제부터 빌릴 수 있나요?"),
                 ("누비라 한 시간 이용권의 가격은 얼마인가요?", "누비라 한 달 정기권은 얼마인가요?"),
                 ("그릴드 연어 스테이크 항목의 마지막 안내는 무엇인가요?", "클래식 시저 샐러드 항목의 마지막 안내는 무엇인가요?"),
                 ("How long are stored frames frozen?", "How are varroa mites counted?")],
}


def test_the_meaning_threshold_separates_the_measured_pairs_on_the_built_in_embedder(settings):
    from core.llm.embeddings import get_embeddings

    meaning = question_gen.Meaning(get_embeddings(settings).embed_query)
    scores = {kind: [meaning.similarity(a, b) for a, b in pairs] for kind, pairs in MEANING_PAIRS.items()}
    assert all(s >= question_gen.SAME_MEANING for s in scores["same"]), scores
    assert all(s < question_gen.SAME_MEANING for s in scores["missed"] + scores["distinct"]), scores
    assert min(scores["same"]) - max(scores["distinct"]) > 0.005  # the gap the threshold sits in
    assert not any(question_gen.is_duplicate(a, [b]) for a, b in MEANING_PAIRS["same"])  # the words differ


def test_a_question_that_asks_what_a_kept_one_asks_in_other_words_is_dropped(tmp_path, settings):
    from core.llm.embeddings import get_embeddings

    kb = corpus.build(tmp_path, settings, get_embeddings(settings))  # the real e5, as the app has it
    scripted = corpus.model({"1시간 이용권": ("정기권은 얼마인가요?", "1,000원"),
                             "정기권": ("정기권의 가격은 얼마인가요?", "5,000원")})
    meaning = question_gen.Meaning(kb.embed_query)
    assert meaning.same_as_any("정기권의 가격은 얼마인가요?", ["정기권은 얼마인가요?"])
    assert not question_gen.is_duplicate("정기권의 가격은 얼마인가요?", ["정기권은 얼마인가요?"])
    done = question_gen.generate(kb, scripted, ["bikes"], count=10)
    questions = [i["question"] for i in done.items]
    assert done.dropped["same_meaning"] >= 1
    assert not {"정기권은 얼마인가요?", "정기권의 가격은 얼마인가요?"} <= set(questions)


def test_a_one_chunk_collection_gives_several_questions_because_the_model_sees_what_it_wrote(tmp_path, settings):
    """At temperature 0 the same prompt gives the same question: without the questions already written, every
    retry over a small collection's only chunk was a duplicate (seen on tests/corpora with the embedded model)."""
    (tmp_path / "one.md").write_text("# 요금\n1시간 이용권은 1,000원이고 30일 정기권은 5,000원이며 1년 정기권은 30,000원입니다.",
                                     encoding="utf-8")
    kb = KnowledgeBase(settings, HashEmbeddings())
    assert not kb.ingest([tmp_path / "one.md"], "fares").errors
    facts = [("1시간 이용권은 얼마인가요?", "1,000원"), ("30일 정기권은 얼마인가요?", "5,000원"),
             ("1년 정기권은 얼마인가요?", "30,000원")]

    def deterministic(messages):  # the reply is a function of the prompt, as at temperature 0
        system, human = str(messages[0].content), str(messages[-1].content)
        written = re.findall(r"<already_written>\n(.*?)\n</already_written>", human, re.S)
        shown = written[0].split("\n") if written else []
        assert ("already_written" in system) == bool(shown)
        if corpus._is(system, corpus.P.UNANSWERABLE_SYSTEM):
            return {"question": "전기자전거 이용권은 얼마인가요?", "missing": "전기자전거"}
        if corpus._is(system, corpus.P.ANSWERED_CHECK_SYSTEM):
            return {"answered": False}
        question, fact = next((f for f in facts if f[0] not in shown), facts[-1])
        return {"question": question, "facts": [fact]}

    done = question_gen.generate(kb, ScriptedChatModel(responder=deterministic), ["fares"], count=5)
    singles = [i["question"] for i in done.items if i["kind"] == "single"]
    assert len(singles) == 3 and set(singles) == {q for q, _ in facts}
    assert [i["kind"] for i in done.items].count("unanswerable") == 1 and len(done.items) == 4  # the chunk holds 3 facts


def test_key_facts_come_from_the_focus_sentence_a_question_is_about():
    """What Qwen2.5 1.5B wrote for tests/corpora: whole sentences, the wrong words of the right sentence."""
    bees = ["Harbor Hill Apiary keeps 24 honey bee colonies in Langstroth hives on the north slope of the farm.",
            "Each hive is inspected every 7 to 10 days from April to September.",
            "The main honey harvest takes place in late July."]
    facts = question_gen.focused_facts
    assert facts("How many honey bee colonies does Harbor Hill Apiary keep?", ["Langstroth hives"], bees[0], bees) \
        == (["24"], "")
    assert facts("How often are the hives inspected?", [bees[1]], bees[1], bees) == (["7", "10"], "")
    assert facts("How many honey bee colonies does Harbor Hill Apiary keep?", ["24"], bees[1], bees) == ([], "off_focus")
    assert facts("When does the main honey harvest take place?", ["late July"], bees[2], bees) == (["late July"], "")
    assert facts("When does the main honey harvest take place?", [bees[2]], bees[2], bees) == ([], "fact_not_in_focus")
    fares = ["누비라 1시간 이용권은 1,000원입니다.", "30일 정기권은 5,000원이고, 1년 정기권은 30,000원입니다."]
    assert facts("누비라 1시간 이용권의 가격은 얼마입니까?", [fares[0]], fares[0], fares) == (["1,000원"], "")
    assert facts("누비라 1시간 이용권의 가격은 얼마입니까?", ["1,000원"], fares[1], fares) == ([], "off_focus")
    assert question_gen.figures("만 13세 이상, 2,400대, 7.5%, 18 kilograms") == ["13세", "2,400대", "7.5%", "18"]
    assert facts("누비라 1년 정기권의 가격은 얼마입니까?", ["1년 정기권은 30,000원"], fares[1], fares) == (["30,000원"], "")
    assert facts("누비라 1년 정기권의 가격은 얼마입니까?", ["1년 정기권은"], fares[1], fares) == \
        (["30일", "5,000원", "30,000원"], "")
