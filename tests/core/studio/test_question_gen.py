"""Question sets written answer first: candidate spans, the round trip, every kind, with a scripted writer over real
Chroma; one run end to end on the real embedded model."""

from collections import Counter

import pytest
from langchain_core.documents import Document

from core.knowledge.base import KnowledgeBase
from core.prompts import HANGUL
from core.studio import question_checks, question_gen
from core.studio.answer_spans import Span, candidates, figure_spans, name_spans, phrase_spans, same_answer
from core.studio.question_set import load_saved_question_set, parse_question_set, save_question_set
from support import question_corpus as corpus


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



# ---------------------------------------------------------------- candidate answers, chosen in code

HR = ("## 4. 국내 출장비\n국내 출장 숙박비는 1박 12만 원까지 지급하며, 서울은 1박 15만 원까지 인정합니다.\n"
      "연차휴가는 입사 1년 후 15일이 주어지고, 인사 시스템 '하모니'에 신청합니다.\n"
      "근무 시간은 오전 9시부터 오후 6시까지입니다.")
FAQ = ("## Plans\nDeleted files are kept for 90 days. The Team plan includes 32 GB per seat and costs $24 per month.\n"
       "Support is led by Maria Jensen in Dublin, and the desktop app is called \"Nimbus Drive\".")
PROSE_KO = "## 클린 데스크\n클린 데스크는 퇴근할 때 책상 위에 서류를 남기지 않는 원칙을 말합니다."
PROSE_EN = "## Overview\nNimbus Backup is a cloud backup service for small offices and their laptops."


def test_candidate_answers_are_figures_with_their_units_and_names_each_a_span_of_its_chunk():
    ko = [s.text for s in figure_spans(HR)]
    assert {"1박 12만 원", "1박 15만 원", "15일", "오전 9시", "오후 6시"} <= set(ko), ko
    assert "1" not in ko and "12만 원" not in ko  # joined with its neighbour, not repeated alone
    en = [s.text for s in figure_spans(FAQ)]
    assert {"90 days", "32 GB", "$24"} <= set(en), en
    assert {"하모니", "서울"} <= {s.text for s in name_spans(HR)}  # a quoted name, Kiwi's proper noun
    assert {"Maria Jensen", "Dublin", "Nimbus Drive", "Team"} <= {s.text for s in name_spans(FAQ)}
    assert "Deleted" not in {s.text for s in name_spans(FAQ)}  # a capital that only opens a sentence
    assert "국내 출장비" not in {s.text for s in candidates(HR)}  # the heading names the chunk, it answers nothing
    for text in (HR, FAQ):
        for span in candidates(text):
            assert text[span.start:span.start + len(span.text)] == span.text
    sorts = {s.text: s.sort for s in figure_spans(HR + "\n" + FAQ)}
    assert (sorts["1박 12만 원"], sorts["15일"], sorts["오후 6시"], sorts["90 days"], sorts["32 GB"]) == \
        ("money", "duration", "time", "duration", "size")


def test_a_chunk_of_prose_gives_a_defining_phrase_and_one_with_figures_none():
    assert not figure_spans(PROSE_KO) and not name_spans(PROSE_KO)
    assert [s.text for s in candidates(PROSE_KO)] == [s.text for s in phrase_spans(PROSE_KO)]
    assert candidates(PROSE_KO)[0].text.startswith("퇴근할 때 책상 위에") and candidates(PROSE_KO)[0].kind == "phrase"
    assert [s.text for s in candidates(PROSE_EN) if s.kind == "phrase"] == ["cloud backup service for small offices"]
    assert not [s for s in candidates(HR) if s.kind == "phrase"]  # a chunk with figures asks about them
    assert candidates("## 헬멧\n헬멧은 대여소마다 무료로 빌려 주며 반납함에 돌려 놓으면 됩니다.") == []


def test_the_writer_is_shown_the_sentence_of_its_answer_with_the_answer_blanked(tmp_path, settings):
    from core.studio.answer_spans import line_of

    assert line_of(HR, figure_spans(HR)[1], "___") == "국내 출장 숙박비는 1박 12만 원까지 지급하며, 서울은 ___까지 인정합니다."
    assert line_of(HR, figure_spans(HR)[1]) == "국내 출장 숙박비는 1박 12만 원까지 지급하며, 서울은 1박 15만 원까지 인정합니다."
    kb = corpus.build(tmp_path, settings)
    scripted = corpus.model()
    question_gen.generate(kb, scripted, ["bikes"], count=1)
    write = str(scripted.calls[0][-1].content)
    assert "<line>누비라 ___ 이용권은 1,000원이며 앱에서 바로 살 수 있습니다.</line>" in write  # the span was 1시간


def test_a_reply_gives_the_span_back_when_it_states_the_same_value_or_words():
    money = Span("1박 12만 원", 0, "figure", "money")
    assert same_answer(money, "120,000원") and same_answer(money, "1박에 12만 원까지")
    assert not same_answer(money, "15만 원") and not same_answer(money, "")
    assert not same_answer(money, "12만 원, 15만 원, 3만 원, 5만 원")  # every figure of the chunk is no answer
    assert same_answer(Span("15일", 0, "figure", "duration"), "15 days")  # units are not compared, values are
    assert same_answer(Span("오후 6시", 0, "figure", "time"), "6 pm") and not \
        same_answer(Span("오후 6시", 0, "figure", "time"), "오전 9시")
    assert same_answer(Span("Maria Jensen", 0, "name"), "maria jensen") and not \
        same_answer(Span("Maria Jensen", 0, "name"), "Dublin")


# ---------------------------------------------------------------- the generator, with a scripted writer


def test_kept_questions_have_their_spans_as_facts_in_their_chunks_language(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    # k=6: a Korean question naming an English chunk's words is found, whatever hash embeddings rank (the round
    # trip's retrieval is tested below)
    done = question_gen.generate(kb, corpus.model(), ["bikes", "bees"], count=10, k=6)
    assert len(done.items) == 10 and set(Counter(i["kind"] for i in done.items)) == set(question_gen.KINDS)
    for item in done.items:
        chunks = [corpus.chunk_text(kb, where) for where in item["provenance"] if where["chunk_id"]]
        assert all(any(fact in chunk for chunk in chunks) for fact in item["facts"]), item
        assert not any(fact in item["question"] for fact in item["facts"])
        if chunks:
            assert bool(HANGUL.search(item["question"])) == bool(HANGUL.search(chunks[0])) == (item["lang"] == "ko")
    cross = next(i for i in done.items if i["kind"] == "cross_collection")
    assert set(cross["sources"]) == {"bikes", "bees"} and len(cross["facts"]) == 2
    pair = next(i for i in done.items if i["kind"] == "two_chunks")
    indexes = [corpus.chunk_meta(kb, where)["chunk_index"] for where in pair["provenance"]]
    assert abs(indexes[0] - indexes[1]) == 1  # neighbouring chunks of one file
    talk = next(i for i in done.items if i["kind"] == "small_talk")
    assert talk["sources"] == [] and talk["answerable"] and not talk["facts"]
    file = save_question_set(settings, "my set", done.items)
    assert [i["question"] for i in load_saved_question_set(settings, file)] == [i["question"] for i in done.items]
    assert parse_question_set('{"question": "q", "kind": "single"}')[0]["kind"] == "single"


def test_the_round_trip_keeps_a_question_whose_answer_comes_back_and_drops_the_others_with_their_reason(
        tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    # answered back with another figure of its chunk's collection (which of them is asked first depends on the plan)
    wrong = {corpus.QUESTIONS["5,000원"]: "1,000원", corpus.QUESTIONS["2,400대"]: "312곳"}
    elsewhere = "분실 신고를 하면 내야 하는 돈은 얼마인가요?"  # asked for 1시간: its retrieval finds another chunk
    scripted = corpus.model({"1시간": elsewhere, "312곳": "대여소가 312곳이라는데 몇 곳인가요?"}, answers=wrong)
    done = question_gen.generate(kb, scripted, ["bikes", "bees"], count=10, k=2)
    assert done.dropped["answer_differs"] >= 1 and not set(wrong) & {i["question"] for i in done.items}
    assert done.dropped["not_retrieved"] >= 1 and done.dropped["answer_in_question"] >= 1
    kept = [(i["question"], i["facts"]) for i in done.items if i["kind"] == "single"]
    assert kept and all([corpus.QUESTIONS[fact] for fact in facts] == [question] for question, facts in kept)
    # each kept question was asked for its span, found and answered back: the span is its fact
    asked = [h for h in corpus.humans(scripted) if corpus.TASKS["ANSWER_TASK"] in h]
    assert not any(elsewhere in h for h in asked)  # not retrieved: no answering call spent on it


def test_what_the_writer_adds_after_its_question_is_cut_off_and_the_question_kept(tmp_path, settings):
    """Qwen, asked in Korean, wrote "...얼마인가? <answer>200만 원</answer>": the answer after the question dropped
    a good question as answer_in_question."""
    kb = corpus.build(tmp_path, settings)
    question = corpus.QUESTIONS["30일"]
    scripted = corpus.model({"30일": f"{question} <answer>30일</answer> 이 질문의 답은 30일입니다."},
                            answers={question: "30일"})
    done = question_gen.generate(kb, scripted, ["bikes", "bees"], count=10, k=6)
    kept = [i for i in done.items if i["facts"] == ["30일"]]
    assert [i["question"] for i in kept] == [question] and kept[0]["kind"] == "single"
    assert question_checks.first_question("How long? 90 days.") == "How long?"
    assert question_checks.first_question("몇 시에 여나요？ 9시") == "몇 시에 여나요？"
    assert question_checks.first_question("no question mark here") == "no question mark here"


def test_a_korean_statement_is_not_a_question_and_one_that_asks_is_put_in_a_questions_form(tmp_path, settings):
    # the Korean sets kept these as written (docs/BENCHMARKS.md, session 19), then dropped them (session 20):
    # a statement with 몇 put into it asks for something, and is now asked with a question's ending
    for statement, asked in (("성과급은 연봉의 몇%를 차지합니다.", "성과급은 연봉의 몇%를 차지합니까?"),
                             ("입사 첫 주에는 몇 일 동안 온보딩 교육을 받으며, 마지막 날에 보안 서약서를 씁니다.",
                              "입사 첫 주에는 몇 일 동안 온보딩 교육을 받으며, 마지막 날에 보안 서약서를 씁니까?")):
        assert not question_checks.asks(statement, "ko"), statement
        assert question_checks.as_asked(statement, "ko") == asked
        assert question_checks.asks(asked, "ko"), asked
    # with no question word it states, and stays a statement
    assert not question_checks.asks(question_checks.as_asked("성과급은 연봉의 10%를 차지합니다.", "ko"), "ko")
    # a statement's ending with a question mark is meant as a question: it is put in a question's form and kept
    assert question_checks.as_asked("연간 교육비는 얼마까지 지원합니다?", "ko") == "연간 교육비는 얼마까지 지원합니까?"
    assert question_checks.as_asked("Is it 5 days?", "en") == "Is it 5 days?"
    for question in ("교육비는 1년에 얼마까지 지원되나요?", "연차휴가는 며칠 주어집니까?", "사무실은 몇 층에 있어?",
                     "What is the limit?"):
        assert question_checks.asks(question, question_checks.language_of(question)), question
    kb = corpus.build(tmp_path, settings)
    stated = {span: f"누비라의 {question.split()[1]} 값을 알려 드립니다." for span, question in corpus.QUESTIONS.items()
              if HANGUL.search(question)}  # every Korean question written as a statement that asks for nothing
    done = question_gen.generate(kb, corpus.model(stated), ["bikes"], count=4)
    assert done.dropped["not_a_question"] >= 1
    assert not [i for i in done.items if i["question"] in stated.values()]


def test_the_sentence_it_was_shown_with_its_blank_is_asked_for_its_span():
    """Qwen 1.5B handed back the line it was shown, blank and all, as its Korean question (session 20: 3 of 30);
    the blank becomes the words that ask for the span, by its unit."""
    def span(text, sort):
        return Span(text, 0, "figure", sort)

    assert question_checks.as_asked("인사 평가는 매년 6월과 ___에 실시합니다.", "ko", (span("12월", "date"),)) == \
        "인사 평가는 매년 6월과 몇 월에 실시합니까?"
    assert question_checks.as_asked("신규 입사자는 오전 10시까지 본사 ___ 인사팀으로 오면 됩니다.", "ko",
                                    (span("3층", "count"),)) == "신규 입사자는 오전 10시까지 본사 몇 층 인사팀으로 오면 됩니까?"
    assert question_checks.as_asked("근무 시간은 오전 9시부터 ___까지입니다.", "ko", (span("오후 6시", "time"),)) == \
        "근무 시간은 오전 9시부터 오후 몇 시까지입니까?"
    # handed back with the blank filled in, a statement of its own answer: asked for it the same way (session 23)
    assert question_checks.as_asked("신규 입사자는 첫 출근일에 오전 10시까지 본사 3층 인사팀으로 오면 됩니다.", "ko",
                                    (span("오전 10시", "time"),)) == \
        "신규 입사자는 첫 출근일에 오전 몇 시까지 본사 3층 인사팀으로 오면 됩니까?"
    assert question_checks.as_asked("연차는 15일을 줍니까?", "ko", (span("15일", "duration"),)) == "연차는 15일을 줍니까?"
    assert question_checks.asked_for(span("5일", "duration")) == "며칠"
    assert question_checks.asked_for(span("200만 원", "money")) == "얼마"
    assert question_checks.asked_for(Span("한결서재", 0, "name")) == ""
    # a name's blank cannot be asked for by a unit: it stays, and the copy check drops it
    assert "___" in question_checks.as_asked("사내 도서관 ___에서 책을 빌릴 수 있습니다.", "ko", (Span("한결서재", 0, "name"),))


def test_a_question_that_copies_a_sentence_of_its_chunk_is_dropped(tmp_path, settings, monkeypatch):
    """Qwen handed back the handbook's chunk, four sentences of it, as an unanswerable question, and one sentence
    with a vague ask as another, and the sentence it was shown, blank and all, as a single one; all were kept."""
    written = ("도서 구입비는 별도로 매달 5만 원까지 지원하며, 사내 도서관 '한결서재'에서 책을 빌릴 수도 있습니다. "
               "이에 대해 알려주세요.")
    assert question_checks.copies(written, "## 자기 계발\n도서 구입비는 별도로 매달 5만 원까지 지원하며, 사내 도서관 "
                                           "'한결서재'에서 책을 빌릴 수도 있습니다.")
    assert not question_checks.copies("직원 한 명당 연간 교육비는 얼마까지 지원하나요?",
                                      "직원 한 명당 연간 교육비는 200만 원까지 지원합니다.")
    kb = corpus.build(tmp_path, settings)
    # a stretch of every bikes chunk, so it copies whichever one it was shown (these chunks are a line each: the
    # stretch that counts as a copy is shortened to fit them)
    monkeypatch.setattr(question_checks, "COPY_CHARS", 15)
    copied = " ".join(c.page_content[:22].replace("\n", " ") for c in kb.chunks("bikes", limit=None))
    cloze = "누비라 ___ 정기권은 한 달 동안 매일 쓸 수 있습니다."  # the sentence shown to it, blank and all
    done = question_gen.generate(kb, corpus.model({"unanswerable": copied, "30일": cloze}), ["bikes", "bees"],
                                 count=10, k=6)
    assert done.dropped["copies_chunk"] >= 2, done.dropped
    assert not {copied, cloze} & {i["question"] for i in done.items}


def test_a_chunk_and_its_question_and_answer_share_the_prompt_prefix(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    scripted = corpus.model()
    question_gen.generate(kb, scripted, ["bikes"], count=1)
    write, answer = scripted.calls[0], scripted.calls[1]
    assert corpus.task(write[-1]) == "WRITE_TASK" and corpus.task(answer[-1]) == "ANSWER_TASK"
    assert write[0].content == answer[0].content == corpus.P.SYSTEM  # one system text for every call
    chunk = corpus.documents(write[-1])[0]
    assert str(write[-1].content).startswith(f"<document>\n{chunk}\n</document>")  # the chunk first, the task last
    assert str(answer[-1].content).startswith(f"<document>\n{chunk}\n</document>")


def test_the_model_is_never_asked_to_write_about_a_chunk_without_a_candidate(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    scripted = corpus.model()
    done = question_gen.generate(kb, scripted, ["bikes", "bees"], count=20)
    writing = [call[-1] for call in scripted.calls if corpus.task(call[-1]) in
               ("WRITE_TASK", "UNANSWERABLE_TASK")]
    about = Counter(corpus.heading(doc) for message in writing for doc in corpus.documents(message))
    assert writing and all(about[name] <= 1 for name in corpus.NO_CANDIDATE), about
    assert not any(about[name] for name in corpus.NO_CANDIDATE)
    spans = Counter(s for m in writing if corpus.task(m) != "UNANSWERABLE_TASK"
                    for s in corpus.re.findall(r"<answer>(.*?)</answer>", str(m.content)))
    assert spans and max(spans.values()) == 1  # each candidate is asked about once
    summary = done.summary()
    assert summary["model_calls"] == len(scripted.calls) <= summary["call_bound"]
    assert len(scripted.calls) <= 3 * done.attempts  # at most a question, its answer and one more check each


def test_an_unanswerable_question_is_kept_only_when_every_collection_lacks_the_answer(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    answered = corpus.model(answered=True)  # a search finds chunks that state the answer
    done = question_gen.generate(kb, answered, ["bikes", "bees"], count=4)
    assert done.dropped["not_absent"] >= 1 and not [i for i in done.items if i["kind"] == "unanswerable"]

    absent = corpus.model()
    done = question_gen.generate(kb, absent, ["bikes", "bees"], count=4)
    [item] = [i for i in done.items if i["kind"] == "unanswerable"]
    assert not item["answerable"] and not item["facts"] and item["sources"] in (["bikes"], ["bees"])
    assert item["question"] == corpus.MISSING[item["sources"][0]]
    checks = [call[-1] for call in absent.calls if corpus.task(call[-1]) == "ANSWERED_TASK"]
    shown = {"bikes" if HANGUL.search(doc) else "bees" for message in checks for doc in corpus.documents(message)}
    assert shown == {"bikes", "bees"}  # each collection's best chunks were read for the missing answer
    message = next(call[-1] for call in absent.calls if corpus.task(call[-1]) == "UNANSWERABLE_TASK")
    write = str(message.content)
    # shown what the collection is and a heading of it, and a detail such documents seldom state: no sentence of it
    # (modelled on a sentence, Qwen 1.5B copied it or asked for a detail it states), no candidate answer
    assert corpus.fenced(write, "collections").startswith(item["sources"][0])
    headings = {corpus.heading(c.page_content) for c in kb.chunks(item["sources"][0], limit=None)}
    assert corpus.fenced(write, "line") in headings and not corpus.documents(message) and "<answer>" not in write
    assert any(aspect in write for _sort, aspect in question_gen.P.UNANSWERABLE_ASPECTS)


def test_a_reply_that_gives_a_detail_of_the_same_sort_from_the_documents_answers_the_question():
    from core.studio.answer_spans import gives_a_span_like

    faq = "## Team plan\nOn the Team plan deleted files are kept for 365 days and $24 buys one seat."
    template = Span("90 days", 0, "figure", "duration")  # what the unanswerable question was modelled on
    assert gives_a_span_like("365 days", [faq], template)  # the documents answer it: not an unanswerable question
    assert not gives_a_span_like("", [faq], template)
    assert not gives_a_span_like("$24", [faq], template)  # another sort of detail: no answer to a "how long"
    assert not gives_a_span_like("400 days", [faq], template)  # not what the documents say


def test_an_unanswerable_question_the_documents_answer_is_dropped_though_the_verdict_says_absent(
        tmp_path, settings, monkeypatch):
    """The absence verdict alone let "How long does support take on the Team plan?" through (4 hours, stated):
    answering the question from each collection's best chunks with a detail of the template's sort drops it."""
    from core.studio.answer_spans import figure_spans as figures

    kb = corpus.build(tmp_path, settings)
    writer, template = corpus.writer(), {}
    monkeypatch.setattr(question_gen.P, "UNANSWERABLE_ASPECTS", (("money", "a fee these documents do not list"),))

    def respond(messages):
        kind, text = corpus.task(messages[-1]), str(messages[-1].content)
        if kind == "UNANSWERABLE_TASK":
            template["sort"] = "money"
        if kind == "ANSWER_TASK" and corpus.fenced(text, "question") in corpus.MISSING.values():
            alike = [s.text for doc in corpus.documents(messages[-1]) for s in figures(doc)
                     if s.sort == template.get("sort")]
            return {"answer": alike[0] if alike else ""}  # a figure of the sort asked for, read from the chunks
        return writer(messages)

    from support.scripted import ScriptedChatModel

    scripted = ScriptedChatModel(responder=respond)
    done = question_gen.generate(kb, scripted, ["bikes"], count=3)  # the third question is an unanswerable one
    assert template and done.dropped["not_absent"] >= 1, done.summary()
    assert not [i for i in done.items if i["kind"] == "unanswerable"]


def test_a_set_keeps_one_of_each_kind_the_collections_allow_though_a_kind_is_dropped_at_first(tmp_path, settings):
    """Tried once where the plan put it, an unanswerable question dropped left the set without one (1 kept in 12
    attempts over four collections): a kind the set has none of yet is written again, up to ATTEMPTS_PER_KIND."""
    kb = corpus.build(tmp_path, settings)
    writer, written = corpus.writer(), []
    stated = {"ko": "누비라 자전거의 색깔은 무엇인가요?", "en": "What colour are the apiary's hives?"}  # "answered"

    def respond(messages):
        kind, text = corpus.task(messages[-1]), str(messages[-1].content)
        if kind == "UNANSWERABLE_TASK":
            written.append(text)
            if len(written) <= 2:
                return {"question": stated["ko" if HANGUL.search(corpus.fenced(text, "line")) else "en"]}
        if kind == "ANSWERED_TASK" and corpus.fenced(text, "question") in stated.values():
            return {"answered": True}
        return writer(messages)

    from support.scripted import ScriptedChatModel

    done = question_gen.generate(kb, ScriptedChatModel(responder=respond), ["bikes", "bees"], count=6)
    assert done.dropped["not_absent"] == 2 and len(written) == 3
    kinds = [i["kind"] for i in done.items]
    assert kinds.count("unanswerable") == 1 and {"single", "small_talk", "unanswerable"} <= set(kinds), done.summary()
    # each try asks for another detail
    asked = [next(a for _s, a in question_gen.P.UNANSWERABLE_ASPECTS if a in text) for text in written]
    assert len(set(asked)) == 3


def test_a_kind_that_is_dropped_every_time_gives_its_place_to_a_single_fact(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    scripted = corpus.model(answered=True)  # every unanswerable question is "answered" by the documents
    done = question_gen.generate(kb, scripted, ["bikes", "bees"], count=4)
    assert done.dropped["not_absent"] == question_gen.ATTEMPTS_PER_KIND
    assert "unanswerable" not in [i["kind"] for i in done.items] and len(done.items) == 4, done.summary()


def test_small_talk_in_the_assistants_voice_is_dropped(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    voice = {"message": "안녕하세요! 저는 누비라 안내를 제공하는 도구입니다. 어떻게 도와드릴까요?"}
    done = question_gen.generate(kb, corpus.model({"small_talk": voice}), ["bikes"], count=6)
    assert done.dropped["assistant_voice"] >= 1 and not [i for i in done.items if i["kind"] == "small_talk"]
    assert question_checks.assistant_voice("Hi! I'm an AI assistant. How can I help you today?")
    assert not question_checks.assistant_voice("안녕하세요, 오늘 처음 써 봐요. 당신은 누구인가요?")


def test_generation_stops_when_asked_and_reports_progress_per_question(tmp_path, settings, monkeypatch):
    import types

    kb = corpus.build(tmp_path, settings)
    ticks = iter(range(0, 1000, 2))  # the generator's clock: every reading is 2 s after the last
    monkeypatch.setattr(question_gen, "time", types.SimpleNamespace(perf_counter=lambda: float(next(ticks))))
    seen = []
    done = question_gen.generate(kb, corpus.model(), ["bikes"], count=6,
                                 progress=lambda kept, wanted, line, left: seen.append((kept, wanted, line, left)),
                                 should_stop=lambda: len(seen) >= 2)
    assert done.stopped and done.attempts == 2 and len(seen) == 2
    kept = seen[-1][0]
    assert seen[-1][1] == 6 and 0 < kept <= 2
    assert seen[0][2].startswith("single: kept g001 ")  # each question's line: its kind, kept or why dropped
    assert seen[-1][3] == round((6 - kept) * 2 / kept * 2.0, 1)  # from the measured speed


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
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    assert printed["set"] == str(out) and printed["summary"]["kept"] == 4
    assert "single: kept g001" in captured.err and "model calls" in captured.err
    assert [i["question"] for i in parse_question_set(out.read_text(encoding="utf-8"))] == \
        [i["question"] for i in printed["items"]]
    assert main(["--data-dir", str(settings.data_path), "questions", "--collection", "nowhere"]) == 2


# Measured with the built-in embedder (multilingual-e5-small); the cosines are in core/studio/question_checks.py.
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

    meaning = question_checks.Meaning(get_embeddings(settings).embed_query)
    scores = {kind: [meaning.similarity(a, b) for a, b in pairs] for kind, pairs in MEANING_PAIRS.items()}
    assert all(s >= question_checks.SAME_MEANING for s in scores["same"]), scores
    assert all(s < question_checks.SAME_MEANING for s in scores["missed"] + scores["distinct"]), scores
    assert min(scores["same"]) - max(scores["distinct"]) > 0.005  # the gap the threshold sits in
    assert not any(question_checks.is_duplicate(a, [b]) for a, b in MEANING_PAIRS["same"])  # the words differ


def test_a_question_that_asks_what_a_kept_one_asks_in_other_words_is_dropped(tmp_path, settings, monkeypatch):
    from core.llm.embeddings import get_embeddings

    kb = corpus.build(tmp_path, settings, get_embeddings(settings))  # the real e5, as the app has it
    scripted = corpus.model({"30일": "정기권은 얼마인가요?", "5,000원": "정기권의 가격은 얼마인가요?"})
    meaning = question_checks.Meaning(kb.embed_query)
    assert meaning.same_as_any("정기권의 가격은 얼마인가요?", ["정기권은 얼마인가요?"])
    assert not question_checks.is_duplicate("정기권의 가격은 얼마인가요?", ["정기권은 얼마인가요?"])
    monkeypatch.setattr(question_gen, "CYCLE", ("single",))  # both questions single ones, whatever the plan
    done = question_gen.generate(kb, scripted, ["bikes"], count=10)
    questions = [i["question"] for i in done.items]
    assert done.dropped["same_meaning"] >= 1
    assert not {"정기권은 얼마인가요?", "정기권의 가격은 얼마인가요?"} <= set(questions)


# ---------------------------------------------------------------- the real embedded model

# English: on Korean chunks Qwen 1.5B still copies the answer's sentence into its question (docs/BENCHMARKS.md,
# session 15: 0 of 5 kept), so a Korean run keeps nothing to check; the checks below hold for either language
SMALL_HANDBOOK = {
    "leave.md": "## Annual leave\nAfter one year of service every employee gets 15 days of annual leave. Leave is "
                "requested in the HR system at least 3 days in advance.",
    "travel.md": "## Business travel\nHotel costs on domestic trips are paid up to 120 dollars a night. Meals are "
                 "paid at a flat 30 dollars a day.",
    "hours.md": "## Working hours\nCore working hours run from 9 am to 6 pm, and working from home is allowed twice "
                "a week.",
}


@pytest.mark.real_model
def test_end_to_end_on_the_embedded_model_every_kept_question_keeps_what_it_wrote(tmp_path, settings):
    from core.llm.embeddings import get_embeddings
    from core.llm.models import get_chat_model

    real = settings.with_(provider="embedded", model="qwen2.5-coder-1.5b-instruct")  # the default, not conftest's Gemma
    kb = KnowledgeBase(real, get_embeddings(real))
    for name, text in SMALL_HANDBOOK.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert not kb.ingest([tmp_path / name for name in SMALL_HANDBOOK], "handbook").errors
    done = question_gen.generate(kb, get_chat_model(real), ["handbook"], count=3)
    summary = done.summary()
    assert done.items, summary
    assert summary["model_calls"] <= summary["call_bound"]
    for item in done.items:
        assert item["lang"] == "en" and not HANGUL.search(item["question"])
        chunks = [corpus.chunk_text(kb, where) for where in item["provenance"] if where["chunk_id"]]
        assert all(any(fact in chunk for chunk in chunks) for fact in item["facts"]), item
        assert not any(fact in item["question"] for fact in item["facts"]), item


# ---------------------------------------------------------------- session 23: pairs, echoes, small talk by sort


def test_a_pair_is_two_questions_each_written_and_answered_from_its_own_chunk(tmp_path, settings):
    """Asked for one question needing both chunks, Qwen 1.5B put one of the two answers into it (3 of 4 Korean
    pairs), and answering both at once it gave one: each part is written and answered as a single question."""
    kb = corpus.build(tmp_path, settings)
    scripted = corpus.model()
    done = question_gen.generate(kb, scripted, ["bikes"], count=2, k=6)  # a single question, then a pair
    pair = next(i for i in done.items if i["kind"] == "two_chunks")
    assert pair["question"] == " ".join(corpus.QUESTIONS[fact] for fact in pair["facts"])
    for task in ("WRITE_TASK", "ANSWER_TASK"):
        calls = [c[-1] for c in scripted.calls if corpus.task(c[-1]) == task]
        assert len(calls) == 3 and all(len(corpus.documents(m)) == 1 for m in calls), task
    asked = [corpus.fenced(str(c[-1].content), "question") for c in scripted.calls
             if corpus.task(c[-1]) == "ANSWER_TASK"][-2:]
    assert asked == [corpus.QUESTIONS[fact] for fact in pair["facts"]]  # each part on its own


def test_the_sentences_a_reply_copies_from_its_chunk_before_its_question_are_cut():
    chunk = "## 입사\n신규 입사자는 첫 출근일에 오전 10시까지 본사 3층 인사팀으로 오면 됩니다. 사원증은 당일 발급합니다."
    echoed = ("신규 입사자는 첫 출근일에 오전 10시까지 본사 3층 인사팀으로 오면 됩니다. "
              "해외 지사 신규 입사자는 몇 시까지 오면 됩니까?")
    assert question_checks.without_echo(echoed, chunk) == "해외 지사 신규 입사자는 몇 시까지 오면 됩니까?"
    changed = "신규 입사자는 첫 출근일에 오전 10시까지 3층 인사팀으로 갑니다. 해외 지사 신규 입사자는 몇 시까지 오면 됩니까?"
    assert question_checks.without_echo(changed, chunk) == "해외 지사 신규 입사자는 몇 시까지 오면 됩니까?"  # a word changed
    only = "신규 입사자는 첫 출근일에 오전 10시까지 본사 3층 인사팀으로 오면 됩니다."
    assert question_checks.without_echo(only, chunk) == only  # nothing else: left for the copy check
    assert question_checks.without_echo("How long are files kept? For 90 days.", "Files are kept.") == \
        "How long are files kept? For 90 days."


def test_each_small_talk_message_is_asked_for_its_own_sort(tmp_path, settings):
    kb = corpus.build(tmp_path, settings)
    scripted = corpus.model()
    writer = question_gen.Writer(scripted, kb, question_gen.pools(kb, ["bikes"]))
    pool = writer.pools[0]
    for _ in range(3):
        writer.small_talk(pool)
    sorts = [next(sort for sort in corpus.P.SMALL_TALK_SORTS if sort in str(c[-1].content)) for c in scripted.calls]
    assert sorts == list(corpus.P.SMALL_TALK_SORTS)


def test_an_unanswerable_question_answered_with_its_own_subject_is_kept(tmp_path, settings):
    """gym_faq: "Who wrote the membership plans and prices for Ironwood Fitness Club?" was answered from the FAQ
    with "Ironwood Fitness Club", a name it states, and dropped as answered: the question's own words answer nothing."""
    kb = corpus.build(tmp_path, settings)
    writer = corpus.writer()
    asked = "Who is the head beekeeper of Harbor Hill Apiary?"

    def respond(messages):
        kind, text = corpus.task(messages[-1]), str(messages[-1].content)
        if kind == "UNANSWERABLE_TASK":
            return {"question": asked if "bees" in corpus.fenced(text, "collections") else corpus.MISSING["bikes"]}
        if kind == "ANSWER_TASK" and corpus.fenced(text, "question") == asked:
            return {"answer": "Harbor Hill Apiary"}  # a name the chunks state, and the question's own subject
        return writer(messages)

    from support.scripted import ScriptedChatModel

    done = question_gen.generate(kb, ScriptedChatModel(responder=respond), ["bees"], count=3)
    assert [i["question"] for i in done.items if i["kind"] == "unanswerable"] == [asked], done.summary()
    assert not question_gen._echoes("Langstroth hives", asked) and question_gen._echoes("harbor hill apiary.", asked)
