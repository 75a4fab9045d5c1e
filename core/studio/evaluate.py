"""Evaluation: run a question set (core.studio.question_set) through patterns and score what came back.

Scores per pattern: route/tool accuracy (the collections a run searched, by name, against the set's
``sources``), an agent's first tool (its first action went to an expected collection, or it answered at once where
nothing needs looking up), source hit rate (a cited chunk came from one of them), key-fact rate, coverage (the key-fact rate
of questions that match several items: each item's name and figure are facts), correct-decline
rate, answered rate (the run ended with an answer it stands by, on answerable questions), language match
(the answer is written in the question's language), agent step parse rate (the share of an agent's
replies that were a well-formed step), mean LLM calls, tokens and wall time, and the termination reasons.
Results are saved with the set's name, the provider, the model and the date under ``<data dir>/evals/`` so runs compare.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from core.config import Settings
from core.llm.graders import QUESTION_KINDS
from core.patterns import reason_outcome
from core.prompts import HANGUL
from core.store import saved_records
from core.store.files import private_folder, write_private
from core.studio.question_set import BUILTIN, refuse_runs

SEVERAL_ITEMS = "several_items"  # the category of questions that match several items: their fact rate is coverage
Judge = Callable[[str, str], "bool | None"]  # (question, answer) -> declined? None when the judge failed


class Declined(BaseModel):
    declined: bool


def model_judge(model) -> Judge:
    """Whether an answer written by a model declines, judged by a model (structured yes/no)."""
    from core.llm import graders
    from core.prompts import fence
    from core.prompts import workflow as P

    def judge(question: str, answer: str) -> bool | None:  # the answer may quote a document: fenced, its tags escaped
        outcome = graders.ask(model, Declined, P.DECLINE_SYSTEM, f"Question: {question}\n\n{fence(answer, 'answer')}",
                              Declined(declined=False))
        return None if outcome.fallback else outcome.value.declined

    return judge


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text or "").lower()


def searched_collections(result: dict) -> set[str]:
    """Which collections a run looked in ("web" for web search), as its state recorded them (``searched``)."""
    return set(result.get("searched") or [])


def declined(item: dict, result: dict, judge: Judge | None) -> bool | None:
    """Did the run decline? Its termination reason first; a model-written answer is judged, never keyword-matched."""
    if result.get("error"):
        return False
    # a reason of the "declined" class: the run said itself that it would not answer
    if reason_outcome(result.get("termination_reason")) == "declined" or not (result.get("answer") or "").strip():
        return True
    return judge(item["question"], result["answer"]) if judge else None


def answer_language(text: str) -> str | None:
    """``ko`` when most letters are Hangul, ``other`` when some letters are not, None without letters.

    A majority, not "any Hangul": an English answer may quote a Korean dish name, and a Korean one a wine's name.
    """
    letters = [c for c in text or "" if c.isalpha()]
    if not letters:
        return None
    return "ko" if sum(bool(HANGUL.match(c)) for c in letters) * 2 > len(letters) else "other"


def language_ok(item: dict, answer: str) -> bool | None:
    """Is the answer in the question's language? None when the set gives no language or nothing was answered."""
    lang, written = item.get("lang") or "", answer_language(answer)
    if not lang or written is None:
        return None
    return (written == "ko") == (lang == "ko")


def _answered(item: dict, result: dict) -> bool:
    """Did the run end with an answer it stands by? A direct answer counts only where nothing needed looking up."""
    wanted = {"answered"} if item["sources"] else {"answered", "direct"}
    return reason_outcome(result.get("termination_reason")) in wanted and not result.get("error")


def first_tool_ok(item: dict, result: dict) -> bool | None:
    """Did an agent's first step go where the set says? A tool over an expected collection for a lookup, no tool
    where nothing needs looking up; None for patterns that list no tools, unanswerable and web questions.

    Read from the trace: the tools the agent was given (with the collections each searches) and its first action.
    """
    listed = next((e.get("tools") for e in result.get("trace") or [] if e.get("step") == "tools"), None)
    if listed is None or not item["answerable"] or "web" in item["sources"]:
        return None
    first = next((e.get("target") for e in result.get("trace") or [] if e.get("step") == "action"), None)
    if not item["sources"]:
        return first is None
    searches = {t["name"]: set(t.get("collections") or ()) for t in listed}
    return first is not None and bool(searches.get(first, set()) & set(item["sources"]))


def agent_steps(result: dict) -> tuple[int, int]:
    """(replies that were a well-formed step, all agent replies), as the agent counted them in its state;
    (0, 0) for patterns that count none (``iterations`` / ``parse_errors`` are ReAct's result fields)."""
    replies = int(result.get("iterations") or 0)
    return max(replies - int(result.get("parse_errors") or 0), 0), replies


def score_item(item: dict, result: dict, judge: Judge | None = None) -> dict:
    """Score one run against one question; None where a measure does not apply."""
    answer = result.get("answer") or ""
    searched = searched_collections(result)
    expected = set(item["sources"])
    if not item["answerable"]:
        route_ok = None  # looking somewhere before declining is as right as not looking
    else:
        route_ok = expected <= searched if expected else not searched
    cited = {s.get("collection") or ("web" if s.get("url") else "") for s in result.get("sources") or []}
    source_hit = bool(cited & expected) if expected and item["answerable"] else None
    facts = item["facts"]
    parsed, replies = agent_steps(result)
    fact_rate = sum(_norm(f) in _norm(answer) for f in facts) / len(facts) if facts else None
    support = result.get("claim_support") or {}
    return {
        "id": item["id"], "category": item["category"], "route_ok": route_ok, "source_hit": source_hit,
        "first_tool_ok": first_tool_ok(item, result),
        "fact_rate": fact_rate, "declined_ok": None if item["answerable"] else declined(item, result, judge),
        "answered": _answered(item, result) if item["answerable"] else None,
        "language_ok": language_ok(item, answer), "parsed_steps": parsed, "agent_replies": replies,
        "llm_calls": result.get("llm_calls", 0), "tokens": result.get("tokens", 0), "ms": result.get("ms", 0),
        "termination_reason": result.get("termination_reason") or "error", "error": result.get("error"),
        "searched": sorted(searched), "answer": answer[:300],
        # the claim check: needs no reference answer, so it scores any question set
        "claims_supported": support.get("supported", 0), "claims_unsupported": support.get("unsupported", 0),
        "claims_unchecked": support.get("unchecked", 0), "faithfulness": faithfulness(support),
        "verification_ms": (result.get("verification") or {}).get("ms", 0),
        # Auto's choice (None for the other patterns): the kind it read and the pattern it ran
        "read_kind": result.get("question_kind") or None, "routed": result.get("auto_pattern") or None,
        "kind_ok": (result["question_kind"] == (item.get("kind") or item.get("category")))
        if result.get("question_kind") and (item.get("kind") or item.get("category")) in QUESTION_KINDS else None,
    }


def faithfulness(support: dict) -> float | None:
    """Supported ÷ checked claims (unchecked ones count neither way); None when nothing was checked."""
    checked = support.get("supported", 0) + support.get("unsupported", 0)
    return round(support.get("supported", 0) / checked, 3) if checked else None


def _mean(values) -> float | None:
    values = [float(v) for v in values if v is not None]
    return round(sum(values) / len(values), 3) if values else None


def summarise(scores: list[dict]) -> dict:
    replies = sum(s.get("agent_replies", 0) for s in scores)
    return {
        "questions": len(scores),
        "route_accuracy": _mean(s["route_ok"] for s in scores),
        "first_tool_accuracy": _mean(s.get("first_tool_ok") for s in scores),
        "source_hit_rate": _mean(s["source_hit"] for s in scores),
        "key_fact_rate": _mean(s["fact_rate"] for s in scores),
        # questions that match several items (every steak, each Italian red): the share of their facts found
        "coverage": _mean(s["fact_rate"] for s in scores if s.get("category") == SEVERAL_ITEMS),
        # pooled over every checked claim of the set: a long answer weighs by its sentences
        "faithfulness": faithfulness({"supported": sum(s.get("claims_supported", 0) for s in scores),
                                      "unsupported": sum(s.get("claims_unsupported", 0) for s in scores)}),
        "unsupported_claims": sum(s.get("claims_unsupported", 0) for s in scores),
        "correct_decline_rate": _mean(s["declined_ok"] for s in scores),
        "answered_rate": _mean(s.get("answered") for s in scores),
        "language_match_rate": _mean(s.get("language_ok") for s in scores),
        "step_parse_rate": round(sum(s.get("parsed_steps", 0) for s in scores) / replies, 3) if replies else None,
        "mean_llm_calls": _mean(s["llm_calls"] for s in scores),
        "mean_tokens": _mean(s["tokens"] for s in scores),
        "mean_seconds": _mean(s["ms"] / 1000 for s in scores),
        "median_seconds": round(statistics.median(s["ms"] / 1000 for s in scores), 1) if scores else None,
        "errors": sum(1 for s in scores if s["error"]),
        "terminations": dict(Counter(s["termination_reason"] for s in scores)),
        # Auto: the share of questions whose kind it read as the set labels it, and the patterns it ran
        "kind_accuracy": _mean(s.get("kind_ok") for s in scores),
        "routed": dict(Counter(s["routed"] for s in scores if s.get("routed"))),
    }


def evaluate(settings: Settings, patterns: list[str], items: list[dict],
             run_one: Callable[[str, str, Settings], dict] | None = None,
             progress: Callable[[int, int, str], None] | None = None, set_name: str = BUILTIN.name,
             judge: Judge | None = None) -> dict:
    """Run every item through every pattern (each in a fresh thread) and score it.

    ``judge`` decides whether a model-written answer to an unanswerable question declines (default:
    the configured grader model; its calls are not counted as the pattern's cost). QuestionSetError past
    RAG_MAX_SET_RUNS (questions x patterns), before any run.
    """
    from core.llm.models import get_chat_model, model_name, resolve_provider
    from core.run.runner import run

    refuse_runs(len(items), len(patterns), settings)
    run_one = run_one or (lambda pattern, question, s: run(pattern, question, s, origin="eval"))
    if judge is None and any(not item["answerable"] for item in items):
        judge = model_judge(get_chat_model(settings, role="grader"))
    per_pattern: dict[str, dict] = {}
    total, done = len(patterns) * len(items), 0
    for pattern in patterns:
        scores = []
        for item in items:
            result = run_one(pattern, item["question"], settings)
            scores.append(score_item(item, result, judge))
            done += 1
            if progress:
                progress(done, total, f"{pattern} {item['id']}")
        per_pattern[pattern] = {"summary": summarise(scores), "items": scores}
    provider = resolve_provider(settings)
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "set": set_name, "set_questions": len(items),
            "provider": provider, "model": model_name(settings, provider), "patterns": per_pattern}


def save(report: dict, settings: Settings) -> Path | str:
    """Save an evaluation: a file under data/evals, or a row of the shared database (its name is returned)."""
    name = f"{time.strftime('%Y%m%d-%H%M%S')}-{report['provider']}.json"
    if saved_records.in_database(settings):
        saved_records.save(settings, "evaluation", name, report)
        return f"the database (evaluation {name})"
    path = private_folder(settings.data_path, "evals") / name
    write_private(path, json.dumps(report, ensure_ascii=False, indent=2))
    return path


def saved_reports(settings: Settings) -> list[dict]:
    """Every saved evaluation, newest first, each with its file name."""
    if saved_records.in_database(settings):
        return [{**report, "file": name} for name, report in saved_records.listed(settings, "evaluation")]
    folder = settings.data_path / "evals"
    reports = []
    for path in sorted(folder.glob("*.json"), reverse=True) if folder.is_dir() else []:
        try:
            reports.append({**json.loads(path.read_text(encoding="utf-8")), "file": path.name})
        except (OSError, ValueError):
            continue  # a half-written or foreign file is not an evaluation
    return reports


def render(report: dict) -> str:
    keys = ["route_accuracy", "first_tool_accuracy", "source_hit_rate", "key_fact_rate", "faithfulness",
            "correct_decline_rate", "answered_rate",
            "language_match_rate", "step_parse_rate", "mean_llm_calls", "mean_tokens", "mean_seconds", "median_seconds", "errors"]
    header = ["pattern", "n"] + keys
    rows = [[name, str(data["summary"]["questions"])] + [str(data["summary"].get(k)) for k in keys]
            for name, data in report["patterns"].items()]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [f"evaluation {report['date']} of {report.get('set', '?')}: {report['provider']} ({report['model']})",
             "  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.append("")
    for name, data in report["patterns"].items():
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(data["summary"]["terminations"].items()))
        lines.append(f"{name}: {reasons}")
        summary = data["summary"]
        if summary.get("routed"):
            ran = ", ".join(f"{p} {n}" for p, n in sorted(summary["routed"].items(), key=lambda x: (-x[1], x[0])))
            lines.append(f"{name}: kind read as labelled {summary.get('kind_accuracy')}; ran {ran}")
    return "\n".join(lines)
