"""The Serving dashboard page: percentile curves, the KV plot, and its CLI call."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path

from streamlit.testing.v1 import AppTest

from app import cli
from app.formatting import human_seconds

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"


def test_serving_page_draws_and_its_command_reproduces_it() -> None:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    at.switch_page("serving_page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.header[0].value == "Serving under load"
    assert len(at.get("plotly_chart")) == 2
    at.slider[0].set_value(40.0).run()
    assert not at.exception
    busier = {m.label: m.value for m in at.metric}["P99 TTFT"]
    command = at.code[0].value.splitlines()[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*shlex.split(command)[1:], "--json"]) == 0
    summary = json.loads(out.getvalue())
    assert human_seconds(summary["ttft_s_p99"]) == busier
    assert human_seconds(summary["tpot_s_p99"]) == {m.label: m.value for m in at.metric}["P99 TPOT"]
    energy = {m.label: m.value for m in at.metric}["Energy"]
    assert f"{summary['economics']['j_per_output_token']:.3g} J/token" == energy


def test_serving_page_pools_and_shared_prefixes_reproduce_on_the_cli() -> None:
    """Disaggregated pools (2 decode replicas on another preset) with 20 shared
    prefixes: the page shows the hit rate, and its command prints the same figures."""
    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    at.switch_page("serving_page.py").run()
    at.selectbox(key="serving_policy").set_value("disaggregated").run()
    assert not at.exception, [e.value for e in at.exception]
    at.number_input(key="serving_Decode_replicas").set_value(2)
    at.selectbox(key="serving_Decode_hw").set_value("a100-sxm-80gb")
    at.number_input(key="serving_prefix_share").set_value(0.8)
    at.number_input(key="serving_prefix_tokens").set_value(2000)
    at.number_input(key="serving_prefix_count").set_value(20)
    at.number_input(key="serving_prefix_zipf").set_value(1.1).run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    hit_rate = metrics["Prefix hit rate"]
    assert 0 < float(hit_rate.rstrip("%")) <= 100
    command = at.code[0].value.splitlines()[0]
    assert "--decode-replicas 2 --decode-hw a100-sxm-80gb" in command
    assert "--prefix-count 20 --prefix-zipf 1.1" in command
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*shlex.split(command)[1:], "--json"]) == 0
    summary = json.loads(out.getvalue())
    assert human_seconds(summary["ttft_s_p99"]) == metrics["P99 TTFT"]
    assert f"{summary['prefix_hit_rate']:.1%}" == hit_rate


def test_too_few_arrivals_is_not_a_green_verdict_beside_the_slo_card() -> None:
    """At 0.1 requests/s the run has a handful of requests: the page says sustainability
    is not judged (an info line, not a green success) and the SLO card names the count."""
    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    at.switch_page("serving_page.py").run()
    at.slider[0].set_value(0.1).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.success
    assert "not judged" in at.info[0].value
    slo = {m.label: m.value for m in at.metric}["SLO met"]
    assert slo.endswith("of 8"), slo
