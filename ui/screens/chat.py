"""The chat page of one pattern: history from the checkpointer, a live run, inline review."""

from __future__ import annotations

import streamlit as st

from core.config import Settings
from core.patterns import Pattern, get_pattern
from core.run.runner import RunInputError, stream_run
from core.store.history import thread_history
from core.store.threads import get_registry
from core.studio.render import safe_markdown, source_links
from ui.i18n import core_text, pattern_description, t
from ui.run.live import run_live
from ui.run.result_view import result_details
from ui.run.review_panel import resume_live, review_controls
from ui.run.whatif import whatif_panel
from ui.shell.nav import linked_thread_notice
from ui.shell.sidebar import sidebar
from ui.shell.state import current_thread, ensure_samples, set_thread, stores_ready

RUNNING_POLL_SECONDS = 2  # how often a turn running elsewhere checks whether it has ended


def chat_page(pattern_id: str) -> None:
    pattern = get_pattern(pattern_id)
    st.set_page_config(page_title=pattern.title, page_icon="💬", layout="wide")
    settings, options = sidebar(pattern_id)
    st.title(pattern.title)  # md-safe: the registry's title
    st.caption(pattern_description(pattern).replace("\n", "  \n"))
    if not stores_ready(settings) or not ensure_samples(settings):
        return
    if linked_thread_notice(pattern_id, settings):  # a stale ?thread= link: said so, and a new chat opens
        set_thread(pattern_id, None)
    thread_id = current_thread(pattern_id, settings)
    turns = thread_history(settings, thread_id) if thread_id else []
    for i, turn in enumerate(turns):
        _turn(turn, settings, key=f"{thread_id}_{i}", latest=i == len(turns) - 1)
    thread = get_registry(settings).get(thread_id) if thread_id else None
    waiting = bool(thread and thread["status"] == "waiting")
    mine = _mine(settings, thread_id)
    question = None
    if thread and not mine:  # read-only: another visitor's thread is read here; asking starts this visitor's own
        st.info(t("others_thread"))
        waiting = False
    elif waiting and turns and turns[-1].get("interrupt"):  # the payload the checkpoint waits on
        with st.chat_message("assistant", avatar="⏸️"):
            st.info(t("waiting_review"))
            decision = review_controls(thread_id, turns[-1]["interrupt"])
            if turns[-1]["result"]:
                whatif_panel(turns[-1]["result"], settings, key=f"{thread_id}_{len(turns) - 1}")
            if decision is not None:
                resume_live(thread_id, decision, settings)
                st.rerun()
    elif turns and (turns[-1]["result"] or {}).get("error"):
        if st.button(t("try_again"), key=f"retry_{thread_id}_{len(turns)}", icon="🔁"):
            question = turns[-1]["question"]
    _draft(pattern_id)
    typed = st.chat_input(t("ask"), key=f"chat_{pattern_id}", submit_mode="disable", disabled=waiting)
    question = typed if typed is not None else question
    if question is not None:
        _run(pattern, question, settings, options, thread_id if mine else None)


def _mine(settings: Settings, thread_id: str | None) -> bool:
    """Whether this session may add to the thread: always, unless read-only, where only threads it started.

    Every visitor sees every thread in the sidebar; in read-only mode a visitor's question must not land in
    someone else's conversation, so it starts a thread of this visitor's own instead.
    """
    return not settings.read_only or not thread_id or thread_id in st.session_state.get("own_threads", set())


def _started(pattern_id: str, thread_id: str) -> None:
    """A run of this session started (or continued) ``thread_id``: open it, and remember it is this visitor's."""
    st.session_state.setdefault("own_threads", set()).add(thread_id)
    set_thread(pattern_id, thread_id)


def _turn(turn: dict, settings: Settings, key: str, latest: bool) -> None:
    result = turn["result"] or {}
    with st.chat_message("user"):
        st.markdown(safe_markdown(turn["question"]))  # as answered: a reviewer's edit replaces the question
        asked = result.get("question")
        if result.get("edited_question") and asked and asked != turn["question"]:
            st.caption(t("edited_in_review", question=safe_markdown(asked)))
    if turn.get("status") == "running":  # a run left moments ago still stopping, or one in another tab
        with st.chat_message("assistant", avatar="⏳"):
            _running_elsewhere(settings, turn["run_id"])
        return
    if result.get("interrupted") and turn.get("interrupt") or (not result and not turn["answer"]):
        return  # paused: the review controls stand for the answer (a draft under review is shown there, not here)
    with st.chat_message("assistant"):
        if result.get("error"):
            st.error(safe_markdown(result["error"]), icon="⚠️")
        else:  # model text: no images, no raw HTML, links only to the run's own sources
            st.markdown(safe_markdown(turn["answer"] or result.get("termination_message") or "", source_links(result)))
        if result:
            result_details(result, settings, key=key, with_graph=latest)


@st.fragment(run_every=RUNNING_POLL_SECONDS)
def _running_elsewhere(settings: Settings, run_id: int) -> None:
    """Say the turn is running; once its run has ended, show the page again with its result."""
    if get_registry(settings).run_status(run_id) != "running":
        st.rerun()
    st.caption(t("status_running"))


def _draft(pattern_id: str) -> None:
    """A refused question goes back into the one chat input, editable, with the reason just above it."""
    draft = st.session_state.get("drafts", {}).pop(pattern_id, None)
    if not draft:
        return
    st.error(safe_markdown(core_text(draft["message"])), icon="⚠️")
    if draft["question"].strip():
        st.session_state[f"chat_{pattern_id}"] = draft["question"]  # Streamlit 1.67 lets code fill a chat input
        st.caption(t("draft_kept"))


def _run(pattern: Pattern, question: str, settings: Settings, options: dict, thread_id: str | None) -> None:
    drafts = st.session_state.setdefault("drafts", {})
    with st.chat_message("user"):
        st.markdown(safe_markdown(question))
    with st.chat_message("assistant"):
        try:
            final = run_live(stream_run(pattern.id, question, settings, thread_id=thread_id, **options),
                             on_start=lambda tid: _started(pattern.id, tid))
        except RunInputError as exc:
            _keep_draft(pattern.id, question, str(exc))
            st.rerun()
    drafts.pop(pattern.id, None)
    result = (final or {}).get("result") or {}
    registered = get_registry(settings).get(result.get("thread_id") or "")
    if result.get("error") and not registered:  # failed before the thread existed: keep the question
        _keep_draft(pattern.id, question, result["error"])
    st.rerun()


def _keep_draft(pattern_id: str, question: str, message: str) -> None:
    st.session_state.setdefault("drafts", {})[pattern_id] = {"question": question, "message": message}
