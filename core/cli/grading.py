"""`python -m core grade` (one grader over JSON on stdin) and `python -m core calibrate` (fit its thresholds)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core.cli import common
from core.cli.verify import InputError, checked_documents, load_object, read_input, refuse_surrogates
from core.config import ReadOnlyError, Settings, refuse_if_read_only

GRADERS = ("relevance", "crag", "grounded", "useful")


def parse_request(text: str, grader: str) -> dict:
    """``{"question", "documents": [{"text", "source"}], "answer"}``, checked for what the grader reads."""
    data = load_object(text, "grade")
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError('"question" is missing or not a non-empty string')
    documents = checked_documents(data)
    if grader in ("relevance", "crag", "grounded") and not documents:
        raise InputError(f'the {grader} grader needs at least one document in "documents"')
    answer = data.get("answer")
    if grader in ("grounded", "useful") and (not isinstance(answer, str) or not answer.strip()):
        raise InputError(f'the {grader} grader needs an "answer" string')
    refuse_surrogates(question, answer if isinstance(answer, str) else "", documents=documents)
    return {"question": question, "documents": documents, "answer": answer or ""}


def grade(model, request: dict, grader: str, thresholds) -> list[dict]:
    """One grade per document (relevance, crag) or one for the answer (grounded, useful)."""
    from langchain_core.documents import Document

    from core.llm import graders

    docs = [Document(page_content=d["text"], metadata={"source": str(d.get("source") or f"document {n}")})
            for n, d in enumerate(request["documents"], 1)]
    q = request["question"]
    if grader == "relevance":
        outcomes = graders.grade_documents(model, q, docs, 1, thresholds)
        return [_row(o, o.value.relevant) for o in outcomes]
    if grader == "crag":
        return [_row(o, o.value.grade) for o in graders.crag_grade(model, q, docs, 1, thresholds)]
    if grader == "grounded":
        outcome = graders.grade_grounded(model, docs, request["answer"], q, thresholds)
        return [_row(outcome, outcome.value.grounded)]
    outcome = graders.grade_usefulness(model, q, request["answer"], thresholds)
    return [_row(outcome, outcome.value.useful) | {"score": outcome.value.score}]


def _row(outcome, verdict: str) -> dict:
    probability = outcome.method == "probability"
    return {"verdict": verdict, "p": round(outcome.p, 4) if probability else None,
            "threshold": outcome.threshold if probability else None, "method": outcome.method,
            **({"error": outcome.error} if outcome.fallback else {})}


def cmd_grade(settings: Settings, args) -> int:
    from core.llm.models import get_chat_model
    from core.llm.thresholds import model_key, thresholds_for

    try:
        request = parse_request(read_input(args.file), args.grader)
        settings = settings.with_(grader_thresholds=args.thresholds) if args.thresholds else settings
        common.prepare_model(settings)
        model = get_chat_model(settings, role="grader")
        thresholds = thresholds_for(settings, model_key(model))
    except OSError as exc:
        sys.stderr.write(f"error: cannot read {args.file}: {exc.strerror or exc}\n")
        return 2
    except ValueError as exc:  # InputError, or a malformed --thresholds / RAG_GRADER_THRESHOLDS
        sys.stderr.write(f"error: {exc}\n")
        return 2
    rows = grade(model, request, args.grader, thresholds)
    if args.json:
        print(json.dumps({"grader": args.grader, "model": model_key(model), "grades": rows}, ensure_ascii=False))
        return 0
    for n, row in enumerate(rows, 1):
        how = (f"p={row['p']:.3f} vs {row['threshold']}" if row["method"] == "probability" else "written verdict")
        print(f"{n:>2}. {row['verdict']:<10} {how}")
    return 0


def cmd_calibrate(settings: Settings, args) -> int:
    from core.llm.models import get_chat_model
    from core.studio import calibrate
    from core.studio.question_set import BUILTIN, QuestionSetError, load_question_set

    try:
        items = load_question_set(Path(args.set) if args.set else BUILTIN)
    except QuestionSetError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    kb = common.knowledge(settings)
    names = kb.names()
    unknown = [c for c in args.collection or [] if c not in names]
    if unknown:
        sys.stderr.write(f"error: no collection named {', '.join(unknown)}; there are: {', '.join(names)}\n")
        return 2
    collections = names
    if args.pairs:  # refused now, not after every pair has been read
        try:
            Path(args.pairs).open("w", encoding="utf-8").close()
        except OSError as exc:
            sys.stderr.write(f"error: cannot write the pairs to {args.pairs}: {exc.strerror or exc}\n")
            return 2
    if args.collection:
        items = [i for i in items if not i.get("sources") or set(i["sources"]) & set(args.collection)]
    common.prepare_model(settings)
    model = get_chat_model(settings, role="grader")
    pairs: list[dict] = []
    try:
        result = calibrate.calibrate(settings, model, kb, items, collections, pairs_out=pairs,
                                     progress=lambda d, t: common.progress(d, t, "labelled pairs read"))
    except calibrate.CalibrationError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if args.pairs:
        Path(args.pairs).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in pairs), encoding="utf-8")
        sys.stderr.write(f"{len(pairs)} labelled pairs written to {args.pairs}\n")
    print(json.dumps(result, ensure_ascii=False, indent=2) if args.json else render(result))
    return _save(settings, result, args.no_save)


def _save(settings: Settings, result: dict, skip: bool) -> int:
    from core.studio import calibrate

    if skip:
        sys.stderr.write("not saved (--no-save)\n")
        return 0
    try:
        refuse_if_read_only(settings, "saving a calibration")
    except ReadOnlyError as exc:
        sys.stderr.write(f"not saved: {exc}\n")
        return 0
    calibrate.save(settings, result)
    sys.stderr.write(f"saved: runs with {result['model']} now use these thresholds\n")
    return 0


def render(result: dict) -> str:
    """One block per grader: AUC, threshold, and the rates fitted and held out."""
    lines = [f"calibration of {result['model']} on {result['questions']} questions ({result['seconds']} s)"]
    for grader, rep in result["graders"].items():
        if "error" in rep:
            lines.append(f"  {grader:<19} not fitted: {rep['error']}")
            continue
        ratio = f"  ratio to the best {rep['ratio']} (AUC below the best {rep['auc_below_best']})" if "ratio" in rep else ""
        lines.append(f"  {grader:<19} AUC {rep['auc']}  threshold {rep['threshold']}{ratio}  ({rep['pairs']} pairs, "
                     f"{rep['positives']} positive)")
        for side in ("fitted", "held_out"):
            if side in rep:
                shares = ", ".join(f"{k} {v['hits']}/{v['of']}" for k, v in rep[side].items())
                lines.append(f"  {'':<19} {side.replace('_', ' ')}: {shares}")
    return "\n".join(lines)


def register(sub) -> dict:
    """Add this group's sub-commands to ``sub``; return command -> handler."""
    p = sub.add_parser("grade", help="one grader's verdicts on JSON from stdin (or --file), with p and threshold",
                       description='Reads {"question", "documents": [{"text", "source"}], "answer"}; relevance and '
                       "crag grade each document, grounded and useful the answer.")
    p.add_argument("--grader", choices=GRADERS, required=True)
    p.add_argument("--file", help="read the request from this file instead of stdin")
    p.add_argument("--thresholds", help='override thresholds for this call, e.g. "relevance=0.6,crag=0.2:0.7"')
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("calibrate", help="fit each grader's threshold for the model on labelled pairs and save it")
    p.add_argument("--set", help="a JSONL question set (default: the built-in set over the samples)")
    p.add_argument("--collection", action="append", help="only questions about this collection (repeatable)")
    p.add_argument("--no-save", action="store_true", help="report only; keep the thresholds in use")
    p.add_argument("--pairs", help="also write every labelled pair read (grader, question, p, positive) to this JSONL file")
    p.add_argument("--json", action="store_true")
    return {"grade": cmd_grade, "calibrate": cmd_calibrate}
