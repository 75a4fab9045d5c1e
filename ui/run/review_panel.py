"""Review controls for a paused run (document review or tool-call approval) and resuming it."""

from __future__ import annotations

import hashlib
import json

import streamlit as st

from core.config import Settings
from core.run.runner import RunInputError, stream_run
from core.studio.render import plain_markdown, safe_markdown
from ui.i18n import t
from ui.run.live import run_live

TEXT_HEIGHT = 220  # pixels; a longer chunk scrolls inside its box


def _key(thread_id: str, payload: dict) -> str:
    """Widget keys per pause: a second pause of the same thread must not inherit the first's edits."""
    digest = hashlib.sha1(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"rv_{thread_id}_{digest}"


def waits_for(payload: dict) -> str:
    return t("waits_tools") if payload.get("kind") == "tool_approval" else t("waits_docs")


def review_controls(thread_id: str, payload: dict) -> dict | None:
    """Render the controls; return the reviewer's decision on the run a button was pressed in."""
    key = _key(thread_id, payload)
    if payload.get("kind") == "tool_approval":
        return _tool_approval(payload, key)
    return _document_review(payload, key)


def _document_review(payload: dict, key: str) -> dict | None:
    question = st.text_area(t("question"), value=payload.get("question", ""), key=f"{key}_q", height=80)
    drop = []
    for i, doc in enumerate(payload.get("documents") or []):
        score = f" · {t('score')} {doc['score']:.3f}" if isinstance(doc.get("score"), (int, float)) else ""
        label = f"[{i + 1}] {doc.get('title') or doc.get('source')} — {doc.get('source')}, {t('page')} " \
                f"{doc.get('page') or '-'}{score}"
        if not st.checkbox(f"{t('keep')}: {safe_markdown(label)}", value=True, key=f"{key}_keep_{i}"):
            drop.append(doc["id"])
        with st.container(height=TEXT_HEIGHT, key=f"{key}_text_{i}"):  # the whole chunk, as the model reads it
            st.text(str(doc.get("text", "")))  # plain text: chunks hold markdown
    message = st.text_input(t("reject_message"), key=f"{key}_msg")
    approve, reretrieve, reject = st.columns(3)
    if approve.button(t("approve"), key=f"{key}_approve", type="primary", width="stretch"):
        return {"action": "approve", "drop": drop}
    if reretrieve.button(t("reretrieve"), key=f"{key}_edit", width="stretch"):
        if question.strip() and question.strip() != str(payload.get("question", "")).strip():
            return {"action": "edit", "question": question.strip()}
        st.warning(t("same_question"))
    if reject.button(t("reject"), key=f"{key}_reject", width="stretch"):
        return {"action": "reject", "message": message}
    return None


def _tool_approval(payload: dict, key: str) -> dict | None:
    st.markdown(f"**{t('question')}:** {safe_markdown(payload.get('question', ''))}")
    texts = []
    for i, call in enumerate(payload.get("tool_calls") or []):
        texts.append(st.text_area(t("tool_args", name=plain_markdown(call["name"])), key=f"{key}_args_{i}", height=100,
                                  value=json.dumps(call.get("args") or {}, ensure_ascii=False, indent=2)))
    message = st.text_input(t("reject_message"), key=f"{key}_msg")
    approve, edit, reject = st.columns(3)
    if approve.button(t("approve"), key=f"{key}_approve", type="primary", width="stretch"):
        return {"action": "approve"}
    if edit.button(t("edit"), key=f"{key}_edit", width="stretch"):
        calls = []
        for call, text in zip(payload["tool_calls"], texts):
            try:
                args = json.loads(text)
                if not isinstance(args, dict):
                    raise ValueError("expected a JSON object")
            except ValueError as exc:
                st.error(t("bad_json", error=plain_markdown(str(exc))))
                return None
            calls.append({"id": call.get("id", ""), "name": call["name"], "args": args})
        return {"action": "edit", "tool_calls": calls}
    if reject.button(t("reject"), key=f"{key}_reject", width="stretch"):
        return {"action": "reject", "message": message}
    return None


def resume_live(thread_id: str, decision: dict, settings: Settings) -> dict | None:
    """Continue the paused run with the decision, showing it live; return the final event (None if refused)."""
    try:
        # review stays on for the resumed run: the graph that paused was built with it
        return run_live(stream_run("", None, settings, thread_id=thread_id, resume=decision, review=True))
    except RunInputError as exc:  # already resumed elsewhere (another tab, the CLI)
        st.error(plain_markdown(str(exc)))
        return None
