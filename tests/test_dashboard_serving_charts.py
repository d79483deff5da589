"""The Serving page's charts as a reader meets them: human time units on the ticks,
readable legend names, both SLO lines labelled, a queue axis from 0, and every curve
in its own colour in the exported PNG (not only on the page)."""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest

from app.charts import log_ticks
from app.dashboard.png_export import figure_png, system_chromium
from app.dashboard.serving_page import CURVES, curve_rates, occupancy_figure, percentile_figure
from search.serving import SLO


def curve_table() -> pd.DataFrame:
    rates = [2.5, 5.0, 7.5, 10.0, 12.5, 15.0, 20.0]
    return pd.DataFrame(
        {
            "rate": rates,
            "ttft_p50_ms": [30.0, 31.0, 35.0, 40.0, 80.0, 900.0, 14_493_654.0],
            "ttft_p99_ms": [42.0, 45.0, 60.0, 90.0, 300.0, 5000.0, 20_000_000.0],
            "tpot_p50_ms": [6.2, 6.3, 6.5, 6.9, 7.5, 8.0, 8.1],
            "tpot_p99_ms": [6.4, 6.6, 7.0, 7.8, 9.0, 10.2, 10.4],
        }
    )


def test_percentile_chart_names_units_and_slo_lines() -> None:
    figure = percentile_figure(curve_table(), SLO(ttft_s=2.0, tpot_s=0.05), "title here")
    assert [t.name for t in figure.data] == ["TTFT P50", "TTFT P99", "TPOT P50", "TPOT P99"]
    assert figure.layout.title.text == "title here"
    # TTFT on the left panel, TPOT on the right, each with its own log axis.
    assert {t.name: t.yaxis for t in figure.data} == {
        "TTFT P50": "y",
        "TTFT P99": "y",
        "TPOT P50": "y2",
        "TPOT P99": "y2",
    }
    for axis in (figure.layout.yaxis, figure.layout.yaxis2):
        assert axis.type == "log"
        labels = list(axis.ticktext)
        assert len(labels) == len(set(labels)) >= 2, labels  # no repeated labels
        assert all(label.endswith((" s", " ms", " us", " min", " h")) for label in labels), labels
        assert all(len(label) <= 8 for label in labels), labels
    texts = [a.text for a in figure.layout.annotations]
    assert "P99 TTFT SLO 2 s" in texts and "P99 TPOT SLO 50 ms" in texts
    lines = [s for s in figure.layout.shapes if s.type == "line"]
    assert {s.y0 for s in lines} == {2.0, 0.05}
    # Each SLO is inside its axis' range (10 ** range), so the line and label are drawn.
    for limit, axis in ((2.0, figure.layout.yaxis), (0.05, figure.layout.yaxis2)):
        assert 10 ** axis.range[0] < limit < 10 ** axis.range[1]
    labels = {a.text: a.y for a in figure.layout.annotations}
    assert labels["P99 TTFT SLO 2 s"] == pytest.approx(math.log10(2.0))
    assert labels["P99 TPOT SLO 50 ms"] == pytest.approx(math.log10(0.05))


def test_log_ticks_of_a_narrow_range_are_distinct_human_labels() -> None:
    ticks = log_ticks(0.0299, 0.0424)  # no 1-2-5 value inside: round ones of a finer grid
    assert ticks["ticktext"] == ["30 ms", "40 ms"]
    narrow = log_ticks(92.65, 178.1, lambda v: f"{v:g} tok/s")  # Compare's two-design axis
    assert narrow["ticktext"] == ["100 tok/s", "150 tok/s"]
    assert log_ticks(1.0, 1.05)["tickvals"] == pytest.approx([1.0, 1.05**0.5, 1.05])
    wide = log_ticks(0.006, 20_000.0)
    assert len(wide["tickvals"]) <= 8 and "10 ms" in wide["ticktext"]
    assert log_ticks(0.0, 1.0) == {}


@pytest.mark.parametrize("waiting", [[0.0, 0.0, 0.0], [0.0, 120.0, 240.0]])
def test_queue_axis_starts_at_zero(waiting: list[float]) -> None:
    timeline = pd.DataFrame(
        {"time_s": [0.0, 1.0, 2.0], "kv_occupancy": [0.1, 0.5, 0.9], "waiting": waiting}
    )
    axis = occupancy_figure(timeline).layout.yaxis2
    assert axis.range[0] == 0 and axis.range[1] >= max(1.0, max(waiting))
    # Whole-request ticks: 0, 1 when the queue is empty; 0, 50, 100, ... at 240 waiting.
    assert axis.tickmode == "linear" and axis.tick0 == 0
    assert axis.dtick == (1 if max(waiting) == 0 else 50)


@pytest.mark.skipif(system_chromium() is None, reason="no Chromium for kaleido")
def test_exported_png_draws_each_curve_in_its_colour() -> None:
    """The PNG (kaleido, no Streamlit theme) carries the curves' colours, not black."""
    from PIL import Image

    figure = percentile_figure(curve_table(), SLO(ttft_s=2.0, tpot_s=0.05))
    browser = system_chromium()
    assert browser is not None
    image = Image.open(io.BytesIO(figure_png(figure, browser))).convert("RGB")
    counts = {pixel: n for n, pixel in image.getcolors(maxcolors=1 << 24) or []}

    def near(hex_color: str) -> int:
        target = tuple(int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
        return sum(
            n
            for p, n in counts.items()
            if max(abs(a - b) for a, b in zip(p, target, strict=True)) < 40
        )

    for _, color, _ in CURVES.values():
        assert near(color) > 200, color


@pytest.mark.parametrize("rate", [0.1, 1.0, 7.3, 10.0, 11.9, 31.3, 100.0])
def test_curve_rates_are_round_within_the_span_and_include_the_chosen_rate(rate: float) -> None:
    rates = curve_rates(rate)
    assert rate in rates and list(rates) == sorted(set(rates)) and len(rates) >= 5
    assert all(rate / 4 * (1 - 1e-9) <= r <= 2 * rate * (1 + 1e-9) for r in rates)
    others = [r for r in rates if r != rate]
    assert all(f"{r:.0e}"[0] in "12357" and float(f"{r:.2g}") == r for r in others)


def test_a_small_rate_move_reuses_every_curve_point_but_its_own() -> None:
    """10 -> 11.9 requests/s: one new simulation (the chosen rate), not six."""
    before, after = set(curve_rates(10.0)), set(curve_rates(11.9))
    assert after - before == {11.9}


def test_percentile_chart_marks_the_chosen_rate_in_both_panels() -> None:
    figure = percentile_figure(curve_table(), SLO(ttft_s=2.0, tpot_s=0.05), chosen_rate=10.0)
    verticals = [s for s in figure.layout.shapes if s.x0 == s.x1 == 10.0]
    assert {s.xref for s in verticals} == {"x", "x2"}
