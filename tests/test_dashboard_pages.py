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
from calibration import read_held_out, shipped_held_out_path

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
    at.multiselect(key="compare_platforms").set_value(["h100-sxm", "b200"]).run()
    table = at.dataframe[0].value.set_index("platform")
    # B200 has 8 TB/s of HBM against the H100's 3.35 TB/s.
    assert number(table.loc["b200", "TPOT"]) < number(table.loc["h100-sxm", "TPOT"])
    at.multiselect(key="compare_models").set_value(["llama-3.1-8b", "qwen2.5-0.5b"]).run()
    table = at.dataframe[0].value
    assert len(table) == 4  # 2 platforms x 2 models
    small = table[table.model == "qwen2.5-0.5b"]["TPOT"].map(number)
    big = table[table.model == "llama-3.1-8b"]["TPOT"].map(number)
    assert (small.to_numpy() < big.to_numpy()).all()
    assert charts(at) == 3  # scatter, batch curves, latency bars
    assert len(at.code[0].value.splitlines()) == 4


def test_compare_table_prints_the_cli_units_and_matches_the_cli() -> None:
    at = page("compare")
    at.multiselect(key="compare_platforms").set_value(["h100-sxm", "b200"]).run()
    table = at.dataframe[0].value
    commands = at.code[0].value.splitlines()
    assert set(table["fits"]) == {"yes"}  # words, not True/False
    for index, command in enumerate(commands):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main([*shlex.split(command)[1:], "--json"]) == 0
        cli_summary = json.loads(out.getvalue())["summary"]
        for label, key in (
            ("TTFT", "ttft_s"),
            ("TPOT", "tpot_s"),
            ("throughput", "throughput_tokens_per_s"),
            ("decode throughput", "decode_tokens_per_s"),
            ("memory per device", "footprint_bytes_per_device"),
            ("capacity per device", "capacity_bytes_per_device"),
        ):
            cell = table.iloc[index][label]
            assert cell.split(" ", 1)[1] in UNITS, cell
            assert number(cell) == pytest.approx(cli_summary[key], rel=5e-3), (label, cell)
    # 85.5 GB (81559 MiB as the driver reports it) of HBM3 on the H100 preset against
    # 192 GB of HBM3e on the B200 (decimal GB).
    assert table["capacity per device"].tolist() == ["85.5 GB", "192 GB"]


def test_compare_n_way_warns_when_a_design_does_not_fit_and_lists_minimum_devices() -> None:
    """3 platforms x 2 models x 2 use cases = 12 rows; Llama 70B in fp16 (142 GB per
    device) fits on a B200 (192 GB) but not on an H100 (85.5 GB) or an L40S (48.3 GB): a
    warning names those 4 designs, and the minimum-devices table gives the
    tensor-parallel degree at which each fits, which the CLI confirms."""
    at = page("compare")
    at.multiselect(key="compare_platforms").set_value(["h100-sxm", "l40s", "b200"])
    at.multiselect(key="compare_models").set_value(["llama-3.1-8b", "llama-3.1-70b"])
    at.multiselect(key="compare_use_cases").set_value(["sidebar scenario", "chat"]).run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert len(table) == 12
    big = table[table.model == "llama-3.1-70b"].set_index("platform")["fits"]
    assert big["h100-sxm"].str.startswith("no: 142 GB > 85.5 GB").all()
    assert big["l40s"].str.startswith("no: 142 GB > 48.3 GB").all()
    assert (big["b200"] == "yes").all()
    assert len(at.warning) == 1 and "4 of 12 designs do not fit" in at.warning[0].value
    chips = at.dataframe[1].value
    assert len(chips) == 4
    devices = dict(zip(chips.platform, chips["minimum devices"].astype(int), strict=False))
    assert devices == {"h100-sxm": 2, "l40s": 4}
    command = next(c for c in at.code[0].value.splitlines() if "llama-3.1-70b" in c and "l40s" in c)
    for tp, fits in ((devices["l40s"], True), (devices["l40s"] // 2, False)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert (
                cli.main([*shlex.split(command.replace("--tp 1", f"--tp {tp}"))[1:], "--json"]) == 0
            )
        assert json.loads(out.getvalue())["summary"]["fits"] is fits
    assert charts(at) == 3


def test_compare_scatter_and_batch_curves_show_every_design() -> None:
    at = page("compare")
    at.multiselect(key="compare_models").set_value(["llama-3.1-8b", "qwen2.5-7b"]).run()
    scatter, curves = at.get("plotly_chart")[:2]
    scatter_spec = json.loads(scatter.proto.spec)
    names = [trace["name"] for trace in scatter_spec["data"]]
    assert len(names) == 4 and "qwen2.5-7b / a100-sxm-80gb" in names
    texts = [a["text"] for a in scatter_spec["layout"]["annotations"]]
    assert any("better" in text for text in texts)
    assert scatter_spec["layout"]["xaxis"]["ticktext"][0].endswith(("ms", "s", "us"))
    batch_spec = json.loads(curves.proto.spec)
    # One prefill and one decode line per design, in the platform's colour.
    assert len(batch_spec["data"]) == 8
    colors = {t["name"]: t["line"]["color"] for t in batch_spec["data"]}
    assert len(set(colors.values())) == 2  # two platforms


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


def test_precision_mean_bits_match_the_cli_and_budgets_reset_with_the_model(
    tmp_path: Path,
) -> None:
    """One definition of mean weight bits (the CLI's, every weight counted); a budget
    sized for an 8B model is reset when a 70B one is chosen (not left infeasible); the
    TPOT budget, once bound, starts at a TPOT the allocation meets."""
    pytest.importorskip("search.bits.quantizer")
    at = page("precision")
    at.slider(key="precision_memory_gb").set_value(9.0).run()
    shown = at.metric[0].value
    quantize, check = at.code[0].value.splitlines()
    bits_file = tmp_path / "bits.yaml"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(shlex.split(quantize.replace("bits.yaml", str(bits_file)))[1:]) == 0
        out.truncate(0)
        assert cli.main(shlex.split(check.replace("bits.yaml", str(bits_file)))[1:]) == 0
    printed = out.getvalue()
    assert f"(mean {shown} bits)" in printed, (shown, printed[:600])
    # Bound the TPOT: it starts achievable, so the page shows an allocation, not an error.
    at.checkbox(key="precision_limit_tpot").check().run()
    assert not at.error, [e.value for e in at.error]
    assert metric(at, "TPOT") <= at.slider(key="precision_tpot_ms").value * 1e-3 * 1.001
    at.selectbox(key="model").set_value("llama-3.1-70b").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.slider(key="precision_memory_gb").value > 9.0


def test_accuracy_command_writes_no_shipped_profile_and_prints_the_page_table(
    tmp_path: Path,
) -> None:
    """The page opens on the shipped held-out rows (no fit on first open); the command it
    shows re-runs the calibration, prints the page's table and writes the page's rows."""
    at = page("accuracy")
    table = at.dataframe[0].value
    command = at.code[0].value.splitlines()[0]
    assert "--per-hardware" in command and "data/runtimes/" not in command
    assert command.endswith(
        "--held-out tensorrt-llm-held-out.csv --out tensorrt-llm-recalibrated.yaml"
    )
    out, err = io.StringIO(), io.StringIO()
    target, rows = tmp_path / "trt.yaml", tmp_path / "trt.csv"
    command = command.replace("tensorrt-llm-recalibrated.yaml", str(target))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(shlex.split(command.replace("tensorrt-llm-held-out.csv", str(rows)))[1:])
    # Some TensorRT-LLM rows are excluded (a mesh the model cannot split, or faster than
    # the efficiency-1 bound): exit 1, as predict --scenarios with failed rows; the
    # profile is still fitted on the rest and written.
    assert code == 1 and "rows excluded (" in err.getvalue().splitlines()[-1]
    assert target.is_file()
    printed = out.getvalue().split("per hardware", 1)[1]
    for row in table.itertuples():
        line = next(line for line in printed.splitlines() if line.strip().startswith(row.hardware))
        assert f"{row.MAPE:g}" in line.split(), (row, line)
    shown = [
        (r.hardware, r.measured_s) for r in read_held_out(shipped_held_out_path("tensorrt-llm"))
    ]
    assert [(r.hardware, r.measured_s) for r in read_held_out(rows)] == shown
    # Re-running the calibration in the page gives the table the shipped rows gave.
    at.toggle(key="accuracy_recalibrate").set_value(True).run()
    assert not at.exception and not at.error
    assert at.dataframe[0].value.equals(table)
    # Upload limits as the labels say (Streamlit's own check, not only ours).
    spec = {u.proto.label: u.proto.max_upload_size_mb for u in at.get("file_uploader")}
    assert any("at most 20 MB" in label and size == 20 for label, size in spec.items()), spec


def test_accuracy_scatter_colours_each_runtime_apart() -> None:
    """The runtime's shared colour on the page (the default TensorRT-LLM, read from its
    shipped held-out rows); vLLM's is another hue, not a second blue."""
    from app.charts import RUNTIME_COLORS

    at = page("accuracy")
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    colors = {
        t["legendgroup"].split(",")[0]: t["marker"]["color"]
        for t in spec["data"]
        if t.get("legendgroup") and "marker" in t
    }
    assert colors["tensorrt-llm"] == RUNTIME_COLORS["tensorrt-llm"]
    assert RUNTIME_COLORS["vllm"] != RUNTIME_COLORS["tensorrt-llm"]
    assert spec["layout"]["xaxis"]["ticktext"][0].endswith(("ms", " s", "us"))
