"""The CLI's run line ends with the run's decoding: tokens written, tokens/s, prompt-lookup drafts accepted."""

from core.cli.common import decoding_text


def test_the_run_line_says_the_decode_speed_and_the_drafts_accepted():
    totals = {"decode_tokens": 40, "decode_ms": 2000, "decode_tokens_per_s": 20.0, "drafted": 40, "accepted": 20}
    assert decoding_text(totals) == ", 40 tokens written at 20.0 tokens/s, 20 of 40 drafted tokens accepted"
    assert decoding_text({**totals, "drafted": 0, "accepted": 0}) == ", 40 tokens written at 20.0 tokens/s"
    assert decoding_text({}) == "" and decoding_text(None) == ""
