"""The Knowledge page's "Auto's policy": per kind of question, the pattern Auto runs for a set of collections, what
that rests on (quality, seconds, questions, date of the advice, or the default policy), and a refresh by advise."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.config import Settings
from core.studio.render import plain_markdown
from ui.i18n import current_language, t
from ui.i18n.trace import to_korean


def policy_section(settings: Settings, kb) -> None:
    """The policy in force for the chosen collections, and a button that measures it again on a saved set."""
    from core.patterns import auto, policy
    from core.studio import advise
    from core.studio.question_set import QuestionSetError

    st.subheader(t("policy_title"))
    st.caption(t("policy_intro"))
    names = kb.names()
    chosen = st.multiselect(t("policy_collections"), names, default=names, key="policy_collections",
                            placeholder=t("choose_options"))
    if not chosen:
        st.info(t("policy_none"))
        return
    choices = auto.policy_for(settings, chosen)
    st.dataframe(policy_frame(choices, policy), hide_index=True, width="stretch")
    if settings.read_only:  # an advice saves its runs: not in read-only mode
        return
    sets = advise.sets_over(settings, chosen)
    if not sets:
        st.caption(t("policy_no_sets"))
        return
    behind = {c.advice for c in choices.values() if c.advice}
    left, right = st.columns([3, 2])
    set_file = left.selectbox(t("policy_set"), sets, key="policy_set")
    right.caption(t("policy_refresh_help", patterns=plain_markdown(", ".join(advise.POLICY_PATTERNS))))
    if right.button(t("policy_refresh"), key="policy_refresh", icon="🔄"):
        try:
            st.session_state["advice_id"] = advise.refresh_policy(settings, set_file)
        except QuestionSetError as exc:  # past RAG_MAX_SET_RUNS, or a set that no longer reads
            st.error(plain_markdown(str(exc)), icon="⚠️")
        else:
            st.success(t("policy_started"), icon="🧭")
    if behind:
        st.caption(t("policy_behind", ids=plain_markdown(", ".join(sorted(behind)))))


def policy_frame(choices: dict, policy) -> pd.DataFrame:
    """One row per kind: the pattern, its quality and seconds in the advice, the questions behind it, the date, why."""
    korean = current_language() == "ko"
    names = policy.KIND_NAMES_KO if korean else policy.KIND_NAMES
    rows = [{t("policy_kind"): names[kind], t("policy_pattern"): c.pattern, t("policy_quality"): c.quality,
             t("policy_seconds"): None if c.seconds is None else round(c.seconds, 1),
             t("policy_questions"): c.questions or None, t("policy_date"): c.date or t("policy_default"),
             t("policy_why"): to_korean(c.reason) if korean else c.reason}
            for kind, c in choices.items()]
    return pd.DataFrame(rows)
