"""Shared grading helpers."""

from scripted import ScriptedChatModel

from core.llm import graders


def test_ask_many_reports_progress_once_per_input_even_when_a_retry_follows():
    replies = iter(['{"relevant": "yes"}', "not json", '{"relevant": "no"}', '{"relevant": "yes"}'])
    model = ScriptedChatModel(responder=lambda m: next(replies))
    seen = []
    outcomes = graders.ask_many(model, graders.Relevance, "system", ["a", "b", "c"], graders.Relevance(relevant="no"),
                                1, progress=lambda done, total: seen.append((done, total)))
    assert [o.value.relevant for o in outcomes] == ["yes", "yes", "no"]  # b was retried
    assert seen[:3] == [(1, 3), (2, 3), (3, 3)] and all(d <= 3 for d, _ in seen)


def test_the_per_document_graders_start_as_the_answer_does_and_name_the_document_they_judge():
    """One prefix for the graders, the answer and its check: a local model reads the documents once."""
    from langchain_core.documents import Document

    from core.prompts import documents_system

    docs = [Document(page_content=f"Dish {i} costs {i},000 won.", metadata={"source": "menu.md"}) for i in (1, 2, 3)]
    model = ScriptedChatModel(responder=lambda m: {"relevant": "yes", "grade": "correct", "confidence": 0.9})
    graders.grade_documents(model, "What does dish 2 cost?", docs, 1)
    graders.crag_grade(model, "What does dish 2 cost?", docs, 1)
    answer_system = documents_system(docs)
    assert len(model.calls) == 6
    assert all(str(call[0].content).startswith(answer_system) for call in model.calls)
    named = [str(call[-1].content) for call in model.calls]
    assert [("document [1]" in h, "document [2]" in h, "document [3]" in h) for h in named[:3]] == [
        (True, False, False), (False, True, False), (False, False, True)]
    assert all("costs" not in h for h in named)  # the documents are not repeated after the question
