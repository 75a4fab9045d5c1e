"""The Knowledge page's grader calibration: when the grader model was calibrated, its report, and a run of it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.config import ReadOnlyError, Settings
from core.llm.models import ProviderError, model_name
from core.llm.thresholds import SHIPPED, saved_calibration
from core.studio.render import plain_markdown
from ui.i18n import STRINGS, t

BUILTIN_SET = ""  # the selectbox entry of the built-in question set (never a saved set's file name)


def calibration_section(settings: Settings, kb) -> None:
    """What the configured grader model's thresholds rest on, and (where writes are allowed) a calibration."""
    st.subheader(t("cal_title"))
    st.caption(t("cal_intro"))
    try:
        name = model_name(settings, role="grader")
    except ProviderError as exc:  # an unknown embedded model name: the sidebar says so too
        st.error(plain_markdown(str(exc)), icon="⚠️")
        return
    record = saved_calibration(settings, name)
    if record:
        st.caption(t("cal_done", model=plain_markdown(name), at=plain_markdown(str(record.get("at", "?"))),
                     questions=int(record.get("questions") or 0), seconds=float(record.get("seconds") or 0)))
        if record.get("graders"):
            st.dataframe(report_frame(record), hide_index=True, width="stretch")
    else:
        st.caption(t("cal_shipped" if SHIPPED.get(name) else "cal_none", model=plain_markdown(name)))
    if settings.read_only:  # core refuses the save too (core.studio.calibrate.save)
        st.info(t("cal_read_only"), icon="🔒")
        return
    chosen = _question_set(settings)
    if st.button(t("cal_run"), key="kb_calibrate", help=t("cal_run_help"), icon="🎯"):
        _calibrate(settings, kb, chosen, name)


def _question_set(settings: Settings) -> str:
    """The set whose labelled pairs are read: the built-in one, or a set saved from the user's collections."""
    from core.studio.question_set import saved_question_sets

    try:
        saved = saved_question_sets(settings)
    except Exception:  # an unreadable store: the built-in set still works
        saved = []
    return st.selectbox(t("cal_set"), [BUILTIN_SET, *saved], key="kb_calibration_set",
                        format_func=lambda f: t("cal_builtin") if f == BUILTIN_SET else t("cal_saved_set", name=f))


def _calibrate(settings: Settings, kb, chosen: str, name: str) -> None:
    """Run the calibration in this (the script) thread, the progress bar fed by its callback; save and rerun."""
    from core.llm.models import get_chat_model
    from core.studio import calibrate
    from core.studio.question_set import BUILTIN, load_question_set, load_saved_question_set

    bar = st.progress(0.0, text=t("cal_progress", done=0, total="…"))
    try:
        items = load_question_set(BUILTIN) if chosen == BUILTIN_SET else load_saved_question_set(settings, chosen)
        model = get_chat_model(settings, role="grader")
        result = calibrate.calibrate(settings, model, kb, items, kb.names(), progress=lambda done, total: bar.progress(
            min(done / max(total, 1), 1.0), text=t("cal_progress", done=done, total=total)))  # md-safe: numbers
        result["model"] = result["model"] or name  # a model object that names itself otherwise: the configured name
        calibrate.save(settings, result)
    except calibrate.CalibrationError as exc:
        bar.empty()
        text_only = calibrate.TEXT_ONLY in str(exc)
        st.error(t("cal_text_only") if text_only else t("cal_failed", error=plain_markdown(str(exc))), icon="⚠️")
        return
    except (ReadOnlyError, ValueError, OSError, ProviderError) as exc:  # a bad set, a store or server that fails
        bar.empty()
        st.error(t("cal_failed", error=plain_markdown(str(exc))), icon="⚠️")
        return
    bar.empty()
    st.session_state.setdefault("kb_messages", []).append(t("cal_saved", model=result["model"]))
    st.rerun()


def report_frame(record: dict) -> pd.DataFrame:
    """One row per grader: AUC, threshold, pairs, and its rates on the fitted and on the held-out pairs."""
    rows = []
    for grader, rep in record["graders"].items():
        if "error" in rep:
            rows.append({t("cal_col_grader"): grader, t("cal_col_threshold"): t("cal_not_fitted", error=rep["error"])})
            continue
        threshold = rep["threshold"]
        if "ratio" in rep:  # relevance: a floor and a ratio to the question's best document
            threshold = f"{threshold} · {t('cal_ratio')} {rep['ratio']}"
        rows.append({t("cal_col_grader"): grader, t("cal_col_auc"): rep.get("auc"),
                     t("cal_col_threshold"): "–".join(map(str, threshold)) if isinstance(threshold, list) else str(threshold),
                     t("cal_col_pairs"): f"{rep['pairs']} ({rep['positives']})",
                     t("cal_col_fitted"): _rates(rep.get("fitted")), t("cal_col_held_out"): _rates(rep.get("held_out"))})
    return pd.DataFrame(rows)


def _rates(rates: dict | None) -> str:
    if not rates:
        return ""
    return " · ".join(f"{t('cal_rate_' + key) if 'cal_rate_' + key in STRINGS else key} {share['hits']}/{share['of']}"
                      for key, share in rates.items())
