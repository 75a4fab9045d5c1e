"""The package order of DESIGN.md §2, read from the imports: an import only ever points down the list.

Lazy imports inside functions count too: they hide a dependency, they do not remove it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# top to bottom; a module may import its own layer and the layers below it
LAYERS = ["ui", "core.cli", "core.studio", "core.run", "core.patterns", "core.runtime", "core.knowledge", "core.llm",
          "core.store", "core.base"]
BASE = ("core.config", "core.secrets", "core.endpoints", "core.prompts")  # bottom: settings, secrets, URL policy, prompts


def layer(module: str) -> str | None:
    if module.startswith(("ui", "pages", "streamlit_app")):
        return "ui"
    if module == "core" or module.startswith(BASE):
        return "core.base"
    return next((name for name in LAYERS if module == name or module.startswith(name + ".")), None)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names) of every import of our own code in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("core", "ui"):
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.split(".")[0] in ("core", "ui")]
    return found


def own_files() -> list[Path]:
    return sorted([*ROOT.glob("core/**/*.py"), *ROOT.glob("ui/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "streamlit_app.py"])


def test_every_core_module_sits_in_a_layer():
    assert [module_name(p) for p in ROOT.glob("core/**/*.py") if layer(module_name(p)) is None] == ["core.__main__"]


def test_imports_only_point_down_the_layers():
    upward = []
    for path in own_files():
        here = module_name(path)
        if here == "core.__main__":
            continue  # `python -m core` hands over to core.cli
        for line, target, names in imports(path):
            targets = [f"{target}.{n}" for n in names if layer(f"{target}.{n}")] if target == "core" else [target]
            for t in targets:
                if LAYERS.index(layer(t)) < LAYERS.index(layer(here)):
                    upward.append(f"{path.relative_to(ROOT)}:{line} {here} -> {t}")
    assert upward == []


def test_no_private_name_is_imported_across_packages():
    crossing = []
    for path in own_files():
        here = module_name(path)
        for line, target, names in imports(path):
            if layer(target) != layer(here) and any(n.startswith("_") for n in names):
                crossing.append(f"{path.relative_to(ROOT)}:{line} {target}: {names}")
    assert crossing == []


def test_no_streamlit_in_core():
    users = [str(p.relative_to(ROOT)) for p in ROOT.glob("core/**/*.py")
             if any(line.split()[:2] in (["import", "streamlit"], ["from", "streamlit"]) or
                    line.strip().startswith(("import streamlit", "from streamlit"))
                    for line in p.read_text(encoding="utf-8").splitlines())]
    assert users == []


def _module_graph() -> dict[str, set[str]]:
    """Imports between our modules, lazy ones included (a late import hides a cycle, it does not break it)."""
    graph: dict[str, set[str]] = {}
    known = {module_name(p) for p in own_files()}
    for path in own_files():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                candidates = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                deps |= {c for c in candidates if c in known}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in known}
        graph[module_name(path)] = deps - {module_name(path)}
    return graph


def test_there_is_no_import_cycle():
    graph, cycles, state = _module_graph(), [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                cycles.append(" -> ".join(stack[stack.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, stack + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


@pytest.mark.parametrize("module, expected", [("core.llm.graders", "core.llm"), ("core.config", "core.base"),
                                              ("core", "core.base"), ("ui.screens.chat", "ui"), ("core.cli", "core.cli")])
def test_layers_are_told_apart(module, expected):
    assert layer(module) == expected


def test_test_modules_import_no_other_test_module():
    """Shared test code lives in the package tests/support: a test module imported by another would run its
    tests twice and tie the two files together. Code a test runs with ``python -c`` counts too, so the lines are
    read as text (such code is often a template that does not parse)."""
    statement = re.compile(r"^\s*(?:from|import)\s+([\w.]*test_\w+)", re.MULTILINE)
    found = [f"{path.name}: {name}" for path in sorted((ROOT / "tests").rglob("*.py"))
             for name in statement.findall(path.read_text(encoding="utf-8"))]
    assert not found, found


def test_tests_are_laid_out_as_the_code_and_share_code_only_through_support():
    """tests/core/<layer>, tests/ui, tests/browser, tests/benchmarks hold test modules only; everything else a
    test needs is in tests/support (conftest.py and this file are the two modules at the top)."""
    tests = ROOT / "tests"
    groups = {"core", "ui", "browser", "benchmarks", "support"}
    assert {p.name for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"} == groups
    assert sorted(p.name for p in tests.glob("*.py")) == ["conftest.py", "test_architecture.py"]
    layers = {name.split(".")[1] for name in LAYERS if name.startswith("core.") and name != "core.base"}
    assert {p.name for p in (tests / "core").iterdir() if p.is_dir() and p.name != "__pycache__"} <= layers
    stray = [str(p.relative_to(tests)) for p in tests.rglob("*.py")
             if "support" not in p.parts and p.parent != tests and not p.name.startswith("test_")]
    assert not stray, stray


# ui/'s folders, top to bottom, the same rule inside the ui layer: the pages call screens, screens put together the
# run views, the run views show evidence, everything sits in the shell, and every text comes from ui/i18n
UI_LAYERS = ["pages", "ui.screens", "ui.run", "ui.evidence", "ui.shell", "ui.i18n"]


def ui_layer(module: str) -> str | None:
    if module.startswith("pages.") or module == "streamlit_app":
        return "pages"
    return next((name for name in UI_LAYERS if module == name or module.startswith(name + ".")), None)


def test_ui_is_folders_and_every_ui_module_sits_in_one():
    assert sorted(p.name for p in (ROOT / "ui").glob("*.py")) == ["__init__.py"]
    assert sorted(p.name for p in (ROOT / "ui").iterdir() if p.is_dir() and p.name != "__pycache__") == \
        sorted(name.removeprefix("ui.") for name in UI_LAYERS[1:])
    assert [module_name(p) for p in ROOT.glob("ui/**/*.py") if ui_layer(module_name(p)) is None] == ["ui"]


def test_ui_imports_only_point_down_its_folders():
    upward = []
    for path in own_files():
        here = ui_layer(module_name(path))
        if here is None:
            continue
        for line, target, names in imports(path):
            targets = [f"{target}.{n}" for n in names] if target == "ui" else [target]
            for t in targets:
                there = ui_layer(t)
                if there is not None and UI_LAYERS.index(there) < UI_LAYERS.index(here):
                    upward.append(f"{path.relative_to(ROOT)}:{line} {module_name(path)} -> {t}")
    assert upward == []


@pytest.mark.parametrize("module, expected", [("pages.1_Basic_RAG", "pages"), ("streamlit_app", "pages"),
                                              ("ui.screens.chat", "ui.screens"), ("ui.i18n", "ui.i18n"),
                                              ("ui.i18n.trace", "ui.i18n"), ("ui.shell.sidebar", "ui.shell"),
                                              ("ui", None), ("ui.runner", None)])
def test_ui_folders_are_told_apart(module, expected):
    assert ui_layer(module) == expected
