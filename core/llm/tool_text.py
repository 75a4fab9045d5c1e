"""JSON and tool calls that a model wrote as text: found, repaired when cut off, or refused.

A model that writes ``{"tool_calls": [...]}`` (or Qwen's ``<tool_call>{...}</tool_call>``) into its
answer, or whose JSON the token limit cut off, has not answered: the call is parsed as a tool call when
it names a bound tool with its required arguments, and otherwise refused (an invalid tool call with an
empty answer), never shown to the user as an answer.
"""

from __future__ import annotations

import json
import re
import uuid

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_LOOKS_LIKE_CALL = re.compile(r'"tool_calls"\s*:|<tool_call>|"name"\s*:\s*"[^"]*"\s*,\s*"(arguments|args|parameters)"\s*:')


def repair_json(text: str):
    """Parse JSON, closing strings and brackets the token limit left open; None when it cannot be parsed."""
    text = _FENCE.sub("", text.strip()).strip()
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    text = text[start:]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:  # a complete value followed by chatter
        return json.JSONDecoder().raw_decode(text)[0]
    except json.JSONDecodeError:
        pass
    closers, in_string, escaped = [], False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
        elif ch in "}]" and closers:
            closers.pop()
    tail = text + ('"' if in_string else "")
    tail = re.sub(r"[,:]\s*$", "", tail.rstrip())  # a dangling separator cannot be completed
    try:
        return json.loads(tail + "".join(reversed(closers)))
    except json.JSONDecodeError:
        return None


def looks_like_tool_call(text: str) -> bool:
    return bool(_LOOKS_LIKE_CALL.search(text or ""))


def tool_calls_in_text(text: str, tools: list[dict]) -> list[dict]:
    """The calls of bound tools written in ``text`` (OpenAI-style tool dicts), with their required arguments."""
    blocks = _TAGGED.findall(text) or [text]
    calls = []
    for block in blocks:
        data = repair_json(block)
        for raw in _raw_calls(data):
            call = _valid_call(raw, tools)
            if call:
                calls.append(call)
    return calls


def _raw_calls(data) -> list[dict]:
    if isinstance(data, list):
        return [c for c in data if isinstance(c, dict)]
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("tool_calls"), list):
        return [c for c in data["tool_calls"] if isinstance(c, dict)]
    if isinstance(data.get("answer"), str) and looks_like_tool_call(data["answer"]):
        return _raw_calls(repair_json(data["answer"]))
    return [data] if "name" in data or "function" in data else []


def _valid_call(raw: dict, tools: list[dict]) -> dict | None:
    fn = raw.get("function") if isinstance(raw.get("function"), dict) else raw
    name = fn.get("name")
    args = next((fn[k] for k in ("arguments", "args", "parameters") if k in fn), {})
    if isinstance(args, str):
        args = repair_json(args) if args.strip() else {}
    spec = next((t["function"] for t in tools if t["function"]["name"] == name), None)
    if spec is None or not isinstance(args, dict):
        return None
    required = (spec.get("parameters") or {}).get("required", [])
    if any(not str(args.get(key, "")).strip() for key in required):
        return None
    return {"name": name, "args": args, "id": "call_" + uuid.uuid4().hex[:12], "type": "tool_call"}


def refused_call(text: str, reason: str) -> dict:
    """LangChain's record of a tool call that could not be used (``AIMessage.invalid_tool_calls``)."""
    return {"name": None, "args": text[:2000], "id": "call_" + uuid.uuid4().hex[:12], "error": reason,
            "type": "invalid_tool_call"}
