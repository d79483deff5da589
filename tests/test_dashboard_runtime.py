"""The sidebar's serving-stack choice: the Latency page's times and 80% intervals are
those of ``codesign predict --runtime``; pages that show the physics ignore it."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import cli

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def page(name: str) -> AppTest:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=60)
    at.switch_page(f"{name}_page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def seconds(text: str) -> float:
    value, unit = text.split(" ", 1)
    return float(value) * UNITS[unit]


def metric(at: AppTest, label: str) -> float:
    return seconds(next(m.value for m in at.metric if m.label == label))


def cli_json(command: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*shlex.split(command)[1:], "--json"]) == 0
    return json.loads(out.getvalue())["summary"]


def test_latency_page_with_a_runtime_shows_the_cli_times_and_intervals() -> None:
    at = page("latency")
    ideal_tpot = metric(at, "TPOT")
    assert not [m for m in at.markdown if "80% interval" in m.value]  # ideal: none
    at.selectbox(key="runtime").set_value("vllm").run()
    assert not at.exception
    command = at.code[0].value.splitlines()[0]
    assert command.endswith("--runtime vllm")
    summary = cli_json(command)
    assert metric(at, "TPOT") == pytest.approx(summary["tpot_s"], rel=5e-3)
    assert metric(at, "TPOT") > ideal_tpot  # the stack's step cost and efficiencies
    (text,) = [m.value for m in at.markdown if "80% interval" in m.value]
    tpot_line = next(line for line in text.split("\n\n") if line.startswith("**TPOT**"))
    low, high = tpot_line.split("80% interval ")[1].split(" (")[0].split(" - ")
    expected = summary["intervals"]["tpot_s"]
    assert seconds(low) == pytest.approx(expected["low"], rel=5e-3)
    assert seconds(high) == pytest.approx(expected["high"], rel=5e-3)
    assert expected["basis"] in tpot_line
    assert any("calibration data" in c.value for c in at.caption)


def test_pages_of_the_physics_ignore_the_runtime_chosen_elsewhere() -> None:
    at = page("latency")
    at.selectbox(key="runtime").set_value("vllm").run()
    at.switch_page("roofline_page.py").run()
    assert not at.exception
    assert "--runtime" not in at.code[0].value
    assert not [s for s in at.selectbox if s.key == "runtime"]  # the control is hidden
    at.switch_page("latency_page.py").run()
    assert at.selectbox(key="runtime").value == "vllm"  # kept for the pages that read it


def test_serving_page_runs_the_chosen_stack() -> None:
    at = page("serving")
    ideal = metric(at, "P99 TPOT")
    at.selectbox(key="runtime").set_value("vllm").run()
    assert not at.exception
    assert "--runtime vllm" in at.code[0].value
    assert metric(at, "P99 TPOT") > ideal  # vLLM's step cost on every decode step


def test_precision_page_allocates_with_the_chosen_stack(tmp_path: Path) -> None:
    at = page("precision")
    at.selectbox(key="runtime").set_value("vllm").run()
    assert not at.exception
    solve, check = at.code[0].value.splitlines()
    assert "--runtime vllm" in solve and "--runtime vllm" in check
    bits = tmp_path / "bits.yaml"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(shlex.split(solve.replace("--out bits.yaml", f"--out {bits}"))[1:]) == 0
    summary = cli_json(check.replace("--bits-file bits.yaml", f"--bits-file {bits}"))
    assert metric(at, "TPOT") == pytest.approx(summary["tpot_s"], rel=5e-3)
    assert summary["runtime"] == "vllm"
