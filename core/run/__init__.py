"""Run or resume a pattern, stream its events, judge its outcome, share the run slots."""
