"""The Hardware designer page through Streamlit's AppTest: its cards equal the
``codesign hw design --json`` call it shows, bad combinations are one line, and the
Pareto chart marks the chosen design and the non-dominated ones."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import shlex
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app import cli

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"
TIMEOUT_S = 60
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "tok/s": 1.0, "mm²": 1.0, "W": 1.0}


def number(text: str) -> float:
    """``'3.09 ms'`` -> 0.00309; ``'$0.1046'``, ``'US$3,404'``, ``'608 mm²'``."""
    text = text.removeprefix("US$").removeprefix("$")
    value, _, unit = text.partition(" ")
    return float(value.replace(",", "")) * UNITS.get(unit, 1.0)


def cards(at: AppTest) -> dict[str, float]:
    return {m.label: number(m.value) for m in at.metric}


def page() -> AppTest:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=TIMEOUT_S)
    at.switch_page("hardware_page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.header[0].value.startswith("Hardware designer")
    return at


def values(array: object) -> np.ndarray:
    """A trace's ``x`` / ``y``: a list, or plotly's typed array ``{'dtype', 'bdata'}``."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    return np.asarray(array, dtype=float)


def cli_json(command: str) -> dict:
    words = shlex.split(command)
    assert words[:3] == ["codesign", "hw", "design"] and "--json" in words
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(words[1:]) == 0
    return json.loads(out.getvalue())


def test_cards_equal_the_cli_json_of_the_shown_command() -> None:
    at = page()
    at.slider(key="hwd_compute_tflops").set_value(400.0)
    at.selectbox(key="hwd_technology").set_value("gddr7")
    at.slider(key="hwd_units").set_value(12)
    at.slider(key="hwd_sram_mb").set_value(120.0)
    at.selectbox(key="hwd_node").set_value("n7")
    at.select_slider(key="batch").set_value(8).run()
    assert not at.exception and not at.error
    command = at.code[0].value.splitlines()[0]
    for flag in ("--compute-tflops 400", "--memory gddr7:12", "--sram-mb 120", "--node n7"):
        assert flag in command
    assert "--batch 8" in command and "--model llama-3.1-8b" in command
    evaluation = cli_json(command)["evaluation"]
    shown = cards(at)
    assert shown["TPOT"] == pytest.approx(evaluation["tpot_s"], rel=5e-3)
    assert shown["Throughput"] == pytest.approx(evaluation["throughput_tokens_per_s"], rel=5e-3)
    assert shown["$ per Mtok"] == pytest.approx(
        evaluation["usd_per_million_output_tokens"], rel=5e-4
    )
    assert shown["Area"] == pytest.approx(evaluation["area_mm2"], abs=0.5)
    assert shown["TDP"] == pytest.approx(evaluation["tdp_w"], abs=0.5)
    assert shown["Device cost"] == pytest.approx(evaluation["device_cost_usd"], abs=0.5)
    # GDDR7: 12 x 32 bits at 32 Gb/s = 1.536 TB/s (the caption under the memory controls).
    assert any(c.value.startswith("1.536 TB/s") for c in at.caption)


def test_more_compute_cuts_tpot_only_when_compute_bound_and_costs_area() -> None:
    at = page()
    base = cards(at)
    at.slider(key="hwd_compute_tflops").set_value(900.0).run()
    more = cards(at)
    assert more["Area"] > base["Area"] and more["Device cost"] > base["Device cost"]
    # Batch-1 decode is memory-bound: 1.5x compute leaves TPOT within a few percent.
    assert more["TPOT"] == pytest.approx(base["TPOT"], rel=0.05)
    at.slider(key="hwd_compute_tflops").set_value(600.0)
    at.slider(key="hwd_units").set_value(3).run()
    fewer = cards(at)  # half the HBM stacks: half the bandwidth, slower decode
    assert fewer["TPOT"] > 1.8 * base["TPOT"]


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("hwd_units", 9, "memory.units must be <= 8 for hbm3e"),
        ("hwd_compute_tflops", 5000.0, "reticle"),
    ],
)
def test_bad_combination_is_the_library_one_line_error(key: str, value: float, words: str) -> None:
    at = page()
    at.slider(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1
    message = at.error[0].value
    assert words in message and "\n" not in message and "Traceback" not in message
    assert not at.metric  # the page stops before any card


def test_pareto_chart_highlights_the_design_and_marks_the_front() -> None:
    at = page()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    traces = spec["data"]
    names = [trace.get("name") for trace in traces]
    assert "this design" in names and "Pareto-optimal" in names
    assert all(t.startswith("$") for t in spec["layout"]["yaxis"]["ticktext"])
    assert spec["layout"]["xaxis"]["ticktext"][0].endswith("ms")
    star = traces[names.index("this design")]
    assert values(star["x"])[0] == pytest.approx(cards(at)["TPOT"], rel=5e-3)
    front = traces[names.index("Pareto-optimal")]
    points = np.column_stack([values(front["x"]), values(front["y"])])
    assert len(points) >= 2
    # Along the front, faster designs cost more per token: no point dominates another.
    order = np.argsort(points[:, 0])
    assert np.all(np.diff(points[order, 1]) < 0)
    dominated = traces[names.index("dominated")]
    xs, ys = values(dominated["x"]), values(dominated["y"])
    assert len(xs) > 0
    for x, y in zip(xs, ys, strict=True):
        assert np.any((points[:, 0] <= x) & (points[:, 1] <= y))


def test_chart_title_names_the_design_and_not_the_sidebar_preset() -> None:
    at = page()
    title = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    assert "600 TFLOP/s, 6 x hbm3e, n5" in title and "llama-3.1-8b, batch 1" in title
    assert "h100" not in title
    assert not any(w.label == "Hardware preset" for w in at.sidebar.selectbox)


def test_perf_per_cost_front_maximises_y() -> None:
    at = page()
    at.radio(key="hwd_pareto_y").set_value("perf / cost (tok/s per device per US$)").run()
    traces = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    names = [trace.get("name") for trace in traces]
    front = traces[names.index("Pareto-optimal")]
    points = np.column_stack([values(front["x"]), values(front["y"])])
    order = np.argsort(points[:, 0])
    assert len(points) >= 2 and np.all(np.diff(points[order, 1]) > 0)  # slower: more per US$
