"""Chart layout a first-time user reads in the browser: titles that fit a half-width
column, legends clear of titles, round labelled ticks on log axes, notes only where they
describe something drawn."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from app.charts import breakdown_figure, human_count, sweep_figure
from app.dashboard.compare_page import scatter_figure
from app.formatting import human_seconds

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"


def designs(fits: list[bool]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "platform": ["h100-sxm", "a100-sxm-80gb"][: len(fits)],
            "model": "llama-3.1-8b",
            "use_case": "chat",
            "ttft_s": [0.023, 0.070][: len(fits)],
            "decode_tokens_per_s": [162.0, 102.0][: len(fits)],
            "fits": fits,
        }
    )


@pytest.mark.parametrize(("fits", "noted"), [([True, True], False), ([True, False], True)])
def test_hollow_marker_note_only_when_a_design_does_not_fit(fits: list[bool], noted: bool) -> None:
    notes = [a.text for a in scatter_figure(designs(fits)).layout.annotations]
    assert any("do not fit" in text for text in notes) is noted, notes


def test_compare_scatter_ticks_are_round_for_two_close_designs() -> None:
    axis = scatter_figure(designs([True, True])).layout.yaxis
    assert list(axis.tickvals) == [100.0, 150.0]  # the range is 93-178 tok/s


def test_operator_breakdown_legend_sits_below_the_panels() -> None:
    operators = pd.DataFrame(
        {
            "phase": ["prefill", "decode"],
            "name": ["ffn_down", "ffn_down"],
            "time_ms": [5.0, 1.0],
            "bound": ["compute", "memory"],
        }
    )
    legend = breakdown_figure(operators).layout.legend
    assert legend.y < 0 and legend.yanchor == "top"


def test_sweep_axes_are_labelled_in_counts_and_time_units() -> None:
    sweep = pd.DataFrame(
        {"batch": [1, 4, 16, 64, 256], "tpot_ms": [6.0, 6.5, 9.0, 20.0, 70.0], "fits": True}
    )
    figure = sweep_figure(
        sweep, "batch", "tpot_ms", "batch", "TPOT (ms)", 1, log_y=True,
        y_format=lambda ms: human_seconds(ms / 1e3),
    )  # fmt: skip
    assert list(figure.layout.yaxis.ticktext) == ["10 ms", "20 ms", "50 ms"]
    assert list(figure.layout.xaxis.ticktext) == ["1", "2", "5", "10", "20", "50", "100", "200"]
    assert human_count(2000) == "2k" and human_count(131072) == "131k"


def test_sidebar_chart_titles_put_the_design_on_a_second_line() -> None:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    at.switch_page("latency_page.py").run()
    assert not at.exception
    for chart in at.get("plotly_chart"):
        layout = json.loads(chart.proto.spec)["layout"]
        what, design = layout["title"]["text"].split("<br>")
        assert len(what) < 40 and "llama-3.1-8b on h100-sxm" in design, layout["title"]
        assert layout["margin"]["t"] >= 80


def test_home_lists_every_page_of_the_menu_in_its_order_and_no_none_links() -> None:
    from app.dashboard.home_page import PAGES as HOME_PAGES
    from app.dashboard.page_specs import PAGES

    menu = [spec.title for spec in PAGES]
    assert [name for name, _ in HOME_PAGES] == menu[1:]
    at = AppTest.from_file(str(DASHBOARD), default_timeout=60).run()
    assert not at.exception
    for table in at.dataframe:
        assert table.value["link"].map(lambda link: isinstance(link, str)).all()
