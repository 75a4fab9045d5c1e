"""Human review on every pattern that retrieves: each pauses before its answer with the documents the answer
will use; approve (with drops), reject and an edited question behave the same everywhere."""

import pytest
from langchain_core.messages import AIMessage

from core.knowledge import entity_graph as eg
from core.knowledge.base import SAMPLES_DIR, KnowledgeBase
from core.prompts import agents as A
from core.prompts import answer_request
from core.run.runner import resume, run
from core.runtime.context import make_context
from core.store.history import thread_history
from support.scripted import ScriptedChatModel
from support.workflow_script import Script, role_of

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"
PASTA = "트러플 크림 파스타 가격은 얼마인가요?"
PAIRING = "시그니처 스테이크에 어울리는 와인은 무엇인가요?"
PASTA_PAIRING = "트러플 크림 파스타에 어울리는 와인은 무엇인가요?"
ANSWER = "리뷰를 거친 답변입니다 [1]."
# pattern -> (question, edited question, the node that writes the answer)
CASES = {
    "basic": (STEAK, PASTA, "generate"),
    "self_rag": (STEAK, PASTA, "generate"),
    "corrective": (STEAK, PASTA, "generate"),
    "agentic": (STEAK, PASTA, "generate"),
    "graph_rag": (PAIRING, PASTA_PAIRING, "generate"),
    "rag_fusion": (STEAK, PASTA, "generate"),
}


def _starts(system: str, prompt: str) -> bool:
    return system.startswith(prompt.split("{")[0][:60])


def _wine_triples(text: str) -> dict:
    """What a perfect extractor reads off one call's numbered wine-list chunks: each wine and its dishes."""
    triples, wine, chunk = [], None, 0
    for line in text.splitlines():
        if line.startswith("Chunk ") and line.rstrip(":")[6:].isdigit():
            chunk, wine, count = int(line.rstrip(":")[6:]), None, 0
        elif line.startswith("## ") and line[3:4].isdigit():
            wine = line.split(". ", 1)[-1].strip()
        elif wine and line.startswith("- 어울리는 음식:"):
            for dish in (d.strip() for d in line.split(":", 1)[1].split(",")):
                if dish and count < 5:  # at most five facts a chunk, as the extraction asks
                    triples.append({"c": chunk, "s": wine, "r": "어울리는 음식", "o": dish})
                    count += 1
    return {"t": triples}


def _every_strip(messages) -> dict:
    """Knowledge refinement keeps every sentence (one verdict per numbered sentence)."""
    return {"verdicts": ["yes" for line in messages[-1].content.splitlines() if "<document>" in line]}


def _rewrites(messages) -> dict:
    """RAG-Fusion's rewriter: the question it was given, reworded once."""
    question = str(messages[-1].content).split("Question: ", 1)[-1]
    return {"queries": [f"{question} 메뉴 가격"]}


class Model:
    """One scripted model (answerer and grader) for every pattern; records the prompts answers were written from."""

    def __init__(self):
        self.script = Script(retrieval={"kind": "lookup"}, sources={"sources": ["restaurant_menu"]},
                             relevance={"relevant": "yes"}, crag=[{"grade": "correct", "confidence": 0.9}],
                             strip=_every_strip,
                             grounded={"grounded": "yes"}, usefulness={"useful": "yes", "score": 5},
                             answer=self._answer, direct="안녕하세요!", fusion=_rewrites)
        self.answers: list = []  # the messages of every call that wrote the answer

    def _answer(self, messages):
        self.answers.append(messages)
        return ANSWER

    def __call__(self, messages):
        system = str(messages[0].content)
        if _starts(system, A.AGENT_SYSTEM):  # the agent searches with the question it was given
            query = messages[-1].content
            return AIMessage("", tool_calls=[{"name": "search_documents", "args": {"query": query}, "id": "c1",
                                              "type": "tool_call"}])
        if _starts(system, A.CITED_ANSWER_SYSTEM) or _starts(system, A.GRAPH_ANSWER_SYSTEM):
            return self._answer(messages)
        if _starts(system, A.GRAPH_EXTRACT_SYSTEM):
            return _wine_triples(messages[-1].content)
        if _starts(system, A.GRAPH_ENTITIES_SYSTEM):
            return {"entities": ["트러플 크림 파스타" if "트러플" in messages[-1].content else "시그니처 스테이크"]}
        role_of(messages)  # an unknown prompt fails here, by name
        return self.script(messages)

    def read(self) -> str:
        """Everything the last answer call was given (system prompt and question)."""
        return "\n".join(str(m.content) for m in self.answers[-1])


@pytest.fixture(scope="module")
def wine_settings(tmp_path_factory):
    """Graph RAG's data: the sample wine list alone, in a data directory of its own (its graph is built once)."""
    from core.config import load_settings

    settings = load_settings(data_dir=str(tmp_path_factory.mktemp("graph") / "data"), provider="embedded")
    assert not KnowledgeBase(settings).ingest([SAMPLES_DIR / "restaurant_wine.md"], "wine").errors
    eg._cache.clear()
    return settings.with_(k=2, graph_wait=True)  # the review is of the whole graph's relations


@pytest.fixture
def case(request, sample_settings, wine_settings):
    pattern = request.param
    settings = wine_settings if pattern == "graph_rag" else sample_settings.with_(k=2, max_rewrites=1, max_generations=1)
    model = Model()
    scripted = ScriptedChatModel(responder=model)
    ctx = make_context(settings, llm=scripted, grader=scripted,
                       web=lambda q: pytest.fail(f"no pattern here should search the web ({q})"))
    question, edited, answer_node = CASES[pattern]
    return {"pattern": pattern, "settings": settings, "ctx": ctx, "model": model, "question": question,
            "edited": edited, "answer_node": answer_node}


def _pause(c):
    paused = run(c["pattern"], c["question"], c["settings"], ctx=c["ctx"], review=True)
    assert paused["interrupted"], f"{c['pattern']} did not pause for review"
    payload = paused["interrupt"]
    assert payload["kind"] == "document_review" and payload["node"] == "review_documents"
    assert payload["question"] == c["question"] and len(payload["documents"]) >= 2
    assert c["model"].answers == []  # nothing was answered before the reviewer decided
    return paused, payload


def _resume(c, paused, decision):
    return resume(paused["thread_id"], decision, c["settings"], ctx=c["ctx"], review=True)


@pytest.mark.parametrize("case", list(CASES), indirect=True)
def test_pauses_before_answering_and_the_model_reads_only_the_kept_documents(case):
    paused, payload = _pause(case)
    kept, dropped = payload["documents"][0], payload["documents"][-1]
    done = _resume(case, paused, {"action": "approve", "drop": [dropped["id"]]})
    assert done["termination_reason"] in ("answered", "accepted") and done["answer"] == ANSWER
    path = done["path"]
    assert path.index("review_documents") < path.index(case["answer_node"])
    read = case["model"].read()
    # line by line: Graph RAG's prompt lists the relations in graph order, its review groups them by chunk
    assert all(line in read for line in kept["text"].splitlines())
    only_dropped = [line for line in dropped["text"].splitlines() if line.strip() and line not in kept["text"]]
    assert only_dropped and not any(line in read for line in only_dropped)
    assert len(done["sources"]) == len(payload["documents"]) - 1


@pytest.mark.parametrize("case", list(CASES), indirect=True)
def test_reject_ends_the_run_without_an_answer(case):
    paused, _ = _pause(case)
    done = _resume(case, paused, {"action": "reject", "message": "오래된 정보"})
    assert done["termination_reason"] == "user_rejected" and "오래된 정보" in done["termination_message"]
    assert done["answer"] == "" and case["model"].answers == []


@pytest.mark.parametrize("case", list(CASES), indirect=True)
def test_an_edited_question_is_searched_again_reviewed_again_and_answered(case):
    paused, first = _pause(case)
    again = _resume(case, paused, {"action": "edit", "question": case["edited"]})
    assert again["interrupted"], "the edited question's documents are shown for review again"
    assert again["interrupt"]["question"] == case["edited"]
    new_texts = [d["text"] for d in again["interrupt"]["documents"]]
    assert new_texts and new_texts != [d["text"] for d in first["documents"]]
    assert any("트러플" in text for text in new_texts)  # found for the edited question, not the old one
    done = _resume(case, again, {"action": "approve"})
    assert done["answer"] == ANSWER and case["model"].answers[-1][-1].content.startswith(
        answer_request(case["edited"]))  # Graph RAG adds the form of its answer after it
    assert done["edited_question"] == case["edited"] and done["question"] == case["question"]
    [turn] = thread_history(case["settings"], done["thread_id"])
    assert turn["question"] == case["edited"] and turn["answer"] == ANSWER  # the chat shows what was answered


@pytest.mark.parametrize("case", ["basic"], indirect=True)
def test_dropping_every_document_ends_the_run_instead_of_answering_from_nothing(case):
    paused, payload = _pause(case)
    done = _resume(case, paused, {"action": "approve", "drop": [d["id"] for d in payload["documents"]]})
    assert done["termination_reason"] == "user_rejected"
    assert done["termination_message"] == "the reviewer dropped every document: nothing to answer from"
    assert case["model"].answers == []
