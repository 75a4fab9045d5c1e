"""Prompt lookup in the UI: the sidebar's line (on/off, the last run's acceptance) and the trace's usage table."""

from core.config import Settings
from ui.run.trace_panel import decoding_line, usage_frame
from ui.shell.sidebar import lookup_line

LAST = {"drafted": 40, "accepted": 30, "decode_tokens": 120, "decode_ms": 4000, "decode_tokens_per_s": 30.0}


def test_the_sidebar_says_whether_lookup_is_on_and_what_the_last_run_accepted():
    assert "RAG_EMBEDDED_LOOKUP=1 turns it on" in lookup_line(Settings(), LAST)  # off by default
    on = Settings(embedded_lookup=True)
    assert lookup_line(on, None).endswith(": on")
    assert "30 of 40" in lookup_line(on, LAST) and "75%" in lookup_line(on, LAST)


def test_the_usage_table_has_draft_columns_only_where_lookup_ran():
    plain = usage_frame({"grade": {"llm_calls": 1, "tokens": 5, "ms": 3}})
    assert list(plain.columns) == ["node", "LLM calls", "Tokens", "ms"]
    drafted = usage_frame({"generate": {"llm_calls": 1, "tokens": 5, "ms": 3, "drafted": 8, "accepted": 6}})
    assert drafted.iloc[0]["Drafted"] == 8 and drafted.iloc[0]["Accepted"] == 6


def test_the_run_line_gives_the_decode_speed_and_the_acceptance():
    assert decoding_line(LAST) == ("Written: 120 tokens at 30.0 tokens/s · prompt lookup: 30 of 40 drafted tokens "
                                   "accepted (75%)")
    assert decoding_line({}) == ""
