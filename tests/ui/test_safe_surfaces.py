"""Every Streamlit call that renders Markdown gets text the app wrote, or text through the safe renderer.

Issue #21: document, file-name, web-page, model and visitor text reached ``st.caption``, checkbox labels
and messages as Markdown (``![f](https:\\\\evil.example\\f.png).md`` was fetched by every viewer). This
test reads the source of ``ui/``, ``pages/`` and the home page and fails on any such call whose text is
not provably safe: a literal, a ``t(...)`` message with safe arguments, ``safe_markdown`` /
``plain_markdown``, numbers, or an f-string of those. A value that is safe for a reason the test cannot
see (an id we generated, a model name from our own table) carries a ``# md-safe: why`` comment on the
call's lines — so a new surface is safe by construction or reviewed by a person.
"""

from __future__ import annotations

import ast

import pytest

from support.paths import ROOT

FILES = sorted([*ROOT.glob("ui/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "streamlit_app.py"])

# Streamlit functions whose text argument (first positional, or the keywords below) is rendered as Markdown
RENDERERS = {"markdown", "caption", "write", "success", "error", "warning", "info", "toast", "title", "header",
             "subheader", "expander", "checkbox", "button", "toggle", "radio", "selectbox", "multiselect",
             "text_input", "text_area", "number_input", "popover", "status", "metric", "page_link", "link_button",
             "download_button", "form_submit_button", "progress", "select_slider", "slider", "file_uploader",
             "chat_input", "segmented_control", "pills", "update"}
TEXT_KEYWORDS = {"body", "label", "text", "help", "placeholder"}
SAFE_CALLS = {"safe_markdown", "plain_markdown", "t"}
NUMBERS = {"len", "int", "float", "round"}  # whatever they are given, they give a number
# the app's own builders of Markdown: registry text, our labels, numbers, and anything else through the renderer
SAFE_BUILDERS = {"source_label", "describe", "run_figures", "pattern_title", "pattern_description", "embedded_notice",
                 "outcome_text", "budget_line", "kind_label", "waits_for", "termination_label", "claims_cost",
                 "claim_summary"}
TRANSPARENT = {"column_markdown"}  # safe when what they wrap is
STRING_METHODS = {"replace", "strip", "lower", "upper", "title"}  # safe text stays safe
MARK = "# md-safe:"
NOT_STREAMLIT = {"kb", "registry", "json", "re", "os", "p", "prefs", "store", "logger"}  # kb.info() is no st.info()


def _renderers(call: ast.Call) -> list[str]:
    """The Streamlit renderers a call may reach: ``st.error(...)``, and those named inside its callee expression
    (``(st.success if ok else st.error)(...)``, ``{True: st.info}[ok](...)``), which the direct form missed."""
    callees = [call.func] if isinstance(call.func, ast.Attribute) else \
        [n for n in ast.walk(call.func) if isinstance(n, ast.Attribute)]
    return [n.attr for n in callees if n.attr in RENDERERS
            and not (isinstance(n.value, ast.Name) and n.value.id in NOT_STREAMLIT)]


def _safe(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(_safe(v.value) if isinstance(v, ast.FormattedValue) else True for v in node.values)
    if isinstance(node, ast.BinOp):
        return _safe(node.left) and _safe(node.right)
    if isinstance(node, ast.IfExp):
        return _safe(node.body) and _safe(node.orelse)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SAFE_BUILDERS | NUMBERS:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STRING_METHODS:
        return _safe(node.func.value) and all(_safe(a) for a in node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in TRANSPARENT:
        return all(_safe(a) for a in node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SAFE_CALLS:
        if node.func.id in ("safe_markdown", "plain_markdown"):
            return True
        return all(_safe(a) for a in node.args[1 if node.func.id == "t" else 0:]) and \
            all(_safe(k.value) for k in node.keywords)
    return False


def _texts(call: ast.Call) -> list[ast.AST]:
    texts = [k.value for k in call.keywords if k.arg in TEXT_KEYWORDS]
    first_is_text = any(name not in ("progress", "update", "page_link") for name in _renderers(call))
    if call.args and first_is_text:  # progress(value, text=...), page_link(page)
        texts.append(call.args[0])
    return texts


def unsafe_calls() -> list[str]:
    found = []
    for path in FILES:
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and _renderers(node)):
                continue
            if any(MARK in line for line in lines[node.lineno - 1:node.end_lineno]):
                continue
            for text in _texts(node):
                if not _safe(text):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(text)[:90]}")
    return found


def test_no_markdown_surface_shows_text_that_skipped_the_safe_renderer():
    assert unsafe_calls() == []


@pytest.mark.parametrize("expression, safe", [
    ("st.caption(f'{doc.metadata[\"source\"]}')", False),
    ("st.caption(plain_markdown(doc.metadata['source']))", True),
    ("st.success(t('deleted', what=name))", False),
    ("st.success(t('deleted', what=plain_markdown(name)))", True),
    ("st.checkbox(f\"[{n}] {title}\", key='k')", False),
    ("st.error(str(exc))", False),
    ("st.markdown('**Sources**')", True),
    ("bar.progress(0.5, text=label)", False),
    ("(st.success if ok else st.error)(f'**Model:** {status.line()}')", False),
    ("(st.success if ok else st.error)(f'**Model:** {plain_markdown(status.line())}')", True),
    ("{True: st.info, False: st.warning}[ok](name)", False),
    ("kb.info(name)", True),
])
def test_the_check_itself_tells_safe_from_unsafe(expression, safe):
    call = ast.parse(expression).body[0].value
    assert all(_safe(t) for t in _texts(call)) is safe
