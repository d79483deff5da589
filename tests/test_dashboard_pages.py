"""Each dashboard page driven through Streamlit's AppTest: move a sidebar widget and
check that the numbers move the way the roofline says they must."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from app import cli
from app.cli.dashboard import streamlit_command

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"
MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
TIMEOUT_S = 60
UNITS = {
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "tok/s": 1.0,
    "FLOP/B": 1.0,
    "GB": 1e9,
    "MB": 1e6,
}


def number(text: str) -> float:
    """``'6.17 ms'`` -> 0.00617 (seconds); ``'44,410 tok/s'`` -> 44410."""
    value, unit = text.split(" ", 1)
    return float(value.replace(",", "")) * UNITS[unit]


def metric(at: AppTest, label: str, index: int = 0) -> float:
    values = [m.value for m in at.metric if m.label == label]
    return number(values[index])


def page(name: str = "roofline") -> AppTest:
    """A fresh session opened on one page (pages use their file name as URL path)."""
    at = AppTest.from_file(str(DASHBOARD), default_timeout=TIMEOUT_S)
    at.switch_page(f"{name}_page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.header[0].value.split()[0].lower().startswith(name[:4])
    return at


def charts(at: AppTest) -> int:
    return len(at.get("plotly_chart"))


def test_roofline_ridge_point_halves_when_bandwidth_doubles() -> None:
    at = page()
    assert charts(at) == 1
    ridge = metric(at, "Ridge point (bf16)")
    # H100 SXM preset: 989.4 TFLOP/s bf16 / 3.35 TB/s = 295.3 FLOP/B.
    assert ridge == pytest.approx(295.3, rel=1e-3)
    decode_oi = metric(at, "Decode OI")
    at.select_slider(key="bw_scale").set_value(2.0).run()
    assert metric(at, "Ridge point (bf16)") == pytest.approx(ridge / 2, rel=1e-3)
    assert metric(at, "Decode OI") == decode_oi  # the workload does not change
    assert "--bw-scale 2" in at.code[0].value


def test_latency_bandwidth_up_cuts_tpot_and_batch_up_raises_throughput() -> None:
    at = page("latency")
    assert charts(at) == 3
    tpot = metric(at, "TPOT")
    throughput = metric(at, "Throughput")
    at.select_slider(key="bw_scale").set_value(2.0).run()
    faster = metric(at, "TPOT")
    # Batch-1 decode of an 8B fp16 model is memory-bound: 2x bandwidth is close to 2x.
    assert tpot / 2 <= faster < 0.6 * tpot
    at.select_slider(key="batch").set_value(16).run()
    assert metric(at, "Throughput") > throughput
    assert not at.exception


def test_latency_command_reproduces_the_cards() -> None:
    at = page("latency")
    at.select_slider(key="batch").set_value(8)
    at.select_slider(key="weight_bits").set_value(8.0).run()
    command = shlex.split(at.code[0].value.splitlines()[0])
    assert command[:2] == ["codesign", "predict"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*command[1:], "--json"]) == 0
    summary = json.loads(out.getvalue())["summary"]
    assert summary["batch"] == 8 and summary["weight_bits"] == 8
    assert metric(at, "TPOT") == pytest.approx(summary["tpot_s"], rel=5e-3)
    assert metric(at, "TTFT") == pytest.approx(summary["ttft_s"], rel=5e-3)


def test_memory_capacity_scale_down_shows_the_capacity_wall() -> None:
    at = page("memory")
    assert not at.error
    assert any("Fits" in s.value for s in at.success)
    at.select_slider(key="capacity_scale").set_value(0.1).run()
    walls = [e.value for e in at.error if e.value.startswith("Capacity wall")]
    assert len(walls) == 1
    # 16.1 GB of fp16 weights cannot fit in 8.55 GB (0.1 x 85.5 GB); 8-bit weights would.
    assert "quantise weights to 8 bits" in walls[0]
    assert charts(at) == 1


def test_memory_wall_batch_is_bracketed_by_two_cli_calls() -> None:
    at = page("memory")
    at.select_slider(key="capacity_scale").set_value(0.25).run()  # 20 GB per device
    lines = at.code[0].value.splitlines()
    assert len(lines) == 3
    fits = []
    for line in lines[1:]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cli.main([*shlex.split(line)[1:], "--json"])
        fits.append(json.loads(out.getvalue())["summary"]["fits"])
    assert fits == [True, False]


def test_compare_faster_platform_and_smaller_model() -> None:
    at = page("compare")
    at.selectbox(key="compare_hw").set_value("b200").run()
    tpot_a, tpot_b = metric(at, "TPOT", 0), metric(at, "TPOT", 1)
    assert tpot_b < tpot_a  # B200 has 8 TB/s of HBM against the H100's 3.35 TB/s
    at.radio(key="compare_mode").set_value("two models").run()
    at.selectbox(key="compare_model").set_value("qwen2.5-0.5b").run()
    assert metric(at, "TPOT", 1) < metric(at, "TPOT", 0)
    assert charts(at) == 2
    assert len(at.code[0].value.splitlines()) == 2


def test_compare_table_prints_the_cli_units_and_matches_the_cli() -> None:
    at = page("compare")
    at.selectbox(key="compare_hw").set_value("b200").run()
    table = at.dataframe[0].value.set_index("metric")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*shlex.split(at.code[0].value.splitlines()[0])[1:], "--json"]) == 0
    a = json.loads(out.getvalue())["summary"]
    for label, key in (
        ("TTFT", "ttft_s"),
        ("TPOT", "tpot_s"),
        ("end-to-end", "e2e_s"),
        ("throughput", "throughput_tokens_per_s"),
        ("footprint per device (decimal)", "footprint_bytes_per_device"),
        ("capacity per device (decimal)", "capacity_bytes_per_device"),
    ):
        cell = table.loc[label, "A"]
        # 3-4 significant figures in s/ms/us, tok/s or decimal MB/GB: no raw bytes or
        # 4-decimal seconds.
        assert cell.split(" ", 1)[1] in UNITS, cell
        assert number(cell) == pytest.approx(a[key], rel=5e-3), (label, cell)
    # 85.5 GB (81559 MiB) of HBM3 on the H100 preset against 192 GB of HBM3e on the B200.
    assert table.loc["capacity per device (decimal)", "A"] == "85.5 GB"
    assert table.loc["capacity per device (decimal)", "B"] == "192 GB"
    assert table.loc["capacity per device (decimal)", "B / A"] == "2.25x"
    tpot_ratio = float(table.loc["TPOT", "B / A"].rstrip("x"))
    assert tpot_ratio == pytest.approx(
        number(table.loc["TPOT", "B"]) / number(table.loc["TPOT", "A"]), rel=0.01
    )


def test_uploaded_config_runs_and_bad_upload_is_one_line() -> None:
    at = page("latency")
    at.selectbox(key="model").set_value("upload a config.json...").run()
    assert any("Upload a config.json" in i.value for i in at.info)
    at.file_uploader(key="config_upload").upload("config.json", b"{not json").run()
    assert len(at.error) == 1 and "\n" not in at.error[0].value
    assert "not valid JSON" in at.error[0].value
    assert not at.exception
    config = (MODELS / "qwen2.5-0.5b.json").read_bytes()
    at.file_uploader(key="config_upload").upload("config.json", config).run()
    assert not at.error and not at.exception
    assert "--model config.json" in at.code[0].value


def test_misspelt_key_in_upload_is_named() -> None:
    at = page()
    at.selectbox(key="model").set_value("upload a config.json...").run()
    config = json.loads((MODELS / "qwen2.5-0.5b.json").read_text())
    config["hiden_size"] = config.pop("hidden_size")
    at.file_uploader(key="config_upload").upload("config.json", json.dumps(config).encode()).run()
    assert len(at.error) == 1 and "hiden_size" in at.error[0].value


def test_codesign_app_runs_streamlit_headless_on_the_dashboard() -> None:
    command = streamlit_command(8765, "127.0.0.1")
    assert command[1:4] == ["-m", "streamlit", "run"]
    assert Path(command[4]) == DASHBOARD
    assert command[command.index("--server.port") + 1] == "8765"
    assert command[command.index("--server.headless") + 1] == "true"
    args = cli.build_parser().parse_args(["app", "--port", "9000"])
    assert args.port == 9000 and args.address == "127.0.0.1"


def test_precision_page_is_listed_only_when_the_search_layer_exists(monkeypatch) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def without_search(name: str, *args: object):
        return None if name.startswith("search") else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_search)
    at = page()
    with pytest.raises(ValueError, match="navigation page"):
        at.switch_page("precision_page.py")


def test_precision_smaller_memory_budget_means_fewer_bits(tmp_path: Path) -> None:
    pytest.importorskip("search.bits.quantizer")
    at = page("precision")
    at.slider(key="precision_memory_gb").set_value(12.0).run()
    bits_12 = float(at.metric[0].value)
    assert metric(at, "Footprint") <= 12e9
    at.slider(key="precision_memory_gb").set_value(7.0).run()
    assert not at.exception and not at.error
    # Llama 3.1 8B: 16 GB in fp16; 7 GB forces most weights to 4 bits, 12 GB only some.
    assert float(at.metric[0].value) < bits_12 < 16
    assert metric(at, "Footprint") <= 7e9
    assert charts(at) == 1
    # The shown commands solve the same problem and predict from the written bits file.
    quantize, check = at.code[0].value.splitlines()
    bits_file = tmp_path / "bits.yaml"
    quantize = quantize.replace("--out bits.yaml", f"--out {bits_file}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*shlex.split(quantize)[1:], "--json"]) == 0
    assert yaml.safe_load(bits_file.read_text())["group_bits"]
    check = check.replace("--bits-file bits.yaml", f"--bits-file {bits_file}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*shlex.split(check)[1:], "--json"]) == 0
    summary = json.loads(out.getvalue())["summary"]
    assert metric(at, "TPOT") == pytest.approx(summary["tpot_s"], rel=5e-3)


def test_precision_impossible_budget_is_one_line() -> None:
    pytest.importorskip("search.bits.quantizer")
    at = page("precision")
    at.slider(key="precision_memory_gb").set_value(2.0).run()
    assert len(at.error) == 1 and "\n" not in at.error[0].value
    assert "infeasible" in at.error[0].value
    assert not at.exception


def test_memory_tensor_parallel_halves_weights_and_use_case_grows_kv() -> None:
    at = page("memory")
    weights, kv = metric(at, "Weights"), metric(at, "KV cache")
    at.select_slider(key="tp").set_value(2).run()
    assert metric(at, "Weights") == pytest.approx(weights / 2, rel=0.01)
    at.selectbox(key="use_case").set_value("long-context-rag").run()
    assert at.number_input(key="input_tokens").value == 32768
    # KV cache grows with the context: (32768 + 512) / (1024 + 128) ~ 29x, over tp=2 heads.
    assert metric(at, "KV cache") > 10 * kv


def test_accuracy_page_scatters_held_out_predictions_with_errors_per_group() -> None:
    at = page("accuracy")
    assert charts(at) == 1
    table = at.dataframe[0].value
    assert set(table.hardware) == {"a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm"}
    assert set(table.method) == {"leave-one-hardware-out"}
    quantiles = at.dataframe[1].value
    ttft = quantiles[(quantiles.metric == "TTFT") & (quantiles["device class"] == "all")]
    assert ttft["held-out rows"].tolist() == [10]  # tensorrt-llm: 10 TTFT rows held out
    assert ttft["intervals from"].tolist() == ["batch latency (< 20 rows)"]
    assert (quantiles["q0.1"] <= quantiles["q0.9"]).all()
    assert "codesign calibrate" in at.code[0].value
