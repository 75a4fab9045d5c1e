"""JSON schema -> GBNF grammar for the embedded model, with number bounds enforced.

llama.cpp's converter ignores ``minimum`` / ``maximum``: a constrained model could still write a
confidence of 1000000000000000 where the schema says at most 1. Here a bounded integer or number
gets a rule that can only spell values inside its range; everything else is llama.cpp's converter.
"""

from __future__ import annotations

import json
import math

from llama_cpp.llama_grammar import SchemaConverter

MAX_DIGITS = 15  # like llama.cpp's own number rule: a missing bound means "15 digits at most"
FRACTION = '("." [0-9]{1,6})?'  # decimals a bounded number may carry inside its range
MAX_GRID = 200  # a number range with fractional bounds is spelled value by value, up to this many
BOUND_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def schema_to_gbnf(schema: dict) -> str:
    """The GBNF grammar of ``schema``; numbers outside their bounds cannot be produced."""
    converter = _BoundedConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    schema = converter.resolve_refs(json.loads(json.dumps(schema)), "schema")
    converter.visit(schema, "")
    return converter.format_grammar()


class _BoundedConverter(SchemaConverter):
    def visit(self, schema, name):
        if isinstance(schema, dict) and schema.get("type") in ("integer", "number") \
                and any(k in schema for k in BOUND_KEYS) and not any(k in schema for k in ("enum", "const")):
            rule_name = name or "root"
            rule = integer_rule(*_int_bounds(schema)) if schema["type"] == "integer" else number_rule(schema)
            return self._add_rule(rule_name, f"({rule}) space")
        return super().visit(schema, name)


# ---------------------------------------------------------------- integers


def _int_bounds(schema: dict) -> tuple[int, int]:
    top = 10**MAX_DIGITS - 1
    lo, hi = -top, top
    if "minimum" in schema:
        lo = max(lo, math.ceil(schema["minimum"]))
    if "exclusiveMinimum" in schema:
        lo = max(lo, math.floor(schema["exclusiveMinimum"]) + 1)
    if "maximum" in schema:
        hi = min(hi, math.floor(schema["maximum"]))
    if "exclusiveMaximum" in schema:
        hi = min(hi, math.ceil(schema["exclusiveMaximum"]) - 1)
    if lo > hi:
        raise ValueError(f"no integer satisfies the bounds of {schema}")
    return lo, hi


def integer_rule(lo: int, hi: int) -> str:
    """Alternatives that spell exactly the integers lo..hi (no leading zeros, "-" for negatives)."""
    parts = []
    if lo < 0:
        parts += [f'"-" {p}' for p in _digit_patterns(max(1, -hi), -lo)]
    if hi >= 0:
        parts += _digit_patterns(max(0, lo), hi)
    return " | ".join(parts)


def _digit_patterns(lo: int, hi: int) -> list[str]:
    """Digit-class sequences covering lo..hi (0 <= lo <= hi), split where the digit count changes."""
    if lo > hi:
        return []
    stops, nines, zeros = {hi}, 1, 1
    stop = _count_nines(lo, nines)
    while lo <= stop < hi:
        stops.add(stop)
        nines += 1
        stop = _count_nines(lo, nines)
    stop = _count_zeros(hi + 1, zeros) - 1
    while lo < stop <= hi:
        stops.add(stop)
        zeros += 1
        stop = _count_zeros(hi + 1, zeros) - 1
    patterns, start = [], lo
    for stop in sorted(stops):
        patterns.append(_range_pattern(start, stop))
        start = stop + 1
    return patterns


def _count_nines(n: int, k: int) -> int:
    text = str(n)
    return int(text[:-k] + "9" * k) if len(text) > k else int("9" * k)


def _count_zeros(n: int, k: int) -> int:
    return n - n % 10**k


def _range_pattern(start: int, stop: int) -> str:
    """One pattern for start..stop of equal digit count whose digits vary as a block."""
    a, b = str(start), str(stop)
    assert len(a) == len(b), (start, stop)
    out, free = [], 0
    for x, y in zip(a, b):
        if x == y:
            out.append(f'"{x}"')
        elif x == "0" and y == "9":
            free += 1
        else:
            out.append(f"[{x}-{y}]")
    if free:
        out.append("[0-9]" if free == 1 else f"[0-9]{{{free}}}")
    return "(" + " ".join(out) + ")"


# ---------------------------------------------------------------- numbers


def number_rule(schema: dict) -> str:
    """Numbers inside the bounds: exact for whole-number bounds, a value grid for fractional ones."""
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    exclusive = "exclusiveMinimum" in schema or "exclusiveMaximum" in schema
    whole = all(b is None or float(b).is_integer() for b in (lo, hi))
    if whole and not exclusive and (lo is None or lo >= 0):
        lo_i = 0 if lo is None else int(lo)
        hi_i = 10**MAX_DIGITS - 1 if hi is None else int(hi)
        parts = []
        if hi_i > lo_i:  # I.fff stays below I + 1 <= hi
            parts.append(f"({integer_rule(lo_i, hi_i - 1)}) {FRACTION}")
        parts.append(f'"{hi_i}" ("." "0"{{1,6}})?' if hi is not None else f"({integer_rule(hi_i, hi_i)})")
        return " | ".join(parts)
    if lo is None or hi is None:
        raise ValueError(f"cannot constrain {schema}: give both bounds, or whole non-negative ones")
    return _grid_rule(float(lo), float(hi), schema)


def _grid_rule(lo: float, hi: float, schema: dict) -> str:
    """Every value lo..hi at the finest step the bounds are written in (0.1, 0.01, ...)."""
    decimals = max(_decimals(lo), _decimals(hi), 1)
    scale = 10**decimals
    first, last = round(lo * scale), round(hi * scale)
    if "exclusiveMinimum" in schema:
        first += 1
    if "exclusiveMaximum" in schema:
        last -= 1
    if last < first or last - first + 1 > MAX_GRID:
        raise ValueError(f"cannot constrain {schema}: {last - first + 1} values at a step of {1 / scale}")
    return " | ".join(f'"{n / scale:.{decimals}f}"' for n in range(first, last + 1))


def _decimals(value: float) -> int:
    text = repr(float(value))
    return 0 if "e" in text else len(text.split(".")[1].rstrip("0"))

