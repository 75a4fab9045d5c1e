"""Export one run (question, answer, sources, trace, usage), or a comparison of runs, as JSON or Markdown.

No secrets: keys are never copied, and any key that slipped into text is masked in every form it takes.
"""

from __future__ import annotations

import json

from core.config import Settings
from core.llm.verdicts import probability_text
from core.run.outcome import summary as outcome_summary
from core.runtime.trace import target_text
from core.secrets import redact_all
from core.studio.render import safe_markdown, source_links

RESULT_FIELDS = ("pattern", "thread_id", "question", "standalone_question", "answer", "termination_reason",
                 "termination_message", "error", "interrupted", "sources", "trace", "path", "usage",
                 "llm_calls", "tokens", "ms", "provider", "model", "forked_from", "claims", "claim_support",
                 "verification", "drafts")
# the settings that explain a run; URLs are left out (they may carry credentials)
SETTING_FIELDS = ("provider", "model", "grader_model", "temperature", "max_tokens", "k", "max_rewrites",
                  "max_generations", "max_iterations", "embedding_provider", "embedding_model", "verify_claims",
                  "claim_checks", "review_answer")
TRACE_COLUMNS = ("node", "kind", "grader", "target", "verdict", "score", "p", "reason")


def export_record(result: dict, settings: Settings | None = None) -> dict:
    """The exportable part of a run result; any secret value that slipped into text is masked."""
    record = {key: result.get(key) for key in RESULT_FIELDS if key in result}
    if "termination_reason" in result:  # what the run can claim: what was checked, citations, cut-off
        record["outcome"] = outcome_summary(result)
    return _with_settings(record, settings)


def _with_settings(record: dict, settings: Settings | None) -> dict:
    """Add the settings that explain the record, then mask every secret value found in it."""
    if settings is not None:
        record = {**record, "settings": {key: getattr(settings, key) for key in SETTING_FIELDS}}
    return _masked(record, settings)


def _masked(record: dict, settings: Settings | None) -> dict:
    """Every form of every key (escaped, quoted, Bearer tokens) masked; without settings, Bearer tokens only."""
    return redact_all(record, settings)


def to_json(result: dict, settings: Settings | None = None) -> str:
    return json.dumps(export_record(result, settings), ensure_ascii=False, indent=2, default=str)


def _cell(value) -> str:
    text = "" if value is None else (json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list))
                                      else str(value))
    return safe_markdown(" ".join(text.split()).replace("|", "\\|"))  # a viewer must not fetch what a run wrote


def _table(header: tuple, rows: list[tuple]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]


def to_markdown(result: dict, settings: Settings | None = None) -> str:
    """A readable report of the run: question, answer, why it stopped, sources, trace, usage."""
    rec = export_record(result, settings)
    out = _run_markdown(rec, f"# {rec.get('pattern', '')}: {_cell(rec.get('question'))}", level=2)
    if rec.get("settings"):
        out += ["## Settings", ""] + [f"- {k}: {v}" for k, v in rec["settings"].items()] + [""]
    return "\n".join(out)


def _run_markdown(rec: dict, title: str, level: int) -> list[str]:
    """The lines of one run's report under ``title``; its sections are headings of ``level``."""
    h = "#" * level
    out = [title, ""]
    if rec.get("standalone_question") and rec["standalone_question"] != rec.get("question"):
        out += [f"Standalone question: {_cell(rec['standalone_question'])}", ""]
    out += [f"{h} Answer", "", safe_markdown(rec.get("answer") or "_(no answer)_", source_links(rec)), ""]
    if rec.get("error"):
        out += [f"**Error:** {safe_markdown(rec['error'])}", ""]
    if rec.get("outcome"):
        out += [f"**Outcome:** {_outcome_line(rec['outcome'])}", ""]
    out += [f"**Stopped:** `{rec.get('termination_reason') or '-'}` {safe_markdown(rec.get('termination_message') or '')}"
            .rstrip(),
            "", f"Path: {' → '.join(rec.get('path') or [])}",
            f"Model: {rec.get('provider', '?')} / {rec.get('model', '?')} · {rec.get('llm_calls', 0)} LLM calls · "
            f"{rec.get('tokens', 0)} tokens · {rec.get('ms', 0)} ms", ""]
    if rec.get("claims"):
        out += [f"{h} Claims", ""] + _table(("verdict", "sentence", "reason", "evidence"), [
            (c.get("verdict"), c.get("text"), c.get("reason"),
             " / ".join(f"{e.get('source')} · {e.get('chunk')}: “{e.get('quote')}”" for e in c.get("evidence") or []))
            for c in rec["claims"]]) + [""]
    for n, draft in enumerate(rec.get("drafts") or [], 1):  # the versions a reviewer changed, before the answer
        who = f" by {_cell(draft['reviewer'])}" if draft.get("reviewer") else ""
        out += [f"{h} Draft {n} (reviewer: {draft.get('decision')}{who})", "",
                safe_markdown(draft.get("answer") or "_(no answer)_", source_links(rec)), "",
                "Marks: " + (", ".join(str(c.get("verdict")) for c in draft.get("claims") or []) or "-"), ""]
    if rec.get("sources"):
        out += [f"{h} Sources", ""]
        for src in rec["sources"]:
            where = src.get("url") or f"{src.get('source', '?')}, p.{src.get('page')}"
            score = f" · score {src['score']:.3f}" if isinstance(src.get("score"), (int, float)) else ""
            out += [safe_markdown(f"[{src.get('n')}] {src.get('title') or src.get('source')} ({where}){score}"), "",
                    "> " + _cell(str(src.get("text") or "")[:600]), ""]
    if rec.get("trace"):
        out += [f"{h} Trace", ""] + _table(TRACE_COLUMNS, [
            tuple(_trace_cell(e, c) for c in TRACE_COLUMNS) for e in rec["trace"]]) + [""]
    if rec.get("usage"):
        out += [f"{h} Usage per node", ""] + _table(("node", "llm_calls", "tokens", "ms"), [
            (node, s.get("llm_calls"), s.get("tokens"), s.get("ms")) for node, s in rec["usage"].items()]) + [""]
    return out


def _trace_cell(event: dict, column: str):
    """A trace event's cell: targets as "menu.md · chunk 3", probabilities as "0.81 ≥ 0.62"."""
    if column == "target":
        return target_text(event.get(column))
    return probability_text(event) if column == "p" else event.get(column)


def _outcome_line(outcome: dict) -> str:
    parts = [outcome.get("label") or outcome.get("status", "")]
    claims = outcome.get("claims") or {}
    if claims.get("line"):
        parts.append(f"claim check: {claims['line']}")
    if claims.get("disagreement"):
        parts.append(f"the pattern's grader said grounded, the claim check found {claims['unsupported']} unsupported")
    citations = outcome.get("citations") or {}
    if citations.get("unknown"):
        parts.append(f"citations with no listed source: {', '.join(citations['unknown'])}")
    elif citations.get("status") == "none" and citations.get("listed"):
        parts.append("no citations")
    if outcome.get("truncated"):
        parts.append("cut off at the token limit")
    return "; ".join(parts)


# ---------------------------------------------------------------- a comparison of patterns


def export_comparison(record: dict, settings: Settings | None = None) -> dict:
    """The exportable part of a saved comparison: question, metrics per pattern, each run's record.

    ``settings`` only masks its secrets: a comparison may be exported long after it ran, under other
    settings, and each run already names its provider and model.
    """
    from core.studio.compare import metrics_rows  # here, not at the top: core.studio.compare pulls in the whole runner

    out = {key: record.get(key) for key in ("id", "date", "question", "patterns")}
    out["metrics"] = metrics_rows(record)
    out["results"] = {pattern: export_record(result) for pattern, result in (record.get("results") or {}).items()}
    return _masked(out, settings)


def comparison_to_json(record: dict, settings: Settings | None = None) -> str:
    return json.dumps(export_comparison(record, settings), ensure_ascii=False, indent=2, default=str)


def comparison_to_markdown(record: dict, settings: Settings | None = None) -> str:
    """The comparison as a report: the metrics table first, then each pattern's run."""
    from core.studio.compare import METRICS

    rec = export_comparison(record, settings)
    out = [f"# Comparison: {_cell(rec.get('question'))}", "", f"{rec.get('date') or ''} · {rec.get('id') or ''}", "",
           "## Metrics", ""]
    columns = ("pattern", *METRICS)
    out += _table(columns, [tuple(row.get(c) for c in columns) for row in rec["metrics"]]) + [""]
    for pattern, run in rec["results"].items():
        out += _run_markdown(run, f"## {pattern}", level=3)
    return "\n".join(out)
