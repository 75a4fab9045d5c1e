"""Token budgets of structured replies, derived from their JSON schema.

A verdict is a word and three search queries are a few dozen tokens, yet every structured call used to be
allowed the run's whole ``max_tokens``: a small model that never closed a JSON string wrote until that limit,
and again on the retry. Each structured call is now allowed what the longest valid reply of its schema can
take (``token_budget``): strings by their ``maxLength`` (which the prompts state), enums, booleans and bounded
numbers by their spelling, lists by ``maxItems`` times their item. A reply cut off at its budget raises
``ReplyCutOff``; the graders take their documented fallback at once instead of paying the budget twice.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated

from langchain_core.exceptions import OutputParserException
from pydantic import BaseModel, BeforeValidator, Field

# tokens per character of a string value: the most measured over Korean and English text on both built-in
# models' tokenizers was 0.77 (Qwen2.5, Korean; benchmarks/grammar_speed.py), rarer syllables cost more
TOKENS_PER_CHAR = 1.0
DEFAULT_STRING_CHARS = 300  # a string the schema leaves unbounded
DEFAULT_ITEMS = 10  # a list the schema leaves unbounded
NUMBER_TOKENS = 16  # an unbounded number: llama.cpp's own rule allows 15 digits and a fraction
SEPARATOR_TOKENS = 2  # a comma or colon and the whitespace a grammar allows around it
SLACK = 1.1, 16  # x 1.1 + 16: whitespace between tokens, the closing braces, a tokenizer's odd split


class ReplyCutOff(OutputParserException):
    """A structured reply stopped at its token budget: the fallback applies, a retry would cost as much again."""

    def __init__(self, tokens: int, schema: str = ""):
        self.tokens = tokens
        of = f" (the budget of {schema})" if schema else ""
        super().__init__(f"cut off at {tokens} tokens{of}")


def bounded_text(limit: int, min_length: int = 0):
    """A string of at most ``limit`` characters: the schema says so (a grammar enforces it), longer is trimmed."""
    return Annotated[str, Field(min_length=min_length, max_length=limit),
                     BeforeValidator(lambda v: " ".join(str(v).split())[:limit] if v is not None else "")]


def token_budget(schema: type[BaseModel] | dict) -> int:
    """The most tokens a valid reply of ``schema`` needs, with slack for whitespace and tokenizer splits."""
    tree = schema if isinstance(schema, dict) else schema.model_json_schema()
    factor, extra = SLACK
    return math.ceil(_tokens(tree, tree.get("$defs", {})) * factor) + extra


def _tokens(node: dict, defs: dict) -> float:
    if "$ref" in node:
        return _tokens(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max(_tokens(option, defs) for option in node[key])
    if "allOf" in node:
        return sum(_tokens(part, defs) for part in node["allOf"])
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        return max(_ascii_tokens(json.dumps(v, ensure_ascii=False)) for v in values)
    kind = node.get("type")
    if kind == "object":
        return 2 + sum(_ascii_tokens(json.dumps(name)) + SEPARATOR_TOKENS + _tokens(sub, defs)
                       for name, sub in node.get("properties", {}).items())
    if kind == "array":
        items = node.get("maxItems", DEFAULT_ITEMS)
        return 2 + items * (_tokens(node.get("items", {}), defs) + SEPARATOR_TOKENS)
    if kind == "string":
        return 2 + node.get("maxLength", DEFAULT_STRING_CHARS) * TOKENS_PER_CHAR
    if kind in ("integer", "number"):
        return _number_tokens(node)
    return 2  # boolean, null


def _ascii_tokens(text: str) -> float:
    """A key or enum value: at most a token per character (more for text outside ASCII)."""
    return sum(1 if ord(c) < 128 else TOKENS_PER_CHAR for c in text)


def _number_tokens(node: dict) -> float:
    bounds = [node[k] for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in node]
    if len(bounds) < 2:
        return NUMBER_TOKENS
    digits = max(len(re.sub(r"\.0$", "", str(b))) for b in bounds)
    return digits + (0 if node.get("type") == "integer" else 7)  # "." and the six decimals the grammar allows


def cut_off(message) -> bool:
    """Whether a reply stopped at its token limit (OpenAI and llama.cpp say length, Ollama too, Anthropic max_tokens)."""
    meta = getattr(message, "response_metadata", None) or {}
    reason = meta.get("finish_reason") or meta.get("done_reason") or meta.get("stop_reason")
    return reason in ("length", "max_tokens")
