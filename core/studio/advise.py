"""Advise: run a question set through patterns, score per pattern and per kind of question, recommend one.

Every finished run is stored at once, keyed by the set's digest, the pattern and the question id
(``<data dir>/advice/runs-<digest>.jsonl``, or rows of the shared database), so an advice that was
killed continues where it stopped when started again with the same set. ``start`` runs an advice in a
background thread that outlives the page that started it (like Compare); its record is saved as it goes.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable

from core.config import Settings
from core.store import advice_records, owner, saved_records
from core.store.files import append_private, private_folder
from core.studio.evaluate import Judge, model_judge, saved_reports, score_item
from core.studio.question_set import refuse_runs
from core.studio.recommend import MARGIN, kind_of, pattern_row, recommend

Runner = Callable[[str, str, Settings], dict]  # (pattern, question, settings) -> the run's result
Progress = Callable[[int, int, str], None]
INTERRUPTED = "interrupted: the process stopped before this advice finished; start it again to continue"


def undescribed(kb, items: list[dict]) -> list[str]:
    """The collections the set asks about that have no description. Routers and agents choose collections by
    their descriptions: Adaptive, advising on an undescribed FAQ, sent 9 of its 10 questions to the web."""
    from core.knowledge.sources import all_sources

    named = {name for item in items for name in item.get("sources") or []}
    return [s.id for s in all_sources(kb) if s.enabled and s.id in named and not s.described]


def set_digest(items: list[dict]) -> str:
    """What identifies a set for resuming: its questions and what they are scored against."""
    keys = ("id", "question", "sources", "facts", "answerable")
    canon = json.dumps([{k: item.get(k) for k in keys} for item in items], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]


class RunStore:
    """The finished runs of one set: appended one by one, read back whole (a half-written last line is skipped)."""

    def __init__(self, settings: Settings, digest: str):
        self.settings, self.digest = settings, digest
        self.path = settings.data_path / "advice" / f"runs-{digest}.jsonl"
        self.lock = threading.Lock()

    def load(self) -> dict[tuple[str, str], dict]:
        if saved_records.in_database(self.settings):
            prefix = f"{self.digest}:"
            rows = [r for key, r in saved_records.listed(self.settings, "advice_run") if key.startswith(prefix)]
        else:
            rows = []
            for line in self.path.read_text(encoding="utf-8").splitlines() if self.path.is_file() else []:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    continue  # the line a kill cut short: that run is simply done again
        return {(r["pattern"], r["id"]): r for r in rows if isinstance(r, dict) and "pattern" in r}

    def add(self, score: dict) -> None:
        if saved_records.in_database(self.settings):
            saved_records.save(self.settings, "advice_run", f"{self.digest}:{score['pattern']}:{score['id']}", score)
            return
        with self.lock:
            private_folder(self.settings.data_path, self.path.parent.name)
            append_private(self.path, json.dumps(score, ensure_ascii=False, default=str) + "\n")


def scored_run(pattern: str, item: dict, result: dict, judge: Judge | None) -> dict:
    """score_item plus what advice needs: the kind, the thread (for its trace), the cost split."""
    verification = result.get("verification") or {}
    score = score_item(item, result, judge)
    return {**score, "pattern": pattern, "kind": kind_of(item), "question": item["question"],
            "thread_id": result.get("thread_id") or "", "verification_calls": verification.get("llm_calls", 0),
            "verification_tokens": verification.get("tokens", 0),
            "pattern_ms": max(0, (result.get("ms") or 0) - (verification.get("ms") or 0))}


def run_store(settings: Settings, items: list[dict], runs: str = "") -> RunStore:
    """Where an advice's finished runs are kept: by its set's digest, so one set's advice resumes; ``runs`` names a
    fresh round of its own (a refreshed policy measures again what an earlier advice measured)."""
    return RunStore(settings, set_digest(items) + (f"-{runs}" if runs else ""))


def advise(settings: Settings, items: list[dict], patterns: list[str], run_one: Runner | None = None,
           progress: Progress | None = None, should_stop: Callable[[], bool] | None = None,
           judge: Judge | None = None, set_name: str = "", margin: float = MARGIN, runs: str = "") -> dict:
    """Run what is not stored yet, score everything, recommend. Stops between runs when ``should_stop()``."""
    from core.run.runner import run

    refuse_runs(len(items), len(patterns), settings)  # RAG_MAX_SET_RUNS: before the run store is touched
    run_one = run_one or (lambda pattern, question, s: run(pattern, question, s, origin="eval"))
    store = run_store(settings, items, runs)
    done = store.load()
    total = len(patterns) * len(items)
    reused, stopped = sum((p, i["id"]) in done for p in patterns for i in items), False
    for pattern in patterns:
        for item in items:
            if (pattern, item["id"]) in done:
                continue
            if should_stop and should_stop():
                stopped = True
                break
            if judge is None and not item["answerable"]:
                judge = _default_judge(settings)
            score = scored_run(pattern, item, run_one(pattern, item["question"], settings), judge)
            store.add(score)
            done[(pattern, item["id"])] = score
            if progress:
                progress(len([k for k in done if k[0] in patterns]), total, f"{pattern} {item['id']}")
    return report(settings, items, patterns, done, set_name, margin) | {"reused_runs": reused, "stopped": stopped}


def _default_judge(settings: Settings) -> Judge:
    from core.llm.models import get_chat_model

    return model_judge(get_chat_model(settings, role="grader"))


def report(settings: Settings, items: list[dict], patterns: list[str], done: dict, set_name: str,
           margin: float = MARGIN) -> dict:
    """Per-pattern rows, the per-question table and the recommendation over the runs finished so far."""
    from core.llm.models import model_name, resolve_provider

    table = {p: pattern_row([done[(p, i["id"])] for i in items if (p, i["id"]) in done]) for p in patterns}
    table = {p: row for p, row in table.items() if row["questions"]}
    questions = [{"id": i["id"], "kind": kind_of(i), "question": i["question"],
                  "runs": {p: _cell(done[(p, i["id"])]) for p in patterns if (p, i["id"]) in done}} for i in items]
    provider = resolve_provider(settings)
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "set": set_name, "set_digest": set_digest(items),
            "set_questions": len(items), "provider": provider, "model": model_name(settings, provider),
            "patterns": table, "questions": questions, "recommendation": recommend(table, margin),
            "finished_runs": sum(row["questions"] for row in table.values()), "total_runs": len(items) * len(patterns)}


def _cell(score: dict) -> dict:
    from core.studio.recommend import run_quality

    return {"quality": run_quality(score), "thread_id": score.get("thread_id", ""),
            "termination_reason": score.get("termination_reason"), "answer": score.get("answer", ""),
            "routed": score.get("routed"), "read_kind": score.get("read_kind")}


# ---------------------------------------------------------------- estimates from measured timings


def measured_seconds(settings: Settings) -> dict:
    """Seconds per question per pattern, and per LLM call, measured on this provider and model: from
    saved evaluations and advice runs. Nothing measured yet gives empty figures, never a guess."""
    from core.llm.models import model_name, resolve_provider

    provider = resolve_provider(settings)
    model = model_name(settings, provider)
    seconds: dict[str, list[float]] = {}
    calls = total = 0.0
    for saved in saved_reports(settings) + list_advice(settings, with_reports=True):
        if saved.get("provider") != provider or saved.get("model") != model:
            continue
        for pattern, data in (saved.get("patterns") or {}).items():
            row = data.get("summary", data)  # an evaluation nests its summary, an advice row is flat
            if row.get("mean_seconds") is not None:
                seconds.setdefault(pattern, []).append(row["mean_seconds"])
                calls += (row.get("mean_llm_calls") or 0) * row.get("questions", 1)
                total += row["mean_seconds"] * row.get("questions", 1)
    per_pattern = {p: round(sum(v) / len(v), 1) for p, v in seconds.items()}
    return {"per_pattern": per_pattern, "per_call": round(total / calls, 2) if calls else None}


def estimate(settings: Settings, patterns: list[str], questions: int) -> dict[str, float | None]:
    """Expected seconds for each pattern over ``questions`` questions: its own measured mean, else its
    LLM-call bound times the measured seconds per call (an upper estimate), else None (not measured)."""
    from core.patterns import get_pattern

    measured = measured_seconds(settings)
    out: dict[str, float | None] = {}
    for pattern in patterns:
        if pattern in measured["per_pattern"]:
            out[pattern] = round(measured["per_pattern"][pattern] * questions, 1)
        elif measured["per_call"]:
            out[pattern] = round(get_pattern(pattern).max_llm_calls(settings) * measured["per_call"] * questions, 1)
        else:
            out[pattern] = None
    return out


def fit_budget(estimates: dict[str, float | None], budget_seconds: float) -> tuple[list[str], list[str]]:
    """(patterns that fit the budget, cheapest first; patterns left out). Unmeasured ones are left out
    when anything is measured; when nothing is, none can be ruled out and all are kept."""
    known = {p: s for p, s in estimates.items() if s is not None}
    if not known:
        return list(estimates), []
    chosen, spent = [], 0.0
    for pattern in sorted(known, key=lambda p: (known[p], p)):
        if spent + known[pattern] <= budget_seconds or not chosen:  # the cheapest always runs
            chosen.append(pattern)
            spent += known[pattern]
    return chosen, [p for p in estimates if p not in chosen]


# ---------------------------------------------------------------- in the background (the Evaluation page)

_stops: dict[str, threading.Event] = {}  # advice id -> its stop signal, for the advices this process runs
_stops_lock = threading.Lock()


def start(settings: Settings, items: list[dict], patterns: list[str], set_name: str,
          run_one: Runner | None = None, judge: Judge | None = None, fresh: bool = False, runs: str = "") -> str:
    """Run an advice in a background thread; its record is saved as each run ends. Returns its id.

    ``fresh``: every run is made again (not taken from an earlier advice of the set); ``runs``: continue the fresh
    round of that name. QuestionSetError past RAG_MAX_SET_RUNS (questions x patterns), before the record is written."""
    refuse_runs(len(items), len(patterns), settings)
    advice_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    runs = advice_id if fresh else runs
    record = {"id": advice_id, "date": time.strftime("%Y-%m-%d %H:%M"), "set": set_name, "patterns": patterns,
              "items": items, "owner": owner.current(), "status": "running", "runs": runs,
              "progress": {"done": 0, "total": len(items) * len(patterns), "current": ""}, "report": None}
    save_advice(record, settings)
    stop = threading.Event()
    with _stops_lock:
        _stops[record["id"]] = stop

    def progress(done: int, total: int, label: str) -> None:
        record["progress"] = {"done": done, "total": total, "current": label}
        save_advice(record, settings)

    def work() -> None:
        try:
            result = advise(settings, items, patterns, run_one, progress, stop.is_set, judge, set_name, runs=runs)
            record.update(report=result, status="stopped" if result["stopped"] else "done")
        except Exception as exc:  # a provider that cannot be reached: the record says so, finished runs stay stored
            record.update(status="failed", error=str(exc))
        finally:
            save_advice(record, settings)
            with _stops_lock:
                _stops.pop(record["id"], None)

    threading.Thread(target=work, daemon=True, name=f"advise-{record['id']}").start()
    return record["id"]


# what a refreshed policy is measured over: the patterns issue 52's targets compare Auto with
POLICY_PATTERNS = ("basic", "adaptive", "corrective", "self_rag")


def sets_over(settings: Settings, collections: list[str]) -> list[str]:
    """The saved question sets whose questions are all about some of ``collections`` (web aside): the sets an
    advice for Auto's policy over these collections can run."""
    from core.studio.question_set import QuestionSetError, load_saved_question_set, saved_question_sets

    found = []
    for name in saved_question_sets(settings):
        try:
            asked = {c for item in load_saved_question_set(settings, name) for c in item["sources"] if c != "web"}
        except QuestionSetError:
            continue  # a set that no longer reads is no set to advise on
        if asked and asked <= set(collections):
            found.append(name)
    return found


def refresh_policy(settings: Settings, set_name: str, patterns: tuple[str, ...] = POLICY_PATTERNS) -> str:
    """Start a fresh advice on the saved set ``set_name`` over ``patterns`` (those registered): when it is done,
    Auto's policy for its collections is the one it measured. Returns the advice's id."""
    from core.patterns import pattern_ids
    from core.studio.question_set import load_saved_question_set

    items = load_saved_question_set(settings, set_name)
    return start(settings, items, [p for p in patterns if p in pattern_ids()], set_name, fresh=True)


def stop(advice_id: str) -> bool:
    """Ask a running advice to stop after its current run; False when this process does not run it."""
    with _stops_lock:
        event = _stops.get(advice_id)
    if event:
        event.set()
    return bool(event)


def _settled(record: dict) -> dict:
    """A running record whose process is gone (or whose thread here ended without saving) reads as interrupted."""
    if record.get("status") != "running":
        return record
    who = record.get("owner")
    if who and owner.is_current(who):
        with _stops_lock:
            alive = record.get("id") in _stops
    else:
        alive = not owner.is_gone(who)
    return record if alive else {**record, "status": "interrupted", "error": INTERRUPTED}


def save_advice(record: dict, settings: Settings) -> None:
    """Save an advice record (core.store.advice_records: a private file, or a row of the shared database)."""
    advice_records.save(settings, record)


def list_advice(settings: Settings, with_reports: bool = False) -> list[dict]:
    """Saved advices, newest first (without their sets; reports flattened in when asked, for estimates)."""
    records, _problems = advice_records.read_all(settings)
    if with_reports:
        return [r["report"] for r in records if r.get("report")]
    return [{k: v for k, v in _settled(r).items() if k not in ("items", "report")} for r in records]


def load_advice(settings: Settings, advice_id: str) -> dict:
    """The saved advice ``advice_id`` (KeyError when there is none), a dead process's running one as interrupted."""
    record = advice_records.load(settings, advice_id)
    if record is None:
        raise KeyError(f"no saved advice {advice_id!r}")
    return _settled(record)
