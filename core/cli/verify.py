"""`python -m core verify`: check an answer's claims from a JSON object on stdin or in a file.

Input: ``{"question": "...", "answer": "...", "documents": [{"text": "...", "source": "..."}]}``.
Exit 0 when the check ran, whatever the verdicts; 2 with one line on stderr when the input is unusable.
"""

from __future__ import annotations

import json
import re
import sys

MAX_INPUT_BYTES = 20_000_000  # ten times a long report with its documents; /dev/zero is refused here, not by MemoryError
_SURROGATE = re.compile("[\ud800-\udfff]")


SHAPES = {"verify": '{"question", "answer", "documents": [{"text", "source"}]}',
          "grade": '{"question", "documents": [{"text", "source"}], "answer"}'}


class InputError(ValueError):
    """The input is not a usable request (verify, grade); the message says why in one line."""


def load_object(text: str, what: str) -> dict:
    """The JSON object of a request; anything else (not JSON, too deep, unreadable numbers) is one InputError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"the input is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:  # "[[[[..." 200,000 deep: the parser's recursion, not a crash
        raise InputError(f"the input is nested too deeply to be a {what} request") from None
    except ValueError as exc:  # a number of more than 4,300 digits (Python's int limit), and its like
        raise InputError(f"the input holds a value Python cannot read ({str(exc).split(':')[0]})") from None
    if not isinstance(data, dict):
        raise InputError(f"the input must be a JSON object: {SHAPES[what]}")
    return data


def checked_documents(data: dict) -> list[dict]:
    """``documents``: a list of objects each with a "text" string."""
    documents = data.get("documents", [])
    if not isinstance(documents, list):
        raise InputError('"documents" must be a list of {"text", "source"} objects')
    for n, doc in enumerate(documents, 1):
        if not isinstance(doc, dict) or not isinstance(doc.get("text"), str):
            raise InputError(f'document {n} must be an object with a "text" string')
    return documents


def refuse_surrogates(*texts: str, documents: list[dict] = ()) -> None:
    """Refuse a lone surrogate escape: valid JSON ("\\ud800"), but no text, so it cannot be printed."""
    texts = (*texts, *(str(doc.get(key, "")) for doc in documents for key in ("text", "source")))
    if any(_SURROGATE.search(t) for t in texts):
        raise InputError("the input holds a lone surrogate escape (\\ud800-\\udfff), which is not text")


def parse_request(text: str) -> dict:
    """The request, checked: an answer string, a list of documents each with text."""
    data = load_object(text, "verify")
    if not isinstance(data.get("answer"), str):
        raise InputError('"answer" is missing or not a string')
    documents = checked_documents(data)
    question = data.get("question", "")
    if not isinstance(question, str):
        raise InputError('"question" must be a string')
    refuse_surrogates(question, data["answer"], documents=documents)
    return {"question": question, "answer": data["answer"], "documents": documents}


def read_input(file: str | None) -> str:
    """The request text from ``file`` or stdin, at most MAX_INPUT_BYTES of it (an endless file is refused)."""
    if not file and not hasattr(sys.stdin, "buffer"):  # a text stream standing in for stdin
        data = sys.stdin.read(MAX_INPUT_BYTES + 1).encode("utf-8", "surrogatepass")
        return _decoded(data)
    source = open(file, "rb") if file else sys.stdin.buffer  # noqa: SIM115 - closed below when it is ours
    try:
        data = source.read(MAX_INPUT_BYTES + 1)
    finally:
        if file:
            source.close()
    return _decoded(data)


def _decoded(data: bytes) -> str:
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"the input is larger than {MAX_INPUT_BYTES // 1_000_000} MB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("the input is not UTF-8 text") from None


def render(result: dict) -> str:
    """The claims as lines a person reads: verdict, sentence, why, and the quote that supports or refutes it."""
    lines = []
    for n, claim in enumerate(result["claims"], 1):
        lines.append(f"{n:>2}. {claim['verdict']:<11} [{claim['checked_by']}] {claim['text']}")
        if claim["reason"]:
            lines.append(f"      {claim['reason']}")
        for ev in claim["evidence"][:1] if claim["verdict"] != "supported" or claim["checked_by"] == "model" else []:
            lines.append(f"      ({ev['source']}, chunk {ev['chunk']})")
    support, cost = result["claim_support"], result["cost"]
    lines.append(f"-- {support['supported']} of {support['claims']} claims supported, {support['unsupported']} "
                 f"unsupported, {support['unchecked']} unchecked | mode {result['mode']}, {cost['llm_calls']} LLM "
                 f"calls, {cost['tokens']} tokens, {cost['ms']} ms")
    for extra in (result.get("note"), result.get("error")):
        if extra:
            lines.append(f"-- {extra}")
    return "\n".join(lines)


def run(settings, args, prepare_model) -> int:
    """The command; ``prepare_model(settings)`` assembles an embedded model's file on first use."""
    from core.llm.claims.check import claim_mode, verify_answer

    try:
        request = parse_request(read_input(args.file))
    except OSError as exc:
        sys.stderr.write(f"error: cannot read {args.file}: {exc.strerror or exc}\n")
        return 2
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    mode = args.mode or claim_mode(settings)
    model = embeddings = None
    if mode == "model":
        from core.llm.models import get_chat_model

        prepare_model(settings)
        model = get_chat_model(settings, role="grader")
    if args.embeddings:
        from core.llm.embeddings import get_embeddings

        embeddings = get_embeddings(settings)
    result = verify_answer(settings, request["answer"], request["documents"], request["question"], model=model,
                           embeddings=embeddings, mode=mode, batch=args.batch)
    print(json.dumps(result, ensure_ascii=False, indent=2) if args.json else render(result))
    return 0
