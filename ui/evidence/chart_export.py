"""Charts as files: a Vega-Lite chart rendered to PNG on the server, offline (vl-convert, through Altair)."""

from __future__ import annotations

import io

import altair as alt


def chart_png(chart: alt.TopLevelMixin, scale: float = 2) -> bytes | None:
    """The chart as PNG bytes; None when it cannot be rendered here (the chart's own menu still saves it)."""
    buffer = io.BytesIO()
    try:
        chart.save(buffer, format="png", scale_factor=scale)
    except Exception:  # vl-convert missing or failing
        return None
    return buffer.getvalue()
