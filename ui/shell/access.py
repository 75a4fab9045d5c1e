"""The optional password gate of a shared deployment (RAG_APP_PASSWORD), asked once per browser session."""

from __future__ import annotations

import hashlib
import hmac

import streamlit as st

from core.config import load_settings
from core.store.access_limit import LOCAL_CLIENT, counted_clients, gate_problem, limiter_for, trusted_networks
from core.studio.render import plain_markdown
from ui.i18n import t


def password_matches(typed: str, expected: str) -> bool:
    """Constant-time comparison (of digests, so the time does not depend on the length either)."""
    return hmac.compare_digest(hashlib.sha256(typed.encode()).digest(), hashlib.sha256(expected.encode()).digest())


def client_address() -> str:
    """The browser's address as the server sees it (None on localhost and in AppTest: one shared key).

    Streamlit's server already replaced it with X-Forwarded-For's when the connection came from 127.0.0.1:
    counted_clients decides how far to believe it.
    """
    try:
        address = st.context.ip_address
    except Exception:  # no script context (a bare run): the shared key
        return LOCAL_CLIENT
    return address if isinstance(address, str) and address else LOCAL_CLIENT  # AppTest gives a mock


def forwarded_for() -> str:
    """The X-Forwarded-For header of this session's websocket handshake ('' when none)."""
    try:
        value = st.context.headers.get("X-Forwarded-For", "")
    except Exception:  # no script context
        return ""
    return value if isinstance(value, str) else ""


def require_access() -> None:
    """Stop the page here until this browser session has given the app password, if one is set.

    Guesses are counted per client address across sessions (and replicas) by core.store.access_limit; a
    locked-out address is told to wait and its guess is not checked. Nothing sleeps.
    """
    if st.session_state.get("access_granted"):
        return
    settings = load_settings()
    if not settings.app_password:
        return
    st.title(t("app_title"))
    problem = gate_problem(settings)
    if problem:  # closed, not open: a guessable password (or proxies we cannot read) guards nothing
        st.error(plain_markdown(problem))
        st.stop()
    with st.form("access_gate"):
        typed = st.text_input(t("password"), type="password", key="access_password")
        if st.form_submit_button(t("enter"), type="primary"):
            _check(typed, settings)
    st.stop()


def _check(typed: str, settings) -> None:
    limiter = limiter_for(settings)
    client = counted_clients(client_address(), forwarded_for(), trusted_networks(settings.trusted_proxies))
    wait = limiter.attempt(client)
    if wait:
        st.error(t("locked_out", seconds=wait))  # md-safe: a number of seconds
        return
    right = password_matches(typed, settings.app_password)
    limiter.finish(client, right)
    if right:
        st.session_state["access_granted"] = True
        st.rerun()
    st.error(t("wrong_password"))
