"""PNG export keeps one headless browser per server process: the second click renders
in the browser the first one started (no Chromium start per click)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from app.dashboard import png_export

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(png_export.system_chromium() is None, reason="no Chromium for kaleido")
def test_second_png_reuses_the_browser() -> None:
    browser = png_export.system_chromium()
    assert browser is not None
    first = png_export.figure_png(go.Figure(go.Scatter(x=[1, 2], y=[1, 3])), browser)
    starts = png_export.STARTS[0]
    second = png_export.figure_png(go.Figure(go.Bar(x=["a", "b"], y=[2, 1])), browser)
    assert first.startswith(PNG_SIGNATURE) and second.startswith(PNG_SIGNATURE)
    assert first != second
    assert png_export.STARTS[0] == starts  # no new browser for the second picture
