"""Which state fields a step's node wrote that a user may change, and checking the values they give.

The kinds come from the pattern's state schema (a ``TypedDict``): text and numbers, a choice when the
values are known, a list of documents (keep a subset of those seen at that step), a list of texts,
or tool calls (edit their arguments). Fields with a reducer (trace, messages, fan-in lists) and the
run's bookkeeping are never offered: changing them would not mean "this node decided otherwise".
"""

from __future__ import annotations

import hashlib
import json
import typing
from typing import Any, Literal, get_args, get_origin

from langchain_core.documents import Document
from langgraph.pregel import Pregel

from core.llm import graders
from core.patterns.state import field_types
from core.run.runner import too_long

# "grounding" records the grader's verdict for the result (the decision a fork may change is "grounded")
NOT_EDITABLE = {"trace", "messages", "sources", "termination_reason", "termination_message", "review", "question",
                "grounding"}
# state field -> (grader schema, field): the values a grader can give it, so the form offers them.
# A schema that no longer has a fixed list (built at run time) makes the field free text.
PREVIEW_CHARS = 300


class FieldError(ValueError):
    """A change that cannot be applied; the message says what is allowed instead."""


def doc_id(doc: Document) -> str:
    """A stable id for a document: its chunk id, its URL, or a digest of its text."""
    meta = doc.metadata or {}
    return str(meta.get("chunk_id") or meta.get("url") or hashlib.sha1(doc.page_content.encode()).hexdigest()[:10])


def summarise_documents(docs: list[Document]) -> list[dict]:
    return [{"id": doc_id(d), "source": d.metadata.get("source", "?"), "title": d.metadata.get("title", ""),
             "page": d.metadata.get("page"), "score": d.metadata.get("score"),
             "collection": d.metadata.get("collection", ""), "text": d.page_content[:PREVIEW_CHARS]} for d in docs]


def schema_fields(graph) -> dict[str, Any]:
    """field -> type annotation of the pattern's state (``Annotated`` kept only around a reducer, which it marks;
    the field declarations of core.patterns.state left out)."""
    return field_types(graph.builder.state_schema)


def field_kind(annotation, value) -> str | None:
    """text | number | documents | texts | tool_calls, or None when the field is not editable."""
    if get_origin(annotation) is typing.Annotated:
        return None  # a reducer: a new value would be added to the old one, not replace it
    if annotation is str:
        return "text"
    if annotation in (int, float):
        return "number"
    if get_origin(annotation) is list:
        (item,) = get_args(annotation) or (None,)
        if item is Document:
            return "documents"
        if item is str:
            return "texts"
        if item is dict and isinstance(value, list) and value and all(
                isinstance(c, dict) and "name" in c and "args" in c for c in value):
            return "tool_calls"
    return None


# fields whose values are the run's source ids (their router schemas are built per run), and what else they take
SOURCE_CHOICES = {"route": ("web", "direct"), "search_sources": ("web",)}


def run_source_ids(values: dict) -> list[str]:
    """The source ids a run had at this step: the state's ``source_ids``, which the first node (contextualize)
    sets to the run's sources ([] before it ran, or when none was chosen and it has not run yet)."""
    return [str(i) for i in values.get("source_ids") or []]


def known_values(field: str, values: dict | None = None, pattern_id: str = "") -> list:
    """The values a grader can give this field (``values``: the state at the step), or [] when it is free.

    The pattern declares which grader schema fills which of its fields (``Pattern.field_values``).
    """
    from core.patterns import get_pattern

    if field in SOURCE_CHOICES:
        ids = run_source_ids(values or {})
        return [*ids, *SOURCE_CHOICES[field]] if ids else []
    try:
        declared = get_pattern(pattern_id).field_values
    except KeyError:
        declared = {}
    schema_name, attr = declared.get(field, ("", ""))
    schema = getattr(graders, schema_name, None)
    info = getattr(schema, "model_fields", {}).get(attr)
    annotation = getattr(info, "annotation", None)
    if get_origin(annotation) is list:
        annotation = (get_args(annotation) or (None,))[0]
    return list(get_args(annotation)) if get_origin(annotation) is Literal else []


def routes_on(graph, node: str) -> bool:
    """Whether edges leave the node (a node that picks its successor with a Command cannot be replayed as)."""
    builder = graph.builder
    return node in builder.branches or any(start == node for start, _ in builder.edges) \
        or any(node in starts for starts, _ in getattr(builder, "waiting_edges", ()))


def editable_fields(graph, node: str, before, after, wrote: dict) -> dict:
    """field -> spec {kind, value, choices?, candidates?} for the fields ``node`` wrote at this step."""
    if not routes_on(graph, node):
        return {}
    spec = graph.builder.nodes.get(node)
    echoes = isinstance(getattr(spec, "runnable", None), Pregel)  # a subgraph returns its inputs too
    schema = schema_fields(graph)
    out = {}
    for field in wrote:
        if field in NOT_EDITABLE or field not in schema:
            continue
        value = after.values.get(field)
        if echoes and before.values.get(field) == value:
            continue
        kind = field_kind(schema[field], value)
        if kind is None:
            continue
        entry: dict = {"kind": kind}
        if kind == "documents":
            candidates = _candidates(field, before, after)
            entry.update(value=[doc_id(d) for d in value or []], candidates=summarise_documents(candidates))
        elif kind == "tool_calls":
            entry["value"] = [{"name": c["name"], "args": c.get("args") or {}, "id": c.get("id", "")} for c in value]
        else:
            entry["value"] = value
            choices = known_values(field, after.values, graph.name) if kind in ("text", "number", "texts") else []
            if choices:
                entry["choices"] = choices
        out[field] = entry
    return out


def _candidates(field: str, before, after) -> list[Document]:
    """The documents a list field may keep at this step: its own, then any other seen before or after it."""
    seen: dict[str, Document] = {}
    lists = [after.values.get(field)] + [snap.values.get(k) for snap in (after, before) for k in sorted(snap.values)]
    for docs in lists:
        if isinstance(docs, list):
            for d in docs:
                if isinstance(d, Document):
                    seen.setdefault(doc_id(d), d)
    return list(seen.values())


# ---------------------------------------------------------------- checking a change


def coerce(field: str, spec: dict, raw: Any, after_values: dict, before_values: dict, max_chars: int) -> Any:
    """The state value for a change to ``field``: raw text (CLI) or a typed value (UI), checked.

    A changed text is bounded like a question (``max_chars``, the settings' ``max_question_chars``): it is one.
    """
    kind = spec["kind"]
    if kind == "text":
        text = " ".join(str(raw).split()) if "choices" in spec else str(raw).strip()
        if not text:
            raise FieldError(f"{field} cannot be empty")
        problem = too_long(field, text, max_chars)
        if problem:
            raise FieldError(problem)
        _check_choice(field, spec, [text])
        return text
    if kind == "number":
        try:
            number = int(str(raw).strip())
        except ValueError:
            raise FieldError(f"{field} must be a whole number, got {raw!r}") from None
        if number < 0:
            raise FieldError(f"{field} cannot be negative, got {number}")
        _check_choice(field, spec, [number])
        return number
    if kind == "texts":
        items = _items(raw, field)
        if not items:
            raise FieldError(f"{field} needs at least one value")
        _check_choice(field, spec, items)
        return items
    if kind == "documents":
        return _documents(field, spec, raw, after_values, before_values)
    if kind == "tool_calls":
        return _tool_calls(field, spec, raw, after_values.get(field) or [])
    raise FieldError(f"{field} cannot be changed")  # pragma: no cover - kinds are closed


def _check_choice(field: str, spec: dict, values: list) -> None:
    choices = spec.get("choices")
    bad = [v for v in values if choices and v not in choices]
    if bad:
        raise FieldError(f"{field} must be one of {', '.join(map(str, choices))}; got {', '.join(map(str, bad))}")


def _items(raw: Any, field: str) -> list[str]:
    if isinstance(raw, list):
        return [str(x).strip() for x in raw if str(x).strip()]
    text = str(raw).strip()
    if text.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FieldError(f"{field}: not a JSON list ({exc.msg})") from None
        return _items(data if isinstance(data, list) else [data], field)
    return [part.strip() for part in text.split(",") if part.strip()]


def _documents(field: str, spec: dict, raw: Any, after_values: dict, before_values: dict) -> list[Document]:
    wanted = _items(raw, field)
    by_id = {c["id"]: c for c in spec["candidates"]}
    unknown = [w for w in wanted if w not in by_id]
    if unknown:
        raise FieldError(f"{field}: unknown document id(s) {', '.join(unknown)}; the documents at this step are: "
                         + (", ".join(by_id) or "none"))
    docs = {doc_id(d): d for values in (after_values, before_values) for v in values.values() if isinstance(v, list)
            for d in v if isinstance(d, Document)}
    own = {doc_id(d): d for d in after_values.get(field) or []}  # the field's own copies first (refined strips)
    order = list(by_id)
    return [own.get(i) or docs[i] for i in sorted(set(wanted), key=order.index)]


def _tool_calls(field: str, spec: dict, raw: Any, current: list[dict]) -> list[dict]:
    """Edited tool calls: a list of {name, args}, one call's args as an object, or (one call) its query text."""
    data = raw
    if isinstance(raw, str):
        text = raw.strip()
        try:
            data = json.loads(text) if text[:1] in "[{" else text
        except json.JSONDecodeError as exc:
            raise FieldError(f"{field}: not valid JSON ({exc.msg})") from None
    if isinstance(data, (str, dict)) and not (isinstance(data, dict) and "args" in data):
        if len(current) != 1:
            raise FieldError(f"{field} holds {len(current)} calls: give a JSON list of {{\"name\", \"args\"}}, one per call")
        args = {"query": data} if isinstance(data, str) else data
        data = [{"name": current[0]["name"], "args": args}]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise FieldError(f"{field} must be a list of tool calls like [{{\"name\": \"...\", \"args\": {{...}}}}]")
    calls = []
    for i, call in enumerate(data):
        if not isinstance(call, dict) or not str(call.get("name", "")).strip() or not isinstance(call.get("args"), dict):
            raise FieldError(f"{field}[{i}] needs a tool \"name\" and an \"args\" object, got {call!r}")
        old = current[i] if i < len(current) else {}
        calls.append({"name": str(call["name"]).strip(), "args": call["args"],
                      "id": call.get("id") or old.get("id") or f"what_if_{i}", "type": "tool_call"})
    return calls
