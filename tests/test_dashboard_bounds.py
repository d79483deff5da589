"""Issue #25: the dashboard's number inputs and sliders take their ranges from the table
of bounds and show the CLI's one-line message for a value the table refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli

from roofline import FLAG_BOUNDS, HARDWARE_BOUNDS, flag_bound

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"
#: What each command needs besides the flag tried.
BASE_ARGS = {
    "serve": ["--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--duration", "3"],
    "quantize": ["--model", "llama-3.1-8b", "--hw", "h100-sxm"],
    "hw design": ["--compute-tflops", "500", "--memory", "hbm3e:6"],
}


def test_widget_limits_are_the_tables_or_inside_it():
    from app.dashboard.bounded import widget_limits

    rate = FLAG_BOUNDS["--rate"]
    assert widget_limits(rate) == (0.0, 1e7)
    assert widget_limits(FLAG_BOUNDS["--prefix-count"], high=1000) == (1, 1000)
    with pytest.raises(ValueError, match=r"--rate: widget span \[0.1, 2e\+07\] is not inside"):
        widget_limits(rate, low=0.1, high=2e7)
    with pytest.raises(ValueError, match="not inside"):
        widget_limits(FLAG_BOUNDS["--prefix-share"], low=-0.5)


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    [
        ("serve", "--slo-tpot-p99-ms", 0.0),
        ("serve", "--slo-ttft-p99-s", 0.0),
        ("serve", "--rate", 0.0),
        ("serve", "--prefix-share", 1.5),
        ("quantize", "--max-memory-gb", 0.0),
        ("hw design", "--sram-mb", -5.0),
    ],
)
def test_a_dashboard_message_is_the_clis_line(command, flag, value):
    from app.dashboard.bounded import bound_message

    bound = flag_bound(command, flag)
    assert bound is not None
    code, _, err = run_cli(*command.split(), *BASE_ARGS.get(command, []), flag, repr(value))
    assert code == 2
    assert err.strip() == f"codesign: error: {bound_message(bound, value)}"


def _proto_limits(widget: Any) -> tuple[float, float]:
    return widget.proto.min, widget.proto.max


def test_serving_page_inputs_take_the_tables_ranges_and_messages():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    at.switch_page("serving_page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    inputs = {widget.label: widget for widget in at.number_input}
    tpot = inputs["P99 TPOT SLO, ms"]
    assert _proto_limits(tpot) == (0.0, 1e10)
    assert _proto_limits(inputs["P99 TTFT SLO, s"]) == (0.0, 1e7)
    assert "codesign serve --slo-tpot-p99-ms: a number of ms in (0, 1e+10]" in tpot.proto.help
    tpot.set_value(0.0).run()
    assert [error.value for error in at.error] == [
        "--slo-tpot-p99-ms must be a number of ms in (0, 1e+10], got 0.0"
    ]


def test_custom_hardware_inputs_take_the_hardware_files_ranges_and_message(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from app.dashboard.state import CUSTOM_HW_FILE, custom_platform_yaml

    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    at.switch_page("latency_page.py").run()
    at.selectbox(key="hw").set_value(CUSTOM_HW_FILE).run()
    bandwidth = at.number_input(key="custom_bandwidth_gb_per_s")
    assert _proto_limits(bandwidth) == (0.0, HARDWARE_BOUNDS["memory.bandwidth_gb_per_s"].high)
    assert _proto_limits(at.number_input(key="custom_devices_per_node")) == (1, 65_536)
    bandwidth.set_value(0.0).run()
    shown = [error.value for error in at.error]
    # The CLI reading the file the page offers for download says the same line.
    monkeypatch.chdir(tmp_path)
    (tmp_path / CUSTOM_HW_FILE).write_text(custom_platform_yaml(989.0, 0.0, 80.0, 450.0, 8, 0.75))
    code, _, err = run_cli("hw", "show", CUSTOM_HW_FILE)
    assert code == 2
    assert shown == [err.strip().removeprefix("codesign: error: ")]
    assert "memory[0].bandwidth_gb_per_s must be a number of GB/s in (0, 1e+08]" in shown[0]
