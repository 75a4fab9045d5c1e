"""The optional password gate of a shared deployment (RAG_APP_PASSWORD), asked once per browser session."""

from __future__ import annotations

import hashlib
import hmac
import time

import streamlit as st

from core.config import load_settings
from ui.i18n import t

WRONG_PASSWORD_DELAY = 1.0  # seconds: each wrong guess costs the guesser time


def password_matches(typed: str, expected: str) -> bool:
    """Constant-time comparison (of digests, so the time does not depend on the length either)."""
    return hmac.compare_digest(hashlib.sha256(typed.encode()).digest(), hashlib.sha256(expected.encode()).digest())


def require_access() -> None:
    """Stop the page here until this browser session has given the app password, if one is set."""
    if st.session_state.get("access_granted"):
        return
    password = load_settings().app_password
    if not password:
        return
    st.title(t("app_title"))
    with st.form("access_gate"):
        typed = st.text_input(t("password"), type="password", key="access_password")
        if st.form_submit_button(t("enter"), type="primary"):
            if password_matches(typed, password):
                st.session_state["access_granted"] = True
                st.rerun()
            time.sleep(WRONG_PASSWORD_DELAY)
            st.error(t("wrong_password"))
    st.stop()
