"""How a pattern's state declares its fields: each field once, with its default and what it holds.

A state is a ``TypedDict`` (what LangGraph's StateGraph reads, reducers included) whose every field is
``Annotated`` with a declaration: ``per_turn(default, doc)`` (set to ``default`` at the start of every turn),
``per_question(default, doc)`` (also when a reviewer edits the question: it belongs to the question being
answered) or ``kept(doc)`` (carried from turn to turn). A reducer, when the field has one, comes last:
``Annotated[list[dict], per_turn(None, "..."), add_or_reset]``. A turn's input, a pattern's per-turn reset
and what an edited question clears are read from the declarations; the checkpoints see the same field names
and reducers as a plain ``TypedDict`` would.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin, get_type_hints

TURN, QUESTION, KEPT = "turn", "question", "kept"


@dataclass(frozen=True)
class Field:
    """One state field's declaration: its default, what it holds, and when it returns to its default."""

    default: Any
    doc: str
    scope: str  # TURN, QUESTION (a turn, and a reviewer's edited question) or KEPT (never: history)


def per_turn(default: Any, doc: str) -> Field:
    """A field every turn starts at ``default``."""
    return Field(default, doc, TURN)


def per_question(default: Any, doc: str) -> Field:
    """A field of the question being answered: ``default`` at every turn and after a reviewer edits the question."""
    return Field(default, doc, QUESTION)


def kept(doc: str) -> Field:
    """A field carried from turn to turn (the conversation)."""
    return Field(None, doc, KEPT)


def declared(schema: type) -> dict[str, Field]:
    """field -> its declaration, for every field of ``schema`` (inherited ones included).

    Raises TypeError for a field not annotated ``Annotated[type, declaration]`` or ``Annotated[type,
    declaration, reducer]`` (LangGraph reads a reducer only as the last annotation: anywhere else the field
    would silently become last-value-wins).
    """
    out = {}
    for name, hint in get_type_hints(schema, include_extras=True).items():
        meta = get_args(hint)[1:] if get_origin(hint) is Annotated else ()
        if not meta or not isinstance(meta[0], Field) or len(meta) > 2:
            raise TypeError(f"{schema.__name__}.{name} is not declared as Annotated[type, per_turn / per_question / "
                            "kept(...)] or Annotated[type, declaration, reducer]")
        out[name] = meta[0]
    return out


def turn_defaults(schema: type) -> dict:
    """Every per-turn and per-question field at its default (fresh copies): the state a turn starts from."""
    return {name: copy.deepcopy(f.default) for name, f in declared(schema).items() if f.scope != KEPT}


def question_defaults(schema: type) -> dict:
    """The per-question fields at their defaults (fresh copies): what an edited question clears."""
    return {name: copy.deepcopy(f.default) for name, f in declared(schema).items() if f.scope == QUESTION}


def field_types(schema: type) -> dict[str, Any]:
    """field -> its type as LangGraph reads it: the declaration left out, ``Annotated`` kept around a reducer."""
    out = {}
    for name, hint in get_type_hints(schema, include_extras=True).items():
        if get_origin(hint) is Annotated:
            base, *meta = get_args(hint)
            meta = [m for m in meta if not isinstance(m, Field)]
            hint = Annotated[(base, *meta)] if meta else base
        out[name] = hint
    return out
