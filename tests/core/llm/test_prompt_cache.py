"""The embedded model's prompt-state cache, on the real Gemma 3 270M: same answers, fewer tokens read.

Before the cache, every prompt family re-read the documents the previous family had read (llama.cpp
keeps only the live context); these tests hold the cache to its contract: at temperature 0 an answer
with the cache is token-for-token the answer without it, the byte cap holds, a model switch empties
it, and callers on several threads get what they would get alone.
"""

import math
import threading

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from core.llm import graders
from core.llm.embedded_llm import PROMPT_CACHE, EmbeddedChatModel, embedded_model_path
from core.llm.prompt_cache import BLOCK, reusable

GEMMA = "gemma-3-270m"
DOCS = "\n".join(f"<document>[{i}] The bistro serves Special {i}, priced at {10000 + i * 1500} won, with a "
                 f"glass of house wine number {i}. Reservations for dish {i} close at {17 + i % 4} o'clock.</document>"
                 for i in range(1, 7))
GRADER = "You check documents and answers for a question-answering assistant; do the task at the end.\n\n" + DOCS


def families(question: str) -> list[tuple[str, list, bool]]:
    """Prompt families in the order a pattern calls them: grade, answer, an unrelated rewrite, check."""
    return [
        ("grade", [SystemMessage(GRADER), HumanMessage(f"Question: {question}\nTask: are the documents relevant?")], True),
        ("answer", [SystemMessage(GRADER), HumanMessage(f"Question: {question}\nTask: answer from the documents.")], False),
        ("rewrite", [SystemMessage("Rewrite the question for a search engine."), HumanMessage(question)], False),
        ("check", [SystemMessage(GRADER), HumanMessage(f"Question: {question}\nTask: is an answer grounded?")], True),
    ]


def call(model: EmbeddedChatModel, messages: list, structured: bool):
    if structured:
        return model.with_structured_output(graders.Relevance, include_raw=True).invoke(messages)["raw"]
    return model.invoke(messages)


def run_sequence(cache_mb: int, model_path: str | None = None) -> tuple[list[str], int, int]:
    """Every family for two questions; the replies, prompt tokens read and prompt tokens sent."""
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=32, cache_mb=cache_mb, model_path=model_path)
    replies, read, sent = [], 0, 0
    for question in ("What does Special 3 cost?", "Which dish closes latest?"):
        for _name, messages, structured in families(question):
            reply = call(model, messages, structured)
            replies.append(reply.content)
            read += reply.response_metadata["prompt_eval_tokens"]
            sent += reply.response_metadata["prompt_tokens"]
    return replies, read, sent


def test_reuse_is_whole_blocks_before_the_prompts_last_block():
    assert reusable(0, 500) == 0
    assert reusable(BLOCK - 1, 500) == 0
    assert reusable(3 * BLOCK + 5, 500) == 3 * BLOCK
    assert reusable(500, 500) == 499 // BLOCK * BLOCK  # the last token is always read, with its block
    assert reusable(2 * BLOCK, 2 * BLOCK) == BLOCK


@pytest.mark.real_model
def test_answers_with_the_cache_are_the_answers_without_it_and_cost_fewer_tokens():
    without, read_without, sent = run_sequence(cache_mb=0)
    with_cache, read_with, sent_again = run_sequence(cache_mb=64)
    assert with_cache == without
    assert sent_again == sent
    assert read_with < 0.6 * read_without, (read_with, read_without)  # the shared documents were read once
    assert PROMPT_CACHE.stats.restores > 0


@pytest.mark.real_model
def test_the_byte_cap_evicts_the_oldest_states_and_never_holds_more():
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=8, cache_mb=64)
    PROMPT_CACHE.clear()
    model.invoke([SystemMessage(GRADER), HumanMessage("Question: one?")])
    one_state = PROMPT_CACHE.stats.bytes_held
    assert one_state > 2**20  # a few MB: the cap below holds one state of this size, not two
    model.cache_mb = math.ceil(1.5 * one_state / 2**20)
    evictions = PROMPT_CACHE.stats.evictions
    for n in range(3):
        model.invoke([SystemMessage(f"Variant {n}. " + GRADER), HumanMessage("Question: two?")])
        assert 0 < PROMPT_CACHE.stats.bytes_held <= model.cache_mb * 2**20
    assert PROMPT_CACHE.stats.evictions >= evictions + 3
    assert PROMPT_CACHE.stats.entries == 1


@pytest.mark.real_model
def test_a_model_switch_empties_the_cache(tmp_path):
    run_sequence(cache_mb=64)
    assert PROMPT_CACHE.stats.entries > 0
    other = tmp_path / "other-model.gguf"  # the same weights under another file: another model to the cache
    other.symlink_to(embedded_model_path(GEMMA))
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=8, cache_mb=64, model_path=str(other))
    model.invoke([SystemMessage("Say hello."), HumanMessage("hello")])
    assert PROMPT_CACHE.stats.model == str(other)
    assert PROMPT_CACHE.stats.entries <= 1  # only the state of the call just made


@pytest.mark.real_model
def test_callers_on_several_threads_get_what_they_would_get_alone():
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=24, cache_mb=64)
    jobs = [msgs for question in ("What does Special 2 cost?", "Which wine comes with dish 5?")
            for _name, msgs, structured in families(question) if not structured]
    alone = [model.invoke(messages).content for messages in jobs]
    together: list[str | None] = [None] * len(jobs)

    def work(i: int) -> None:
        together[i] = model.invoke(jobs[i]).content

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert together == alone


@pytest.mark.real_model
def test_the_graders_read_the_documents_and_the_answer_and_its_check_do_not_read_them_again():
    """Self-RAG's written grades share one prefix with its answer and grounded check. (Its grades read from
    probabilities take the one-document layout, which measured far better: they read each document again.)"""
    from langchain_core.documents import Document

    from core.llm.verdicts import written_verdicts
    from core.prompts import answer_request, documents_system

    docs = [Document(page_content=f"The bistro serves Special {i}, priced at {10000 + i * 1500} won, with house wine "
                                  f"number {i}. Reservations for dish {i} close at {17 + i % 4} o'clock.",
                     metadata={"source": "menu.md", "page": 1}) for i in range(1, 7)]
    question = "What does Special 3 cost?"
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=24, cache_mb=64)
    PROMPT_CACHE.clear()
    with written_verdicts():
        graders.grade_documents_for_answer(model, question, docs, 1)
    # an unrelated call in between: the documents' state must come back from the cache, not the live context
    model.invoke([SystemMessage("Rewrite the question for a search engine."), HumanMessage(question)])
    answer = model.invoke([SystemMessage(documents_system(docs)), HumanMessage(answer_request(question))])
    meta = answer.response_metadata
    assert meta["prompt_tokens"] > 4 * BLOCK  # the documents are most of the prompt ...
    assert meta["prompt_eval_tokens"] <= 2 * BLOCK and meta["restored_prompt_tokens"] > 0  # ... and were not read again
    restores = PROMPT_CACHE.stats.restores
    graders.grade_grounded(model, docs, str(answer.content), question)
    assert PROMPT_CACHE.stats.restores == restores  # the live context already held the documents
