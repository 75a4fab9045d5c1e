"""Human review: the payloads graphs pass to ``interrupt()`` and the decisions that resume them.

Two kinds of pause, one shape each, shared by every pattern, the CLI and the UI:

document review  {"kind": "document_review", "node", "question", "documents": [{"id", "source",
                  "title", "page", "score", "text"}]}
    decisions    {"action": "approve", "drop": [ids]}     keep all but the dropped documents
                 {"action": "edit", "question": "..."}     retrieve again for the edited question
                 {"action": "reject", "message": "..."}    end the run: user_rejected

tool approval    {"kind": "tool_approval", "node", "question", "tool_calls": [{"id", "name", "args"}]}
    decisions    {"action": "approve"}
                 {"action": "edit", "tool_calls": [{"id", "name", "args"}]}   run these instead
                 {"action": "reject", "message": "..."}    the message goes back to the agent
"""

from __future__ import annotations

from langchain_core.documents import Document

ACTIONS = ("approve", "edit", "reject")


class ReviewDecisionError(ValueError):
    pass


def document_review(node: str, question: str, docs: list[Document]) -> dict:
    return {
        "kind": "document_review",
        "node": node,
        "question": question,
        "documents": [
            {
                "id": d.metadata.get("chunk_id") or d.metadata.get("url") or str(i),
                "source": d.metadata.get("source", "?"),
                "title": d.metadata.get("title", ""),
                "page": d.metadata.get("page"),
                "score": d.metadata.get("score"),
                "text": d.page_content,  # whole: the reviewer judges exactly what the model will read
            }
            for i, d in enumerate(docs)
        ],
    }


def tool_approval(node: str, question: str, tool_calls: list[dict]) -> dict:
    return {
        "kind": "tool_approval",
        "node": node,
        "question": question,
        "tool_calls": [{"id": c.get("id", ""), "name": c["name"], "args": dict(c.get("args") or {})}
                       for c in tool_calls],
    }


def normalise_decision(decision) -> dict:
    """Accept a dict (or a bare action string) and check it; raise a clear error otherwise."""
    if isinstance(decision, str):
        decision = {"action": decision}
    if not isinstance(decision, dict) or decision.get("action") not in ACTIONS:
        raise ReviewDecisionError(f"a review decision needs an action among {', '.join(ACTIONS)}: {decision!r}")
    if isinstance(decision.get("question"), str):  # a NUL cannot be stored in Postgres text and means nothing
        decision = {**decision, "question": decision["question"].replace("\x00", "")}
    if decision["action"] == "edit" and not (str(decision.get("question", "")).strip() or decision.get("tool_calls")):
        raise ReviewDecisionError("an edit needs a non-empty question (or edited tool calls)")
    return decision


def kept_documents(docs: list[Document], decision: dict) -> list[Document]:
    """The documents left after the reviewer's drops (ids as in the review payload)."""
    drop = set(decision.get("drop") or [])
    payload_ids = [d["id"] for d in document_review("", "", docs)["documents"]]
    return [d for d, doc_id in zip(docs, payload_ids) if doc_id not in drop]
