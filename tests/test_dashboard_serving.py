"""The Serving dashboard page: percentile curves, the KV plot, and its CLI call."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path

from streamlit.testing.v1 import AppTest

from app import cli

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard.py"


def test_serving_page_draws_and_its_command_reproduces_it() -> None:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    at.switch_page("dashboard_pages/serving_page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.header[0].value == "Serving under load"
    assert len(at.get("plotly_chart")) == 2
    p99 = {m.label: m.value for m in at.metric}["P99 TTFT"]
    at.slider[0].set_value(40.0).run()
    assert not at.exception
    busier = {m.label: m.value for m in at.metric}["P99 TTFT"]
    assert float(busier.split()[0].replace(",", "")) >= float(p99.split()[0])
    command = at.code[0].value.splitlines()[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*shlex.split(command)[1:], "--json"]) == 0
    summary = json.loads(out.getvalue())
    assert f"{summary['ttft_s_p99'] * 1e3:.0f} ms" == busier
