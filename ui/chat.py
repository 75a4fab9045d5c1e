"""The chat page of one pattern: history from the checkpointer, a live run, inline review."""

from __future__ import annotations

import streamlit as st

from core.config import Settings
from core.patterns import Pattern, get_pattern
from core.runner import RunInputError, stream_run, thread_history
from core.threads import get_registry
from ui.i18n import t
from ui.live import run_live
from ui.result_view import result_details
from ui.review_panel import resume_live, review_controls
from ui.sidebar import sidebar
from ui.state import current_thread, ensure_samples, set_thread
from ui.whatif import whatif_panel


def chat_page(pattern_id: str) -> None:
    pattern = get_pattern(pattern_id)
    st.set_page_config(page_title=pattern.title, page_icon="💬", layout="wide")
    settings, options = sidebar(pattern_id)
    st.title(pattern.title)
    st.caption(pattern.description.replace("\n", "  \n"))
    if not ensure_samples(settings):
        return
    thread_id = current_thread(pattern_id, settings)
    turns = thread_history(settings, thread_id) if thread_id else []
    for i, turn in enumerate(turns):
        _turn(turn, settings, key=f"{thread_id}_{i}", latest=i == len(turns) - 1)
    thread = get_registry(settings.data_path).get(thread_id) if thread_id else None
    waiting = bool(thread and thread["status"] == "waiting")
    question = None
    if waiting and turns and (turns[-1]["result"] or {}).get("interrupt"):
        with st.chat_message("assistant", avatar="⏸️"):
            st.info(t("waiting_review"))
            decision = review_controls(thread_id, turns[-1]["result"]["interrupt"])
            whatif_panel(turns[-1]["result"], settings, key=f"{thread_id}_{len(turns) - 1}")
            if decision is not None:
                resume_live(thread_id, decision, settings)
                st.rerun()
    elif turns and (turns[-1]["result"] or {}).get("error"):
        if st.button(t("try_again"), key=f"retry_{thread_id}_{len(turns)}", icon="🔁"):
            question = turns[-1]["question"]
    question = _draft(pattern_id) or question
    typed = st.chat_input(t("ask"), key=f"chat_{pattern_id}", submit_mode="disable", disabled=waiting)
    question = typed if typed is not None else question
    if question is not None:
        _run(pattern, question, settings, options, thread_id)


def _turn(turn: dict, settings: Settings, key: str, latest: bool) -> None:
    result = turn["result"] or {}
    with st.chat_message("user"):
        st.markdown(turn["question"])
    if (result.get("interrupted") or not result) and not turn["answer"]:
        return  # paused (the review controls stand for the answer) or never finished (server stopped)
    with st.chat_message("assistant"):
        if result.get("error"):
            st.error(result["error"], icon="⚠️")
        else:
            st.markdown(turn["answer"] or result.get("termination_message") or "")
        if result:
            result_details(result, settings, key=key, with_graph=latest)


def _draft(pattern_id: str) -> str | None:
    """A refused question stays on screen, editable, until it is sent again."""
    draft = st.session_state.get("drafts", {}).get(pattern_id)
    if not draft:
        return None
    st.error(draft["message"], icon="⚠️")
    st.caption(t("draft_kept"))
    text = st.text_area(t("question"), value=draft["question"], key=f"draft_{pattern_id}_{draft['n']}")
    return text if st.button(t("send"), key=f"draft_send_{pattern_id}_{draft['n']}") else None


def _run(pattern: Pattern, question: str, settings: Settings, options: dict, thread_id: str | None) -> None:
    drafts = st.session_state.setdefault("drafts", {})
    with st.chat_message("user"):
        st.markdown(question)
    with st.chat_message("assistant"):
        try:
            final = run_live(stream_run(pattern.id, question, settings, thread_id=thread_id, **options),
                             on_start=lambda tid: set_thread(pattern.id, tid))
        except RunInputError as exc:
            _keep_draft(pattern.id, question, str(exc))
            st.rerun()
    drafts.pop(pattern.id, None)
    result = (final or {}).get("result") or {}
    registered = get_registry(settings.data_path).get(result.get("thread_id") or "")
    if result.get("error") and not registered:  # failed before the thread existed: keep the question
        _keep_draft(pattern.id, question, result["error"])
    st.rerun()


def _keep_draft(pattern_id: str, question: str, message: str) -> None:
    n = st.session_state["draft_count"] = st.session_state.get("draft_count", 0) + 1  # fresh widget keys
    st.session_state.setdefault("drafts", {})[pattern_id] = {"question": question, "message": message, "n": n}
