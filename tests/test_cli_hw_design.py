"""``codesign hw design``: platform and cost breakdown, JSON, one-line errors (exit 2)."""

import json

import pytest

from app.cli import main
from roofline import AcceleratorDesign, MemorySpec, design_cost


def test_hw_design_json_matches_the_library(capsys):
    argv = ["hw", "design", "--compute-tflops", "bf16:500,fp8:1000", "--memory", "hbm3e:6"]
    assert main([*argv, "--sram-mb", "40", "--node", "n4", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = design_cost(
        AcceleratorDesign(
            compute_tflops={"bf16": 500, "fp8": 1000},
            memory=MemorySpec("hbm3e", 6),
            sram_mb=40,
            node="n4",
        )
    )
    assert payload["cost"]["device_cost_usd"] == pytest.approx(expected.device_cost_usd)
    assert payload["cost"]["area_mm2"] == pytest.approx(expected.area_mm2)
    assert payload["platform"]["memory"][0]["capacity_bytes"] == 216e9
    assert payload["platform"]["peak_flops_per_s"]["fp8"] == 1000e12


def test_hw_design_text_shows_the_breakdown(capsys):
    argv = ["hw", "design", "--compute-tflops", "312", "--memory", "ddr5:16:32", "--node", "n7"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for word in ("die area", "yield", "cost (US$)", "memory", "TDP", "512 GB"):
        assert word in out


def test_hw_design_with_a_model_prices_tokens(capsys):
    argv = ["hw", "design", "--compute-tflops", "312", "--memory", "hbm2e:5", "--node", "n7"]
    assert main([*argv, "--model", "llama-3.1-8b", "--batch", "8", "--json"]) == 0
    evaluation = json.loads(capsys.readouterr().out)["evaluation"]
    assert evaluation["fits"] is True
    assert evaluation["usd_per_million_output_tokens"] > 0
    assert evaluation["perf_per_cost"] == pytest.approx(
        evaluation["throughput_tokens_per_s_per_device"] / evaluation["device_cost_usd"]
    )


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--compute-tflops", "-5", "--memory", "hbm3e:6"], "compute_tflops[bf16] (TFLOP/s)"),
        (["--compute-tflops", "500", "--memory", "hbx:6"], "unknown memory technology 'hbx'"),
        (
            ["--compute-tflops", "500", "--memory", "hbm3:2", "--bandwidth-gb-per-s", "3350"],
            "memory.bandwidth_gb_per_s (GB/s) must be <= 1638.4",
        ),
        (["--compute-tflops", "500", "--memory", "hbm3e"], "--memory must be"),
        (["--compute-tflops", "500", "--memory", "hbm3e:6", "--node", "n1"], "process node"),
        (
            ["--compute-tflops", "500", "--memory", "hbm3e:6", "--sram-mb", "-1"],
            "--sram-mb must be a number of MB in [0, 1e+06], got -1.0",
        ),
        (["--compute-tflops", "bf16=5", "--memory", "hbm3e:6"], "--compute-tflops must be"),
    ],
)
def test_hw_design_bad_input_is_one_line_exit_2(capsys, extra, fragment):
    assert main(["hw", "design", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err
    assert len(err.splitlines()) == 1


def test_hw_design_out_writes_a_preset_that_predicts_the_same(capsys, tmp_path):
    from genz import Scenario, load_model, predict
    from roofline import design_platform, load_platform

    out = tmp_path / "decode.yaml"
    argv = ["hw", "design", "--compute-tflops", "200", "--memory", "lpddr5x:32:8"]
    assert main([*argv, "--node", "n5", "--out", str(out)]) == 0
    capsys.readouterr()
    loaded = load_platform(out)
    built = design_platform(
        AcceleratorDesign(
            compute_tflops={"bf16": 200}, memory=MemorySpec("lpddr5x", 32, 8), node="n5"
        )
    )
    assert loaded.power_model is not None
    assert loaded.price_usd == pytest.approx(built.price_usd)
    model, scenario = load_model("llama-3.2-1b"), Scenario(batch=4)
    ours, theirs = predict(model, loaded, scenario), predict(model, built, scenario)
    assert ours.tpot_s == pytest.approx(theirs.tpot_s, rel=1e-12)
    assert ours.ttft_s == pytest.approx(theirs.ttft_s, rel=1e-12)
    # A second write needs --force; a disaggregated estimate takes the file as --decode-hw.
    assert main([*argv, "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    disagg = ["disagg", "--model", "llama-3.2-1b", "--prefill-hw", "h100-sxm"]
    assert main([*disagg, "--decode-hw", str(out), "--json"]) == 0
