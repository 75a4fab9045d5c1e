"""The shared tail of every pattern's graph: the claim check of the answer, then the reviewer's pause on it.

The registry adds it to each pattern's graph (``add_answer_tail``): every edge the pattern sends to END goes to
``verify`` instead, which checks each sentence of the answer against the run's sources (core.llm.claims, its cost
kept apart from the pattern's) and, when this turn asked for answer review (``review_answer``: off | unsupported |
always), goes on to ``review_answer``: the reviewer approves, drops sentences, edits, sends the draft back
(``revise_answer`` writes it again once per request, within ``max_generations``) or rejects. A pattern module
declares only its own nodes.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Literal

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from core import prompts
from core.llm.claims.check import claim_mode, verify_answer
from core.llm.claims.spans import without_sentences
from core.patterns.common import USER_REJECTED
from core.runtime.context import RunContext
from core.runtime.review import answer_review, normalise_decision
from core.runtime.trace import Reason, event, stop

VERIFY, REVIEW, REVISE = "verify", "review_answer", "revise_answer"
TAIL_NODES = (VERIFY, REVIEW, REVISE)
CHECK_NODES = frozenset({VERIFY, REVIEW})  # their model calls are the claim check's cost, not the pattern's
ANSWER_NODES = frozenset({REVISE})  # its tokens stream into the chat bubble like the pattern's answer
REVIEW_MODES = ("off", "unsupported", "always")
REVISIONS_SPENT = Reason("revisions_exhausted", "the reviewer asked for another draft; the regeneration budget is spent",
                         "검토자가 다시 쓰기를 요청했지만 재생성 한도를 다 썼음", "budget")
TAIL_REASONS = (USER_REJECTED, REVISIONS_SPENT)  # every pattern can end with these once its answer is reviewed
# runs that stopped without an answer written from documents: nothing to check a sentence against
UNCHECKED_OUTCOMES = frozenset({"direct", "rejected", "error", "stopped", ""})
DOUBTFUL = ("unsupported", "unchecked")  # the marks that make review_answer=unsupported pause


def review_mode(value) -> str:
    """The answer-review mode a setting or option names (RAG_REVIEW_ANSWER); anything else means off."""
    mode = str(value or "off").strip().lower()
    return mode if mode in REVIEW_MODES else "off"


def should_verify(state: dict, ctx: RunContext, outcome_of: Callable[[str], str]) -> bool:
    """A finished answer written from sources, and checking not switched off."""
    return (claim_mode(ctx.settings) != "off" and bool(state.get("answer")) and bool(state.get("sources"))
            and outcome_of(state.get("termination_reason") or "") not in UNCHECKED_OUTCOMES)


def check_answer(ctx: RunContext, state: dict, answer: str) -> dict:
    """The claim check of ``answer`` against the run's sources: ``claims``, ``claim_support``, ``cost``, ``mode``...

    It runs apart from the graph's callbacks, as it did when the runner ran it after the graph: a streamed run
    would make the model stream its verdicts (a scripted or OpenAI-style stream reports no token usage) and count
    them as the node's; alone, the model answers whole and the check's cost is its own (core.llm.claims).
    """
    question = state.get("standalone_question") or state.get("question") or ""

    def check() -> dict:
        var_child_runnable_config.set(None)  # in this copy of the context only
        return verify_answer(ctx.settings, answer, state.get("sources") or [], question=question, model=ctx.grader)

    return contextvars.copy_context().run(check)


def cost_of(checked: dict, earlier: dict | None = None) -> dict:
    """The run's ``verification`` record: this check's cost, added to the checks before it in the turn."""
    earlier = earlier or {}
    cost = {**checked["cost"], "mode": checked["mode"], "note": checked["note"], "error": checked["error"]}
    for key in ("llm_calls", "prompt_tokens", "completion_tokens", "tokens", "model_ms", "ms"):
        cost[key] = int(cost.get(key) or 0) + int(earlier.get(key) or 0)
    return cost


def trace_event(checked: dict, node: str = "verification") -> dict:
    """The "verification" trace entry: what was found and what it cost, apart from the pattern's nodes."""
    support = checked["claim_support"]
    cost = checked["cost"]
    summary = (f"{support['supported']} of {support['claims']} claims supported, {support['unsupported']} unsupported, "
               f"{support['unchecked']} unchecked")
    return event(node, "verdict", grader="claims", target="answer", verdict=summary,
                 reason=checked.get("note") or checked.get("error") or None, ms=cost["ms"], llm_calls=cost["llm_calls"],
                 tokens=cost["tokens"], counters={"model_checks_budget_left_out": support["not_checked_budget"]})


def make_verify(outcome_of: Callable[[str], str]):
    """Node ``verify``: the claim check of the answer the pattern wrote (``outcome_of``: a termination reason's
    outcome class, from the registry)."""

    def verify(state: dict, runtime: Runtime[RunContext]) -> dict:
        """Node: check every sentence of the answer against the run's sources; nothing when there is nothing to check."""
        if not should_verify(state, runtime.context, outcome_of):
            return {}
        checked = check_answer(runtime.context, state, state["answer"])
        return {"claims": checked["claims"], "claim_support": checked["claim_support"],
                "verification": cost_of(checked, state.get("verification")), "trace": [trace_event(checked)]}

    return verify


def route_after_verify(state: dict) -> Literal["review_answer", "__end__"]:
    """Router: to the reviewer when this turn asked for answer review and the answer calls for it, else the end."""
    mode = review_mode(state.get("review_answer"))
    if mode == "off" or state.get("answer_settled") or not state.get("answer"):
        return END
    if mode == "always":
        return REVIEW
    return REVIEW if any(c.get("verdict") in DOUBTFUL for c in state.get("claims") or []) else END


def marks(claims: list[dict]) -> list[str]:
    """Each sentence's mark, in order: what the trace records before and after a reviewer's change."""
    return [c.get("verdict", "") for c in claims or []]


def review_answer(state: dict, runtime: Runtime[RunContext]) -> Command:
    """Node: pause with the draft and each sentence's mark; resume with approve / drop / edit / revise / reject."""
    question = state.get("standalone_question") or state.get("question") or ""
    claims = state.get("claims") or []
    payload = answer_review(REVIEW, question, state.get("answer", ""), claims)
    decision = normalise_decision(interrupt(payload), "answer_review")
    action, who = decision["action"], str(decision.get("reviewer") or "").strip()[:80] or None
    if action == "approve":
        note = event(REVIEW, "interrupt", verdict="approve", target="answer", reviewer=who,
                     reason=f"answer approved with {len(claims)} sentence(s)", marks=marks(claims))
        return Command(goto=END, update={"trace": [note], "answer_settled": True})
    if action == "reject":
        message = decision.get("message") or "no reason given"
        note = event(REVIEW, "interrupt", verdict="reject", target="answer", reviewer=who, marks=marks(claims),
                     reason=f"rejected by the reviewer: {message}")
        update = stop(REVIEW, "user_rejected", f"rejected by the reviewer: {message}")
        return Command(goto=END, update={**update, "trace": [note, *update["trace"]], "answer": "", "sources": [],
                                         "drafts": [draft(state, "reject", who)], "answer_settled": True,
                                         "messages": replaced_answer(state, "")})
    if action == "revise":
        return send_back(state, runtime.context, decision, who)
    return changed_answer(state, runtime.context, decision, who, payload)


def draft(state: dict, decision: str, reviewer: str | None) -> dict:
    """A draft the reviewer changed, as exports carry it beside the final answer."""
    return {"answer": state.get("answer", ""), "claims": list(state.get("claims") or []),
            "claim_support": dict(state.get("claim_support") or {}), "decision": decision,
            **({"reviewer": reviewer} if reviewer else {})}


def replaced_answer(state: dict, answer: str) -> list:
    """The turn's answer in the conversation replaced (same message id), or removed when ``answer`` is empty."""
    last = next((m for m in reversed(state.get("messages") or []) if m.type == "ai"), None)
    if last is None or not last.id:
        return [AIMessage(answer)] if answer else []
    return [AIMessage(answer, id=last.id)] if answer else [RemoveMessage(id=last.id)]


def changed_answer(state: dict, ctx: RunContext, decision: dict, who: str | None, payload: dict) -> Command:
    """A drop or an edit: the new text replaces the answer, is checked again, and its marks are the ones kept."""
    before, places = state.get("claims") or [], set()
    if decision["action"] == "drop":
        ids = {str(i).strip() for i in decision.get("claims") or []}
        known = {c["id"] for c in payload["claims"]}
        unknown = sorted(ids - known)
        if unknown:  # a reviewer must never believe a sentence went that did not
            raise ValueError(f"no sentence {', '.join(unknown)} in this answer (it has {', '.join(sorted(known))})")
        places = {i for i, c in enumerate(payload["claims"]) if c["id"] in ids}
        answer = without_sentences(state.get("answer", ""), places)
        what = f"dropped {len(places)} sentence(s): " + "; ".join(before[i]["text"] for i in sorted(places))
    else:
        answer = str(decision["answer"]).strip()
        what = "answer edited by the reviewer"
    if not answer:
        update = stop(REVIEW, "user_rejected", "the reviewer dropped every sentence: no answer is given")
        return Command(goto=END, update={**update, "answer": "", "sources": [], "answer_settled": True,
                                         "drafts": [draft(state, decision["action"], who)],
                                         "messages": replaced_answer(state, "")})
    checked = check_answer(ctx, state, answer) if claim_mode(ctx.settings) != "off" and state.get("sources") else None
    after = checked["claims"] if checked else []
    note = event(REVIEW, "interrupt", verdict=decision["action"], target="answer", reviewer=who, reason=what,
                 marks=marks(before), marks_after=marks(after),
                 dropped=[before[i]["text"] for i in sorted(places)] or None)
    update = {"answer": answer, "messages": replaced_answer(state, answer), "answer_settled": True,
              "drafts": [draft(state, decision["action"], who)], "trace": [note]}
    if checked:
        update.update(claims=after, claim_support=checked["claim_support"],
                      verification=cost_of(checked, state.get("verification")))
        update["trace"] = [note, trace_event(checked)]
    return Command(goto=END, update=update)


def send_back(state: dict, ctx: RunContext, decision: dict, who: str | None) -> Command:
    """A revise: the draft goes back to be written again with the note, while the regeneration budget lasts."""
    used, budget = int(state.get("answer_revisions") or 0), ctx.settings.max_generations
    message = str(decision.get("message") or "").strip()
    counters = {"revisions": used, "max_generations": budget}
    if used >= budget:
        why = f"the reviewer asked for another draft, but {used} of {budget} regeneration(s) are spent: the answer stands"
        note = event(REVIEW, "interrupt", verdict="revise", target="answer", reviewer=who, reason=message or None,
                     counters=counters)
        update = stop(REVIEW, "revisions_exhausted", why, counters=counters)
        return Command(goto=END, update={**update, "trace": [note, *update["trace"]], "answer_settled": True})
    note = event(REVIEW, "interrupt", verdict="revise", target="answer", reviewer=who, marks=marks(state.get("claims")),
                 reason=f"sent back for draft {used + 2}: {message or 'no note'}",
                 counters={**counters, "revisions": used + 1})
    return Command(goto=REVISE, update={"trace": [note], "answer_revisions": used + 1, "revision_note": message,
                                        "drafts": [draft(state, "revise", who)]})


def sources_as_documents(sources: list[dict]) -> list[Document]:
    """The run's sources as the documents the answer cited, numbered as before ([1] is still [1])."""
    return [Document(s.get("text", ""), metadata={k: s.get(k) for k in ("source", "title", "page", "url", "chunk_id")
                                                  if s.get(k) is not None}) for s in sources]


def revise_answer(state: dict, runtime: Runtime[RunContext]) -> dict:
    """Node: write the answer again from the same sources, told the reviewer's note and the unsupported sentences."""
    ctx = runtime.context
    question = state.get("standalone_question") or state.get("question") or ""
    unsupported = [c["text"] for c in state.get("claims") or [] if c.get("verdict") in DOUBTFUL]
    docs = sources_as_documents(state.get("sources") or [])
    reply = ctx.llm.invoke([SystemMessage(prompts.documents_system(docs)),
                            HumanMessage(prompts.answer_request(question)), AIMessage(state.get("answer", "")),
                            HumanMessage(prompts.revision_request(question, unsupported, state.get("revision_note", "")))])
    answer = str(reply.content).strip()
    note = event(REVISE, "rewrite", grader="reviewer", target="answer", verdict=f"draft {state['answer_revisions'] + 1}",
                 reason=f"written again with the reviewer's note and {len(unsupported)} unsupported sentence(s)")
    return {"answer": answer, "messages": replaced_answer(state, answer), "trace": [note],
            "claims": [], "claim_support": {}}


def add_answer_tail(builder: StateGraph, outcome_of: Callable[[str], str]) -> StateGraph:
    """Send every edge the pattern ends with to ``verify``, and add the tail: verify → review_answer → END, and
    review_answer → revise_answer → verify. A graph whose state lacks the tail's fields (a test's) is left as it is.
    A review node's ``Command(goto=END)`` (a rejection) still ends the run: a rejected run has nothing to check."""
    if "answer_settled" not in builder.channels:
        return builder
    builder.edges = {(start, VERIFY if end == END else end) for start, end in builder.edges}
    builder.waiting_edges = {(starts, VERIFY if end == END else end) for starts, end in builder.waiting_edges}
    for branches in builder.branches.values():
        for name, spec in list(branches.items()):
            if spec.ends and END in spec.ends.values():
                branches[name] = spec._replace(ends={k: VERIFY if v == END else v for k, v in spec.ends.items()})
    builder.add_node(VERIFY, make_verify(outcome_of))
    builder.add_node(review_answer, destinations=(REVISE, END))
    builder.add_node(revise_answer)
    builder.add_conditional_edges(VERIFY, route_after_verify)
    builder.add_edge(REVISE, VERIFY)
    return builder
