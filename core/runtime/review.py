"""Human review: the payloads graphs pass to ``interrupt()`` and the decisions that resume them.

Three kinds of pause, one shape each, shared by every pattern, the CLI and the UI:

document review  {"kind": "document_review", "node", "question", "documents": [{"id", "source",
                  "title", "page", "score", "text"}]}
    decisions    {"action": "approve", "drop": [ids]}     keep all but the dropped documents
                 {"action": "edit", "question": "..."}     retrieve again for the edited question
                 {"action": "reject", "message": "..."}    end the run: user_rejected

tool approval    {"kind": "tool_approval", "node", "question", "tool_calls": [{"id", "name", "args"}]}
    decisions    {"action": "approve"}
                 {"action": "edit", "tool_calls": [{"id", "name", "args"}]}   run these instead
                 {"action": "reject", "message": "..."}    the message goes back to the agent

answer review    {"kind": "answer_review", "node", "question", "answer", "claims": [{"id", "text", "verdict",
                  "evidence", "reason"}]}
    decisions    {"action": "approve"}                     the answer stands, with its marks
                 {"action": "drop", "claims": [ids]}       those sentences are removed, the rest checked again
                 {"action": "edit", "answer": "..."}       the reviewer's text replaces the answer, checked again
                 {"action": "revise", "message": "..."}    the answer is written again with the note, then reviewed
                 {"action": "reject", "message": "..."}    end the run: user_rejected

Any decision may carry ``"reviewer": name``; the trace records it.
"""

from __future__ import annotations

from langchain_core.documents import Document

ACTIONS = ("approve", "edit", "reject")
ANSWER_ACTIONS = ("approve", "drop", "edit", "revise", "reject")
KINDS = ("document_review", "tool_approval", "answer_review")


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


def answer_review(node: str, question: str, answer: str, claims: list[dict]) -> dict:
    """The answer-review payload: the draft and each sentence with its mark, quoted evidence and reason."""
    return {
        "kind": "answer_review",
        "node": node,
        "question": question,
        "answer": answer,
        "claims": [{"id": claim_id(i), "text": c.get("text", ""), "verdict": c.get("verdict", "unchecked"),
                    "evidence": list(c.get("evidence") or []), "reason": c.get("reason", "")}
                   for i, c in enumerate(claims)],
    }


def claim_id(index: int) -> str:
    """A sentence's id in an answer review: its place in the answer, from 1 ("c1", "c2", ...)."""
    return f"c{index + 1}"


def normalise_decision(decision, kind: str | None = None) -> dict:
    """Accept a dict (or a bare action string) and check it against the pause's ``kind`` (None: any kind's
    actions); raise a clear error otherwise."""
    if isinstance(decision, str):
        decision = {"action": decision}
    actions = ANSWER_ACTIONS if kind in (None, "answer_review") else ACTIONS
    if not isinstance(decision, dict) or decision.get("action") not in actions:
        raise ReviewDecisionError(f"a review decision needs an action among {', '.join(actions)}: {decision!r}")
    for name in ("question", "answer", "message", "reviewer"):  # a NUL cannot be stored in Postgres text
        if isinstance(decision.get(name), str):
            decision = {**decision, name: decision[name].replace("\x00", "")}
    action = decision["action"]
    if kind == "answer_review":
        if action == "edit" and not str(decision.get("answer", "")).strip():
            raise ReviewDecisionError("an edit of the answer needs the new answer's text")
        if action == "drop" and not [c for c in decision.get("claims") or [] if str(c).strip()]:
            raise ReviewDecisionError("a drop needs the ids of the sentences to drop (as in the review: c1, c2, ...)")
        return decision
    if action in ("drop", "revise"):  # kind unknown: the node that reads it checks it against its pause
        return decision
    if action == "edit" and not (str(decision.get("question", "")).strip() or decision.get("tool_calls")
                                 or str(decision.get("answer", "")).strip()):
        raise ReviewDecisionError("an edit needs a non-empty question (or edited tool calls, or an answer)")
    return decision


def kept_documents(docs: list[Document], decision: dict) -> list[Document]:
    """The documents left after the reviewer's drops (ids as in the review payload)."""
    drop = set(decision.get("drop") or [])
    payload_ids = [d["id"] for d in document_review("", "", docs)["documents"]]
    return [d for d, doc_id in zip(docs, payload_ids) if doc_id not in drop]
