"""Auto: read the question's kind from the model's probabilities, then run the pattern that wins that kind.

The kind (single fact, two facts, across collections, not in the documents, small talk) is one verdict-sized call
read as the graders read theirs (graders.classify_kind: p per kind, the ``kind`` threshold, the written kind when the
provider gives no probabilities). The pattern for each kind comes from the user's latest saved advice for the run's
collections, else the default policy (core.patterns.policy). When the reading is unsure, the safest pattern of the
kinds that came close runs. The chosen pattern's graph runs whole inside ``run_pattern`` (its claim check and answer
review included), on the run's checkpointer, so its trace, review pauses and termination reason are the run's.
"""

from __future__ import annotations

from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from core.llm import graders
from core.patterns import (
    Pattern,
    adaptive,
    agentic,
    basic,
    corrective,
    get_pattern,
    graph_rag,
    policy,
    rag_fusion,
    react,
    react_native,
    run_graph,
    self_rag,
)
from core.patterns.common import BaseState, run_sources
from core.patterns.state import per_turn, turn_defaults
from core.runtime.context import RunContext
from core.runtime.trace import event
from core.store import advice_records

# the patterns Auto can run (a test checks this is every other registered pattern)
ROUTED = tuple(m.PATTERN for m in (basic, adaptive, corrective, self_rag, agentic, rag_fusion, graph_rag, react,
                                   react_native))
# what the chosen pattern's graph hands back to the run (its own fields stay in its checkpoints)
HANDED_UP = ("answer", "sources", "documents", "standalone_question", "edited_question", "termination_reason",
             "termination_message", "claims", "claim_support", "verification", "answer_settled", "answer_revisions",
             "revision_note")
RESULT_FIELDS = tuple(dict.fromkeys(f for p in ROUTED for f in p.result_fields))


class AutoState(BaseState, total=False):
    """Auto's fields: the kind read, the pattern chosen, and the result fields the chosen pattern reports."""

    question_kind: Annotated[str, per_turn("", "the kind of question read: single, two_chunks, cross_collection, "
                                               "unanswerable or small_talk")]
    auto_pattern: Annotated[str, per_turn("", "the pattern Auto chose for this question")]
    # the chosen pattern's result fields (Pattern.result_fields), copied up for the badges and the evaluation
    grounding: Annotated[str, per_turn("", "Self-RAG's grounded verdict of the answer returned, when it ran")]
    iterations: Annotated[int, per_turn(0, "an agent's model replies, when a ReAct pattern ran")]
    parse_errors: Annotated[int, per_turn(0, "an agent's malformed steps, when a ReAct pattern ran")]


def _run_model(settings) -> tuple[str, str]:
    """The provider and model of these settings, as advice records name them ("" when they cannot be told)."""
    from core.llm.models import model_name, resolve_provider

    try:
        provider = resolve_provider(settings)
        return provider, model_name(settings, provider)
    except Exception:  # an unknown provider: no advice can match it, the default policy holds
        return "", ""


def policy_for(settings, collections: list[str]) -> dict[str, policy.Choice]:
    """Every kind's Choice for questions over ``collections`` with these settings' model: the saved advice, or the
    default policy and why (what a run uses, and what the Knowledge page shows)."""
    try:
        records, problems = advice_records.read_all(settings)
    except Exception as exc:  # a store that cannot be read must not stop the run: the default holds
        records, problems = [], [f"advice could not be read ({exc.__class__.__name__})"]
    provider, model = _run_model(settings)
    return policy.policy(records, problems, collections, provider, model, {p.id for p in ROUTED})


def current_policy(ctx: RunContext, collections: list[str]) -> dict[str, policy.Choice]:
    """Every kind's Choice for a run over ``collections``."""
    return policy_for(ctx.settings, collections)


def classify_question(state: AutoState, runtime: Runtime[RunContext]) -> dict:
    """Node: read the question's kind and choose the pattern for it (the policy; the safest when unsure)."""
    ctx = runtime.context
    question = state["question"]
    sources = run_sources(ctx, state)
    if not sources:  # nothing to look up: no call, small talk's default pattern answers
        choice = policy.default_choice("small_talk", "no collections in this run")
        return {"question_kind": "small_talk", "auto_pattern": choice.pattern, "trace": [
            event("classify_question", "info", grader="question_kind", verdict="small_talk",
                  reason="no collections in this run: answered as small talk, without reading its kind"),
            event("classify_question", "route", grader="auto_policy", target=choice.pattern, verdict=choice.pattern,
                  reason=choice.reason)]}
    outcome = graders.classify_kind(ctx.grader, question, sources, ctx.thresholds)
    kind = outcome.value.kind
    choices = current_policy(ctx, [s.id for s in sources])
    events = [event("classify_question", "error" if outcome.fallback else "verdict", grader="question_kind",
                    verdict=kind, target="question",
                    reason=(f"classifier output unusable ({outcome.error}); taking {kind}" if outcome.fallback
                            else f"question read as {policy.KIND_NAMES[kind]}"), **outcome.trace_fields())]
    choice = choices[kind]
    unsure = outcome.method == "probability" and outcome.p < outcome.threshold
    if unsure:
        close = policy.close_kinds(outcome.choices)
        safest = policy.safest([choices[k] for k in close])
        names = ", ".join(f"{policy.KIND_NAMES[k]} {outcome.choices[k]:.2f} → {choices[k].pattern}" for k in close)
        how = "the higher quality" if all(choices[k].measured() is not None for k in close) else "the most checking"
        reason = (f"unsure of the kind ({outcome.p:.2f} < {outcome.threshold:.2f}): close kinds {names}; "
                  f"{safest.pattern} is the safest of them ({how}). {safest.reason}")
        choice = policy.Choice(kind, safest.pattern, reason, safest.quality, safest.questions, safest.advice)
    events.append(event("classify_question", "route", grader="auto_policy", target=choice.pattern,
                        verdict=choice.pattern, reason=choice.reason, advice=choice.advice or None,
                        unsure=unsure or None))
    return {"question_kind": kind, "auto_pattern": choice.pattern, "trace": events}


def subgraph_input(pattern: Pattern, state: AutoState) -> dict:
    """The chosen pattern's turn: its per-turn defaults, this turn's question, conversation, review and sources."""
    return {**turn_defaults(pattern.state), "question": state["question"], "standalone_question": state["question"],
            "messages": list(state.get("messages") or []), "review": bool(state.get("review")),
            "review_answer": state.get("review_answer", "off"), "source_ids": list(state.get("source_ids") or [])}


def run_pattern(state: AutoState, runtime: Runtime[RunContext]) -> dict:
    """Node: run the chosen pattern's whole graph as a subgraph, and hand its answer, trace and reason up.

    Invoked inside this node it is checkpointed on the run's checkpointer under this node's namespace: a review
    pause inside it pauses the run, and a resume re-enters this node, whose subgraph continues from its pause.
    """
    pattern = get_pattern(state["auto_pattern"])
    out = run_graph(pattern).invoke(subgraph_input(pattern, state), context=runtime.context)
    handed = {name: out[name] for name in (*HANDED_UP, *pattern.result_fields) if name in out}
    return {**handed, "messages": out.get("messages") or [], "trace": out.get("trace") or [],
            "searched": out.get("searched") or [], "drafts": out.get("drafts") or []}


def paused_values(snapshot, checkpointer) -> dict:
    """The chosen pattern's values where the run paused inside it, read from its checkpoint under ``run_pattern``'s
    namespace ({} when it did not pause there); the trace is Auto's own events, then the chosen pattern's so far."""
    task = next((t for t in snapshot.tasks if t.name == "run_pattern" and t.interrupts), None)
    chosen = snapshot.values.get("auto_pattern")
    if task is None or not chosen or checkpointer is None:
        return {}
    where = {k: v for k, v in snapshot.config["configurable"].items() if k != "checkpoint_id"}
    inner = run_graph(get_pattern(chosen), checkpointer).get_state(
        {"configurable": {**where, "checkpoint_ns": f"run_pattern:{task.id}"}}).values
    return {**inner, "trace": [*(snapshot.values.get("trace") or []), *(inner.get("trace") or [])]}


def build() -> StateGraph:
    """Classify the question's kind (one verdict), then run the pattern the policy names for it."""
    builder = StateGraph(AutoState, context_schema=RunContext)
    builder.add_node(classify_question)
    builder.add_node(run_pattern)
    builder.add_edge(START, "classify_question")
    builder.add_edge("classify_question", "run_pattern")
    builder.add_edge("run_pattern", END)
    return builder


def max_llm_calls(settings, sources: int | None = None) -> int:
    """The kind's verdict (graders.VERDICT_CALLS: read once, else written with one retry) + the most any pattern it
    can run takes."""
    return graders.VERDICT_CALLS + max(p.max_llm_calls(settings, sources) for p in ROUTED)


def _reasons() -> tuple:
    return tuple({r.id: r for p in ROUTED for r in p.termination_reasons}.values())


PATTERN = Pattern(
    id="auto",
    title="Auto",
    description="Reads what kind of question it is (one verdict), then runs the pattern that wins that kind.\n"
                "Learned from your saved advice for these collections; a stated default policy without one.",
    order=90,  # after the patterns it runs
    description_ko="질문의 종류를 한 번의 판정으로 읽고, 그 종류에서 가장 잘한 패턴을 실행합니다.\n"
                   "이 컬렉션들에 대해 저장한 조언에서 배우며, 조언이 없으면 정해 둔 기본 정책을 따릅니다.",
    termination_reasons=_reasons(),
    build=build,
    max_llm_calls=max_llm_calls,
    answer_nodes=frozenset(n for p in ROUTED for n in p.answer_nodes),
    state=AutoState,
    supports_review=True,
    result_fields=("question_kind", "auto_pattern", *RESULT_FIELDS),
    answer_tail=False,
    texts_ko=(
        ("no collections in this run: answered as small talk, without reading its kind",
         "이번 실행에 컬렉션이 없어 종류를 읽지 않고 잡담으로 답했습니다"),
        ("classifier output unusable ({error}); taking {kind}", "분류기 출력을 쓸 수 없어({error}) {kind}(으)로 봅니다"),
        ("question read as {kind}", "질문을 {kind}(으)로 읽었습니다"),
        ("unsure of the kind ({p} < {t}): close kinds {names}; {pattern} is the safest of them ({how}). {reason}",
         "종류가 확실하지 않습니다 ({p} < {t}). 가까운 종류: {names}; 그중 {pattern}이(가) 가장 안전합니다 ({how}). "
         "{reason}"),  # first: it ends with a Choice's reason
        # policy.Choice reasons: the longer forms first, so a shorter one does not swallow their tails
        ("{kind} → {pattern}: {q} vs {other} {oq} over {n} questions of your set ({date}); the fewest seconds "
         "within {margin} of {best}'s {bq}",
         "{kind} → {pattern}: 내 세트의 질문 {n}개에서 {q}, {other}는 {oq} ({date}); {best}의 {bq}에서 {margin} 안에서 "
         "가장 빠름"),
        ("{kind} → {pattern}: {q} vs {other} {oq} over {n} questions of your set ({date})",
         "{kind} → {pattern}: 내 세트의 질문 {n}개에서 {q}, {other}는 {oq} ({date})"),
        ("{kind} → {pattern}: {q} over {n} questions of your set ({date})",
         "{kind} → {pattern}: 내 세트의 질문 {n}개에서 {q} ({date})"),
        ("{kind} → {pattern}: default policy ({why})", "{kind} → {pattern}: 기본 정책 ({why})"),
        ("no advice for these collections; {notes}", "이 컬렉션들에 대한 추천 기록이 없습니다; {notes}"),
        ("no advice for these collections", "이 컬렉션들에 대한 추천 기록이 없습니다"),
        ("no collections in this run", "이번 실행에 컬렉션이 없습니다"),
        ("{n} question(s) of this kind in your advice of {date}, too few to go by (fewer than {least})",
         "{date} 추천 기록에 이 종류의 질문이 {n}개뿐이라 따르기에는 너무 적습니다 ({least}개 미만)"),
        ("your advice of {date} names {pattern}, which is not a pattern here any more",
         "{date} 추천 기록이 고른 {pattern}은(는) 이제 여기 없는 패턴입니다"),
        ("advice {id} is corrupt ({error})", "추천 기록 {id}이(가) 손상되었습니다 ({error})"),
        ("advice could not be read ({error})", "추천 기록을 읽을 수 없습니다 ({error})"),
        ("{file}: unreadable ({error})", "{file}: 읽을 수 없습니다 ({error})"),
        ("the higher quality", "품질이 더 높은 쪽"), ("the most checking", "가장 꼼꼼히 확인하는 쪽"),
        *((name, korean) for name, korean in zip(policy.KIND_NAMES.values(), policy.KIND_NAMES_KO.values())),
    ),
    subgraph_nodes=frozenset({"run_pattern"}),
    paused_values=paused_values,
)
