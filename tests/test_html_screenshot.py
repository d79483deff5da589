"""benchmarks/html_screenshot.py: a CDN Plotly page made offline, and (with Chromium) a PNG
of the viewport size asked for."""

from __future__ import annotations

import struct
from pathlib import Path

import plotly.graph_objects as go
import pytest
from helpers import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "html_screenshot.py"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def screenshot_script():
    pytest.importorskip("selenium", reason="selenium is not installed")
    return load_script(SCRIPT, "html_screenshot")


def figure_html(tmp_path: Path) -> Path:
    path = tmp_path / "figure.html"
    go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2])).write_html(path, include_plotlyjs="cdn")
    return path


def test_offline_html_inlines_plotly_instead_of_the_cdn(tmp_path: Path) -> None:
    script = screenshot_script()
    html = figure_html(tmp_path).read_text()
    assert script.CDN_SCRIPT.search(html) is not None
    offline = script.offline_html(html)
    assert script.CDN_SCRIPT.search(offline) is None
    assert len(offline) > len(html) + 1_000_000  # plotly.min.js is ~4 MB
    assert ".modebar-container { display: none; }" in offline


@pytest.mark.skipif(
    not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()),
    reason="no /usr/bin/chromium or /usr/bin/chromedriver (run .ci/install-browser)",
)
def test_screenshot_is_a_png_of_the_viewport(tmp_path: Path) -> None:
    script = screenshot_script()
    png = tmp_path / "figure.png"
    script.screenshot(figure_html(tmp_path), png, 640, 400)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (640, 400)
