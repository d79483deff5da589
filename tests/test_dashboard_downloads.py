"""Every chart of every dashboard page offers its table as CSV and its picture as PNG.

The PNG is drawn by kaleido in the system Chromium when the button is clicked (a
deferred download); the tests capture the callable Streamlit registers for it and
check the picture it returns. Without Chromium the PNG button is replaced by one
line, not a traceback.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import plotly.graph_objects as go
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from app.dashboard import png_export
from app.dashboard.common import NO_CHROMIUM_NOTE

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Charts per page, by the file name their downloads carry.
CHARTS = {
    "roofline": ["roofline_operators"],
    "latency": ["operator_breakdown", "tpot_vs_context", "tpot_vs_batch"],
    "memory": ["footprint_vs_batch"],
    "compare": ["compare_scatter", "compare_batch", "compare_latency"],
    "precision": ["bit_allocation"],
    "codesign": ["frontier"],
}
OPTIONAL = {"precision": "search.bits.quantizer", "codesign": "search.codesign"}
needs_chromium = pytest.mark.skipif(
    png_export.system_chromium() is None,
    reason="no Chromium on PATH (or kaleido missing): PNG export is replaced by a note",
)


def page(name: str) -> AppTest:
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name])
    at = AppTest.from_file(str(DASHBOARD), default_timeout=60)
    at.switch_page(f"{name}_page.py")
    if name == "codesign":
        at.session_state["codesign_space"] = "edge_quickstart.yaml"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def labels(at: AppTest) -> list[str]:
    return [button.label for button in at.get("download_button")]


@pytest.fixture
def deferred(monkeypatch: pytest.MonkeyPatch) -> dict[str, Callable[[], object]]:
    """The callables behind deferred download buttons, by file name."""
    captured: dict[str, Callable[[], object]] = {}
    register = MediaFileManager.add_deferred

    def capture(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        captured[file_name] = data_callable
        return register(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", capture)
    return captured


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height in pixels from the PNG's IHDR chunk."""
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@needs_chromium
@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_chart_has_a_csv_and_a_png_button(name: str, deferred: dict) -> None:
    at = page(name)
    shown = labels(at)
    assert len(at.get("plotly_chart")) == len(CHARTS[name])
    for chart in CHARTS[name]:
        assert f"Download {chart}.csv" in shown
        assert f"Download {chart}.png" in shown
        assert f"{chart}.png" in deferred  # drawn on click, not on every rerun
    assert not any(NO_CHROMIUM_NOTE in c.value for c in at.caption)


@needs_chromium
def test_png_is_the_chart_at_its_layout_size_times_the_scale(deferred: dict) -> None:
    at = page("memory")
    assert "footprint_vs_batch.png" in deferred
    data = deferred["footprint_vs_batch.png"]()
    # footprint_figure sets height 420 and no width: 1000 x 420 layout pixels, x2.
    assert png_size(data) == (
        png_export.DEFAULT_WIDTH_PX * png_export.SCALE,
        420 * png_export.SCALE,
    )
    assert not at.exception


def test_png_export_uses_the_given_browser_not_one_it_finds(tmp_path: Path) -> None:
    """kaleido gets the path: a missing one fails, it does not fall back to another."""
    pytest.importorskip("kaleido")
    missing = tmp_path / "no-such-chromium"
    with pytest.raises(Exception, match="no-such-chromium"):
        png_export.figure_png(go.Figure(), missing)


def test_without_chromium_the_png_button_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    at = page("latency")
    shown = labels(at)
    assert not any(label.endswith(".png") for label in shown)
    assert sum(label.endswith(".csv") for label in shown) == len(CHARTS["latency"])
    notes = [c.value for c in at.caption if c.value == NO_CHROMIUM_NOTE]
    assert len(notes) == len(CHARTS["latency"])
    assert "\n" not in NO_CHROMIUM_NOTE
    assert not at.exception and not at.error


def test_system_chromium_is_browser_path_then_path_lookup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert png_export.system_chromium() == fake
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert png_export.system_chromium() is None
    monkeypatch.setenv("BROWSER_PATH", str(fake))
    assert png_export.system_chromium() == fake
    fake.chmod(0o644)  # not executable: not a browser
    assert png_export.system_chromium() is None


def test_no_kaleido_means_no_png(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(png_export, "find_spec", lambda name: None)
    assert png_export.system_chromium() is None
