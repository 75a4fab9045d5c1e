"""Shared pieces of the Streamlit AppTest suites: a data dir per test, a scripted model, app helpers."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import core.llm.models
from support.paths import ROOT
from support.scripted import ScriptedChatModel
from support.workflow_script import Script

APP = ROOT / "streamlit_app.py"
TIMEOUT = 60
HAPPY_ANSWER = "시그니처 스테이크는 ₩35,000입니다 [1]."


@pytest.fixture
def app_data(sample_data_dir, tmp_path, monkeypatch):
    """A private copy of the indexed sample collections; caches cleared before and after."""
    data = tmp_path / "data"
    shutil.copytree(sample_data_dir / "chroma", data / "chroma")
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    monkeypatch.setenv("RAG_PROVIDER", "embedded")  # no probing of a local Ollama
    for name in ("RAG_MODEL", "RAG_GRADER_MODEL", "OLLAMA_HOST", "OPENAI_API_KEY", "TAVILY_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    st.cache_resource.clear()
    st.cache_data.clear()
    yield data
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def scripted(monkeypatch) -> ScriptedChatModel:
    """The embedded provider answers with a scripted model; other providers stay real."""
    model = ScriptedChatModel(replies=[])
    real = core.llm.models.get_chat_model

    def get_chat_model(settings, role="main"):
        return model if core.llm.models.resolve_provider(settings) == "embedded" else real(settings, role)

    monkeypatch.setattr(core.llm.models, "get_chat_model", get_chat_model)
    return model


def happy_script() -> Script:
    """Every router and grader says yes, replies chosen by prompt: concurrent runs stay deterministic."""
    return Script(router={"route": "restaurant_menu"}, retrieval={"kind": "lookup"}, kind={"kind": "single"},
                  sources={"sources": ["restaurant_menu"]},
                  relevance={"relevant": "yes"}, grounded={"grounded": "yes"}, usefulness={"useful": "yes", "score": 5},
                  strip=lambda m: {"verdicts": ["yes"] * sum("<document>" in line for line in m[-1].content.splitlines())},
                  answer=HAPPY_ANSWER)


def open_page(page: str | None = None, at: AppTest | None = None) -> AppTest:
    """A new session on the home page, or on ``page`` (path relative to streamlit_app.py)."""
    at = at or AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    if page:
        at.switch_page(page).run()
    assert_clean(at)
    return at


def assert_clean(at: AppTest) -> None:
    """No traceback on screen: an exception element is a failure with its message."""
    assert not at.exception, [e.value for e in at.exception]


def texts(at_or_block) -> str:
    """Every markdown, caption, alert and chat text of a tree or block, joined (for `in` checks)."""
    parts = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "subheader", "title"):
        parts += [str(e.value) for e in getattr(at_or_block, kind)]
    return "\n".join(parts)


def button(at: AppTest, label: str | None = None, key_end: str | None = None):
    """The first button with this label or whose key ends with ``key_end``."""
    for b in at.button:
        if (label is not None and b.label == label) or (key_end and (b.key or "").endswith(key_end)):
            return b
    raise AssertionError(f"no button {label or key_end!r}: {[(b.label, b.key) for b in at.button]}")


def charts(at: AppTest) -> list[tuple[dict, list]]:
    """Each Vega-Lite chart (st.altair_chart, st.bar_chart...) as (spec, its datasets as DataFrames)."""
    out = []
    for chart in at.get("vega_lite_chart"):
        frames = [pa.ipc.open_stream(d.data.data).read_pandas() for d in chart.proto.datasets]
        out.append((json.loads(chart.proto.spec), frames))
    return out


def mermaid(at: AppTest) -> list[str]:
    """The Mermaid charts on the page (AppTest shows st.mermaid_chart as a fenced markdown block)."""
    return [str(m.value) for m in at.markdown if str(m.value).startswith("````mermaid")]


def shown(markdown: str) -> str:
    """Markdown as a reader sees it: backslash escapes (what plain_markdown adds) removed."""
    import re

    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)
