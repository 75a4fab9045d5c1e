"""The UI's texts in English and Korean, and the language: the browser locale, then the sidebar switch.

Every text the UI shows lives in this package: the tables (``common`` and one module per part of the UI) are
merged here once, and ``trace`` words what core writes in English. No module outside it adds to ``STRINGS``.
"""

from __future__ import annotations

import streamlit as st

from ui.i18n.advise import ADVISE_STRINGS
from ui.i18n.claims import CLAIM_STRINGS
from ui.i18n.common import COMMON_STRINGS, KINDS_KO
from ui.i18n.grading import GRADING_STRINGS
from ui.i18n.retrieval import RETRIEVAL_STRINGS
from ui.i18n.sources import SOURCE_STRINGS
from ui.i18n.whatif import WHATIF_STRINGS

LANGUAGES = {"ko": "한국어", "en": "English"}

# key: (English, Korean)
STRINGS = {**COMMON_STRINGS, **SOURCE_STRINGS, **ADVISE_STRINGS, **RETRIEVAL_STRINGS, **GRADING_STRINGS,
           **WHATIF_STRINGS, **CLAIM_STRINGS}


def default_language() -> str:
    """Korean for a Korean browser, English otherwise."""
    locale = getattr(st.context, "locale", None) or ""
    return "ko" if str(locale).lower().startswith("ko") else "en"


def current_language() -> str:
    return (st.session_state.get("prefs") or {}).get("lang") or default_language()


def t(key: str, **values) -> str:
    """The UI string for ``key`` in the current language."""
    english, korean = STRINGS[key]
    text = korean if current_language() == "ko" else english
    return text.format(**values) if values else text


def core_text(text) -> str:
    """A message core wrote in English (trace reason, verdict, termination message), in the UI language."""
    from ui.i18n.trace import to_korean

    text = "" if text is None else str(text)
    return to_korean(text) if current_language() == "ko" else text


def pattern_description(pattern) -> str:
    """The pattern's own two lines, in the UI language (English where it declares no Korean)."""
    return (pattern.description_ko or pattern.description) if current_language() == "ko" else pattern.description


def outcome_text(status: str) -> str:
    from core.run.outcome import outcome_label
    from ui.i18n.trace import OUTCOMES_KO

    return OUTCOMES_KO.get(status, outcome_label(status)) if current_language() == "ko" else outcome_label(status)


def kind_label(kind: str) -> str:
    return KINDS_KO.get(kind, kind) if current_language() == "ko" else kind


def termination_label(reason: str) -> str:
    """Why a run stopped, in the UI language, as the pattern declared the reason (the id for an unknown one)."""
    from core.patterns import termination_reasons

    declared = termination_reasons().get(reason or "")
    if declared is None:
        return reason or "-"
    return declared.ko if current_language() == "ko" else declared.en
