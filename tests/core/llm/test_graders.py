"""Shared grading helpers."""

from core.llm import graders
from support.scripted import ScriptedChatModel


def test_ask_many_reports_progress_once_per_input_even_when_a_retry_follows():
    replies = iter(['{"relevant": "yes"}', "not json", '{"relevant": "no"}', '{"relevant": "yes"}'])
    model = ScriptedChatModel(responder=lambda m: next(replies))
    seen = []
    outcomes = graders.ask_many(model, graders.Relevance, "system", ["a", "b", "c"], graders.Relevance(relevant="no"),
                                1, progress=lambda done, total: seen.append((done, total)))
    assert [o.value.relevant for o in outcomes] == ["yes", "yes", "no"]  # b was retried
    assert seen[:3] == [(1, 3), (2, 3), (3, 3)] and all(d <= 3 for d, _ in seen)



def test_self_rags_relevance_grades_start_as_its_answer_does_and_name_the_document_they_judge():
    """One prefix for the grades, the answer and its check: a local model reads the documents once."""
    from langchain_core.documents import Document

    from core.prompts import documents_system

    docs = [Document(page_content=f"Dish {i} costs {i},000 won.", metadata={"source": "menu.md"}) for i in (1, 2, 3)]
    model = ScriptedChatModel(responder=lambda m: {"relevant": "yes"})
    graders.grade_documents_for_answer(model, "What does dish 2 cost?", docs, 1)
    assert len(model.calls) == 3
    assert all(str(call[0].content).startswith(documents_system(docs)) for call in model.calls)
    named = [str(call[-1].content) for call in model.calls]
    assert [[f"document [{n}]" in h for n in (1, 2, 3)] for h in named] == [
        [True, False, False], [False, True, False], [False, False, True]]
    assert all("costs" not in h for h in named)  # the documents are not repeated after the question


def test_the_other_per_document_graders_read_one_document_each_after_a_shared_grader_text():
    """Corrective answers from refined strips, and Agentic with its own labelled context: their grades read
    one document each, so a document graded once for a question is restored for the next grader of it."""
    from langchain_core.documents import Document

    docs = [Document(page_content=f"Dish {i} costs {i},000 won.", metadata={"source": "menu.md"}) for i in (1, 2)]
    model = ScriptedChatModel(responder=lambda m: {"relevant": "yes", "grade": "correct", "confidence": 0.9})
    graders.grade_documents(model, "What does dish 2 cost?", docs, 1)
    graders.crag_grade(model, "What does dish 2 cost?", docs, 1)
    humans = [str(call[-1].content) for call in model.calls]
    assert all(str(call[0].content).startswith(graders.P.GRADER_SYSTEM) for call in model.calls)
    assert [("Dish 1" in h, "Dish 2" in h) for h in humans] == [(True, False), (False, True)] * 2
    assert humans[0].split("Task:")[0] == humans[2].split("Task:")[0]  # relevance and CRAG: one prefix per document
