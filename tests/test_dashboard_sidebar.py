"""The sidebar shows on each page only the controls that page reads: a hidden control
must not move any number on its page, a shown one must, and a value set on one page
survives a visit to a page that hides the control."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"
MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
TIMEOUT_S = 60


def page(name: str) -> AppTest:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=TIMEOUT_S)
    at.switch_page(f"{name}_page.py")
    if name == "codesign":
        at.session_state["codesign_space"] = "edge_quickstart.yaml"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def sidebar_keys(at: AppTest) -> set[str]:
    """Keys of every widget drawn in the sidebar."""
    keys = set()
    for kind in ("selectbox", "select_slider", "number_input", "file_uploader"):
        keys |= {widget.key for widget in at.sidebar.get(kind) if widget.key}
    return keys


def numbers(at: AppTest) -> list[tuple[str, str]]:
    """Every metric card (label, value) on the page: what the page reports."""
    return [(m.label, m.value) for m in at.metric]


#: Per page: controls it must hide (they change nothing there) and must show.
HIDDEN_AND_SHOWN = {
    # Capacity and data-parallel replicas change no operator's FLOP, bytes or time.
    "roofline": ({"capacity_scale", "dp"}, {"bw_scale", "batch", "input_tokens", "tp"}),
    # Footprint against capacity: rates and replicas play no part.
    "memory": (
        {"compute_scale", "bw_scale", "link_bw_scale", "dp"},
        {"capacity_scale", "batch", "weight_bits", "tp"},
    ),
    # The ILP chooses the weight bits; replicas do not change one device's budget.
    "precision": ({"weight_bits", "dp"}, {"capacity_scale", "bw_scale", "kv_bits", "batch"}),
    "latency": (set(), {"capacity_scale", "link_bw_scale", "dp", "weight_bits"}),
    "compare": (set(), {"capacity_scale", "link_bw_scale", "dp", "weight_bits"}),
}


@pytest.mark.parametrize("name", sorted(HIDDEN_AND_SHOWN))
def test_each_page_draws_the_controls_it_reads(name: str) -> None:
    if name == "precision":
        pytest.importorskip("search.bits.quantizer")
    hidden, shown = HIDDEN_AND_SHOWN[name]
    keys = sidebar_keys(page(name))
    assert not keys & hidden
    assert shown <= keys


#: Values for hidden controls far from their defaults (tp=2 so link bandwidth could matter).
HIDDEN_VALUES = {
    "roofline": {"capacity_scale": 0.25, "dp": 8},
    "memory": {"compute_scale": 0.25, "bw_scale": 4.0, "link_bw_scale": 0.1, "dp": 8},
    "precision": {"weight_bits": 4.0, "dp": 8},
}


@pytest.mark.parametrize("name", sorted(HIDDEN_VALUES))
def test_hidden_controls_do_not_move_the_page_numbers(name: str) -> None:
    if name == "precision":
        pytest.importorskip("search.bits.quantizer")
    at = page(name)
    at.session_state["tp"] = 2
    at.run()
    before = numbers(at)
    for key, value in HIDDEN_VALUES[name].items():
        at.session_state[key] = value
    at.run()
    assert not at.exception and not at.error
    assert numbers(at) == before


def test_a_shown_control_on_the_roofline_moves_the_operators() -> None:
    """Batch stays on the Roofline page: decode reuses each weight byte for every request."""
    at = page("roofline")
    decode_oi = next(m.value for m in at.metric if m.label == "Decode OI")
    at.select_slider(key="batch").set_value(64).run()
    batched = next(m.value for m in at.metric if m.label == "Decode OI")
    # Batch-1 decode of an 8B fp16 model does ~1 FLOP per weight byte; batch 64 ~ 30-64.
    assert float(batched.split()[0]) > 20 * float(decode_oi.split()[0])


def test_codesign_sidebar_holds_only_the_space_file() -> None:
    pytest.importorskip("search.codesign")
    at = page("codesign")
    assert sidebar_keys(at) == {"codesign_space"}
    assert [h.value for h in at.sidebar.header] == ["Design space"]


@pytest.mark.parametrize("away", ["memory", "codesign"])
def test_a_value_survives_a_page_that_hides_its_control(away: str) -> None:
    if away == "codesign":
        pytest.importorskip("search.codesign")
    at = page("latency")
    at.select_slider(key="dp").set_value(4).run()
    at.select_slider(key="batch").set_value(16).run()
    at.selectbox(key="hw").set_value("b200").run()
    at.session_state["codesign_space"] = "edge_quickstart.yaml"
    at.switch_page(f"{away}_page.py").run()  # both hide dp
    assert "dp" not in sidebar_keys(at)
    at.switch_page("latency_page.py").run()
    assert at.select_slider(key="dp").value == 4
    assert at.select_slider(key="batch").value == 16
    assert at.selectbox(key="hw").value == "b200"


def test_an_uploaded_config_survives_the_codesign_page() -> None:
    pytest.importorskip("search.codesign")
    at = page("latency")
    at.selectbox(key="model").set_value("upload a config.json...").run()
    config = (MODELS / "qwen2.5-0.5b.json").read_bytes()
    at.file_uploader(key="config_upload").upload("qwen.json", config).run()
    tpot = next(m.value for m in at.metric if m.label == "TPOT")
    at.session_state["codesign_space"] = "edge_quickstart.yaml"
    at.switch_page("codesign_page.py").run()  # no uploader drawn there
    at.switch_page("latency_page.py").run()
    assert not at.info and not at.error
    assert "--model config.json" in at.code[0].value
    assert next(m.value for m in at.metric if m.label == "TPOT") == tpot
    assert any("qwen.json, uploaded earlier" in c.value for c in at.sidebar.caption)


def test_custom_hardware_typed_in_absolute_numbers_matches_the_cli(tmp_path) -> None:
    """Custom hardware: 500 TFLOP/s, 1,000 GB/s, 24 GB, efficiency 0.5. Decode of an 8B
    model is memory-bound, so halving the bandwidth doubles TPOT roughly; the page's
    command with the downloaded custom-hw.yaml prints the same TPOT."""
    import contextlib
    import io
    import json
    import shlex

    from app import cli
    from app.dashboard.state import CUSTOM_HW_FILE

    at = AppTest.from_file(str(DASHBOARD), default_timeout=TIMEOUT_S)
    at.switch_page("latency_page.py").run()
    at.selectbox(key="hw").set_value(CUSTOM_HW_FILE).run()
    at.number_input(key="custom_peak_tflops").set_value(500.0)
    at.number_input(key="custom_bandwidth_gb_per_s").set_value(1000.0)
    at.number_input(key="custom_capacity_gb").set_value(24.0)
    at.slider(key="custom_efficiency").set_value(0.5).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    tpot = next(m.value for m in at.metric if m.label == "TPOT")
    at.number_input(key="custom_bandwidth_gb_per_s").set_value(500.0).run()
    slower = next(m.value for m in at.metric if m.label == "TPOT")
    ratio = float(slower.split()[0]) / float(tpot.split()[0])
    assert 1.8 < ratio < 2.05, (tpot, slower)
    yaml_text = next(
        b
        for b in at.get("download_button")
        if b.proto.label.startswith(f"Download {CUSTOM_HW_FILE}")
    )
    assert yaml_text is not None
    from app.dashboard.state import custom_platform_yaml

    path = tmp_path / CUSTOM_HW_FILE
    path.write_text(custom_platform_yaml(500.0, 500.0, 24.0, 450.0, 8, 0.5))
    command = at.code[0].value.splitlines()[0].replace(f"--hw {CUSTOM_HW_FILE}", f"--hw {path}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*shlex.split(command)[1:], "--json"]) == 0
    summary = json.loads(out.getvalue())["summary"]
    assert f"{summary['tpot_s'] * 1e3:.3g} ms" == slower
    assert any(CUSTOM_HW_FILE in c.value for c in at.caption)
