"""Review controls for a paused run (document review, tool-call approval, answer review) and resuming it."""

from __future__ import annotations

import hashlib
import json

import streamlit as st

from core.config import Settings
from core.run.runner import RunInputError, stream_run
from core.studio.render import plain_markdown, safe_markdown
from ui.evidence.claim_marks import MARKS
from ui.i18n import core_text, t
from ui.run.live import run_live
from ui.shell.state import prefs

TEXT_HEIGHT = 220  # pixels; a longer chunk scrolls inside its box


def _key(thread_id: str, payload: dict) -> str:
    """Widget keys per pause: a second pause of the same thread must not inherit the first's edits."""
    digest = hashlib.sha1(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"rv_{thread_id}_{digest}"


def waits_for(payload: dict) -> str:
    kind = payload.get("kind")
    return t("waits_tools") if kind == "tool_approval" else t("waits_answer") if kind == "answer_review" else t("waits_docs")


def review_controls(thread_id: str, payload: dict) -> dict | None:
    """Render the controls; return the reviewer's decision on the run a button was pressed in."""
    key = _key(thread_id, payload)
    if payload.get("kind") == "tool_approval":
        decision = _tool_approval(payload, key)
    elif payload.get("kind") == "answer_review":
        decision = _answer_review(payload, key)
    else:
        decision = _document_review(payload, key)
    name = str(prefs().get("reviewer") or "").strip()[:80]  # the sidebar's reviewer name, when one is set
    return {**decision, "reviewer": name} if decision is not None and name else decision


def _answer_review(payload: dict, key: str) -> dict | None:
    """The draft, each sentence with its mark and evidence and a box to drop it; edit, send back, approve, reject."""
    st.markdown(f"**{t('question')}:** {safe_markdown(payload.get('question', ''))}")
    st.caption(t("answer_draft"))
    claims = payload.get("claims") or []
    ticked = [c["id"] for c in claims if _sentence(c, key)]
    doubtful = [c["id"] for c in claims if c.get("verdict") == "unsupported"]  # unchecked ones: the reviewer's call
    approve, drop, drop_all = st.columns(3)
    if approve.button(t("approve"), key=f"{key}_approve", type="primary", width="stretch"):
        return {"action": "approve"}
    if drop.button(t("drop_ticked"), key=f"{key}_drop", width="stretch"):
        if ticked:
            return {"action": "drop", "claims": ticked}
        st.warning(t("nothing_ticked"))
    if drop_all.button(t("drop_unsupported"), key=f"{key}_drop_all", width="stretch", disabled=not doubtful,
                       help=None if doubtful else t("nothing_unsupported")):
        return {"action": "drop", "claims": doubtful}
    return _answer_changes(payload, key)


def _sentence(claim: dict, key: str) -> bool:
    """One sentence: its mark, a box to drop it, and what the check found (the reason, the quoted evidence)."""
    verdict = claim.get("verdict", "unchecked")
    text = plain_markdown(claim.get("text", ""))  # the model's sentence, shown as written
    shown = f":orange-background[{text}]" if verdict == "unsupported" else text
    dropped = st.checkbox(f"{MARKS.get(verdict, '❔')} {shown}", key=f"{key}_drop_{claim['id']}",  # md-safe: plain_markdown
                          help=t("drop_sentence"))
    if verdict != "no_claim":
        st.caption(f"{t('verdict_' + verdict)} — {plain_markdown(core_text(claim.get('reason') or ''))}")
    for item in (claim.get("evidence") or [])[:1]:
        st.caption(plain_markdown(f"{t('claims_evidence')}: {item.get('source', '?')} · {item.get('chunk', '')}"))
        st.text(item.get("quote", ""))  # plain text: the document's words
    return dropped


def _answer_changes(payload: dict, key: str) -> dict | None:
    """The editor, the note that sends the draft back, and reject."""
    edited = st.text_area(t("edit_answer"), value=payload.get("answer", ""), key=f"{key}_answer", height=140)
    if st.button(t("save_answer"), key=f"{key}_save"):
        if edited.strip() and edited.strip() != str(payload.get("answer", "")).strip():
            return {"action": "edit", "answer": edited.strip()}
        st.warning(t("same_answer"))
    note = st.text_input(t("revise_note"), key=f"{key}_note")
    if st.button(t("revise"), key=f"{key}_revise"):
        return {"action": "revise", "message": note.strip()}
    message = st.text_input(t("reject_message"), key=f"{key}_msg")
    if st.button(t("reject"), key=f"{key}_reject"):
        return {"action": "reject", "message": message}
    return None



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
