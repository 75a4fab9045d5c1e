"""The sidebar's grader thresholds: the ones in use for the grader model, where each came from, a session override."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.llm.models import ProviderError, model_name
from core.llm.thresholds import BAND_GRADERS, GRADERS, parse_overrides, thresholds_for
from core.studio.render import plain_markdown
from ui.i18n import t
from ui.shell.state import bound, current_settings, prefs

EXAMPLE = "relevance=0.6, crag=0.2:0.7"


def thresholds_settings() -> None:
    """The thresholds table and the override box; a valid override becomes the session's ``grader_thresholds``.

    A bad one is one line under the box: the typed text stays to be fixed, the runs keep the previous thresholds.
    """
    p = prefs()
    p.setdefault("grader_thresholds_text", p["grader_thresholds"])
    problem = ""
    try:
        parse_overrides(p["grader_thresholds_text"])
    except ValueError as exc:
        problem = str(exc)
    else:
        p["grader_thresholds"] = (p["grader_thresholds_text"] or "").strip()
    settings = current_settings()
    try:
        name = model_name(settings, role="grader")
        thresholds = thresholds_for(settings, name)
    except (ProviderError, ValueError) as exc:  # an unknown model, or a malformed RAG_GRADER_THRESHOLDS
        st.error(plain_markdown(str(exc)))
        return
    st.caption(t("th_title", model=plain_markdown(name)))
    st.dataframe(thresholds_frame(thresholds), hide_index=True, width="stretch")
    bound(st.text_input, "grader_thresholds_text", t("th_override"), help=t("th_override_help"), placeholder=EXAMPLE)
    if problem:
        st.error(t("th_bad", error=plain_markdown(problem)))


def thresholds_frame(thresholds) -> pd.DataFrame:
    """grader | threshold | from (default, shipped, calibrated, settings), in the UI language."""
    rows = []
    for grader in GRADERS:
        value = thresholds.band(grader) if grader in BAND_GRADERS else (thresholds.cut(grader),)
        source = thresholds.sources.get(grader, "default")
        rows.append({t("col_grader"): grader, t("th_col_value"): "–".join(f"{round(v, 3):g}" for v in value),
                     t("th_col_source"): t(f"th_source_{source}")})
    return pd.DataFrame(rows)
