"""The UI's texts are kept one way: every table in ui/i18n/, merged once into ``STRINGS``, each key declared once,
nothing added at import time, and no Korean in a ui module outside ui/i18n/."""

from __future__ import annotations

import ast
import importlib
import re
import string
from pathlib import Path

from support.paths import ROOT
from ui.i18n import STRINGS

I18N = ROOT / "ui" / "i18n"
# Hangul syllables, Jamo, compatibility Jamo, extended Jamo A and B
HANGUL = re.compile("[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff]")


def ui_files() -> list[Path]:
    return sorted(ROOT.glob("ui/**/*.py"))


def tables() -> dict[str, dict]:
    """Every ``*_STRINGS`` table of ui/i18n/: 'module.NAME' -> the table."""
    found = {}
    for path in sorted(I18N.glob("*.py")):
        if path.stem == "__init__":  # it merges the tables (and imports them by name)
            continue
        module = importlib.import_module(f"ui.i18n.{path.stem}")
        found |= {f"{path.stem}.{name}": value for name, value in vars(module).items()
                  if name.endswith("_STRINGS") and isinstance(value, dict)}
    return found


def test_no_ui_module_outside_i18n_holds_korean():
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:60]}" for path in ui_files() if I18N not in path.parents
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if HANGUL.search(line)]
    assert found == [], "move these texts into a table of ui/i18n/"


def test_nothing_adds_to_the_table_at_import_time():
    """``STRINGS`` is built once in ui/i18n/__init__.py from the tables; no module updates or assigns into it."""
    writes = []
    for path in ui_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            target = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else \
                node.value if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) else \
                node.target if isinstance(node, ast.AugAssign) else None
            method = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None
            if isinstance(target, ast.Name) and target.id == "STRINGS" and method in (None, "update", "setdefault"):
                writes.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert writes == []


def test_each_key_is_declared_in_one_table_and_all_are_merged():
    """A key in two tables would let one silently replace the other (this is how the citations' "Sources" once
    showed the sidebar's Korean)."""
    owners: dict[str, list[str]] = {}
    for name, table in tables().items():
        for key in table:
            owners.setdefault(key, []).append(name)
    assert {key: names for key, names in owners.items() if len(names) > 1} == {}
    assert set(owners) == set(STRINGS)


def test_every_text_is_english_and_korean_with_the_same_placeholders():
    def fields(text: str) -> set[str]:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}

    bad = [key for key, pair in STRINGS.items()
           if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(s, str) and s for s in pair))
           or fields(pair[0]) != fields(pair[1])]
    assert bad == []


def test_every_key_the_ui_asks_for_is_declared():
    asked = [(f"{path.relative_to(ROOT)}:{node.lineno}", node.args[0].value) for path in ui_files()
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "t" and node.args
             and isinstance(node.args[0], ast.Constant)]
    assert asked and [(where, key) for where, key in asked if key not in STRINGS] == []
