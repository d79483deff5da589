"""The Serving page's "Engine release" and "Cited GEMM rates" (app/dashboard/
serving_stack_controls.py): its curves equal ``codesign serve --json`` with the same
flags, it shows serve's applied lines, and the default page is unchanged."""

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
RATE = 2.0


def _page(runtime: str = "ideal") -> AppTest:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    at.switch_page("serving_page.py").run()
    at.selectbox(key="runtime").set_value(runtime)
    at.slider[0].set_value(RATE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _serve(command: str, *extra: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*shlex.split(command)[1:], *extra]) == 0
    return out.getvalue()


def _chart_points(at: AppTest) -> dict[str, float]:
    """The P99 curves' values (s) at the chosen rate, read from the drawn chart."""
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    return {
        trace["name"]: float(_values(trace["y"])[list(_values(trace["x"])).index(RATE)])
        for trace in figure["data"]
        if trace["name"] in ("TTFT P99", "TPOT P99")
    }


def _values(encoded: dict | list) -> np.ndarray:
    """A plotly JSON array: a list, or ``{"dtype", "bdata"}`` (base64 of the raw values)."""
    if isinstance(encoded, list):
        return np.asarray(encoded, dtype=float)
    return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=encoded["dtype"])


def _assert_page_is_serve(at: AppTest, command: str) -> dict:
    summary = json.loads(_serve(command, "--json"))
    points = _chart_points(at)
    assert points["TTFT P99"] == pytest.approx(summary["ttft_s_p99"], rel=1e-9)
    assert points["TPOT P99"] == pytest.approx(summary["tpot_s_p99"], rel=1e-9)
    return summary


def test_engine_release_and_gemm_rates_equal_serve_with_the_same_flags() -> None:
    at = _page("vllm")
    plain = _chart_points(at)
    at.selectbox(key="serving_engine_release").set_value("vLLM V1 (0.7+)")
    at.checkbox(key="serving_gemm_rates").check().run()
    assert not at.exception, [e.value for e in at.exception]
    command = at.code[0].value.splitlines()[0]
    assert "--engine-version 'vLLM V1 (0.7+)' --device-gemm-rates" in command
    summary = _assert_page_is_serve(at, command)
    assert summary["stack_costs"]["version_family"] == "V1 (0.7+)"
    assert _chart_points(at) != plain  # the flags moved the figures
    # Under the chart: the lines serve prints for these flags, word for word.
    printed = _serve(command).splitlines()
    shown = [c.value for c in at.caption if c.value.startswith(("engine version:", "device GEMM"))]
    assert len(shown) == 2
    for line in shown:  # serve pads the name into a column: "engine version   <value>"
        name, value = line.split(": ", 1)
        assert any(p.startswith(name) and p.endswith(f"  {value}") for p in printed), line


def test_default_page_is_unchanged_and_gemm_rates_is_refused_under_ideal() -> None:
    at = _page()
    command = at.code[0].value.splitlines()[0]
    assert "--engine-version" not in command and "--device-gemm-rates" not in command
    summary = _assert_page_is_serve(at, command)
    assert "stack_costs" not in summary or not summary["stack_costs"]
    assert at.selectbox(key="serving_engine_release").value.startswith("None")
    gemm = at.checkbox(key="serving_gemm_rates")
    assert gemm.disabled and "calibrated runtime profile" in gemm.help
    assert not [c for c in at.caption if c.value.startswith("engine version:")]


def test_capacity_search_on_pools_simulates_with_the_flags() -> None:
    """``serve --find-max-rate --policy disaggregated`` with both flags: the found rate's
    summary is a plain ``serve --rate`` run of it with the same flags (so every search
    point carries them), the flags move it, and both pools' GEMM scales are reported."""
    base = (
        "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --duration 10 "
        "--no-progress --slo-ttft-p99-s 2 --slo-tpot-p99-ms 50 --policy disaggregated "
        "--decode-hw a100-sxm-80gb"
    )
    flags = ("--engine-version", "vLLM 0.10", "--device-gemm-rates", "--json")
    found = json.loads(_serve(base, "--find-max-rate", *flags))
    assert found["success"]
    assert set(found["stack_costs"]["gemm_scale"]) == {"h100-sxm", "a100-sxm-80gb"}
    rate = ("--rate", f"{found['rate']:g}")
    direct = json.loads(_serve(base, *rate, *flags))
    plain = json.loads(_serve(base, *rate, "--json"))
    assert found["summary"]["ttft_s_p99"] == pytest.approx(direct["ttft_s_p99"], rel=1e-9)
    assert direct["ttft_s_p99"] != pytest.approx(plain["ttft_s_p99"], rel=1e-3)
