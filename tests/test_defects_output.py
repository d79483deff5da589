"""Output that used to mislead (issue #11): every label says what was really computed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from genz import Precision, Scenario, load_model, predict, speculative_decoding
from roofline import Efficiency, derive_platform, load_platform


def test_a_scaled_platform_is_named_for_what_changed() -> None:
    h100 = load_platform("h100-sxm")
    faster = derive_platform(h100, memory_bandwidth_scale=1.5)
    assert faster.name == "h100-sxm (bandwidth x1.5)"
    assert faster.display_name == f"{h100.display_name} (bandwidth x1.5)"
    both = derive_platform(h100, compute_scale=2, memory_capacity_scale=0.5)
    assert both.name == "h100-sxm (compute x2, capacity x0.5)"
    tuned = derive_platform(h100, efficiency=Efficiency(0.5, h100.efficiency.memory, 0.8))
    assert tuned.name == "h100-sxm (compute efficiency 0.5)"
    assert derive_platform(h100, name="mine", link_bandwidth_scale=2).name == "mine"
    assert derive_platform(h100, link_bandwidth_scale=2).display_name.endswith(
        "(link bandwidth x2)"
    )
    unchanged = derive_platform(h100)
    assert (unchanged.name, unchanged.display_name) == (h100.name, h100.display_name)


def test_cli_prints_the_scaled_platform_name(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--bw-scale", "1.5"]
    assert main(argv) == 0
    assert "on h100-sxm (bandwidth x1.5) x 1 device(s)" in capsys.readouterr().out
    assert main(["hw", "show", "h100-sxm", "--capacity-scale", "0.5", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["display_name"].endswith("(capacity x0.5)")
    assert shown["memory"][0]["capacity_bytes"] == pytest.approx(85.521e9 / 2)


def test_roofline_of_nothing_is_refused_and_no_traffic_is_said_in_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["roofline", "--hw", "h100-sxm", "--flop", "0", "--bytes", "0"]) == 2
    err = capsys.readouterr().err
    assert "--flop and --bytes are both 0" in err and "inf" not in err.replace("undefined", "")
    assert main(["roofline", "--hw", "h100-sxm", "--flop", "1e9", "--bytes", "0"]) == 0
    out = capsys.readouterr().out
    assert "infinite (no bytes moved)" in out and " inf FLOP/B" not in out
    # 1e9 FLOP over 1e6 bytes is 1000 FLOP/B, printed as such.
    assert main(["roofline", "--hw", "h100-sxm", "--flop", "1e9", "--bytes", "1e6"]) == 0
    assert "1000 FLOP/B" in capsys.readouterr().out


def test_predict_with_a_bits_file_prints_the_real_mix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bits = tmp_path / "bits.yaml"
    bits.write_text("weight_bits: 4\nkv_bits: 8\ngroup_bits: {embedding: 16}\n")
    argv = ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--bits-file", str(bits)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # Llama 3.1 8B: 8,030,261,248 parameters, of which the input embedding is
    # 128,256 x 4,096 = 525,336,576 at 16 bits and the rest at 4 bits.
    mean = 4 + 12 * 525_336_576 / 8_030_261_248
    assert f"mixed w4-16 (mean {mean:.3g} bits) a16 kv8" in out
    assert "w16a16kv16" not in out
    bits.write_text("weight_bits: 8\nkv_bits: 8\n")
    assert main(argv) == 0
    assert "w8a16kv8," in capsys.readouterr().out


REQUIREMENTS = ["requirements", "--model", "llama-3.1-8b", "--base-hw", "h100-sxm"]


def test_requirements_without_an_slo_prints_no_search_floor_as_a_requirement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*REQUIREMENTS, "--json"]) == 0
    rows = {
        (r["method"], r["others"]): r for r in json.loads(capsys.readouterr().out)["requirements"]
    }
    # Only the capacity wall is checked: bandwidth, compute and link cannot bind it.
    assert rows["bandwidth", "base"]["at_search_floor"] is True
    assert rows["compute", "base"]["at_search_floor"] is True
    # 8.03e9 parameters x 2 bytes + KV + activations ~ 16.3 GB of 85.5 GB: binds at ~0.19x.
    assert rows["capacity", "base"]["at_search_floor"] is False
    assert rows["capacity", "base"]["scale"] == pytest.approx(16.3e9 / 85.521e9, rel=0.01)
    assert main(REQUIREMENTS) == 0
    out = capsys.readouterr().out
    assert "SLO           none given (only the capacity wall is checked)" in out
    bandwidth_rows = [line for line in out.splitlines() if line.strip().startswith("bandwidth")]
    assert bandwidth_rows and all("not binding" in line for line in bandwidth_rows)
    assert "TB/s" not in "".join(bandwidth_rows)


def test_others_unlimited_rows_name_every_unlimited_resource(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*REQUIREMENTS, "--max-tpot-ms", "50", "--tp", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["requirements"]
    unlimited = {r["method"]: r["unlimited_resources"] for r in rows if r["others"] == "unlimited"}
    assert unlimited == {
        "bandwidth": ["compute", "capacity", "link"],
        "compute": ["bandwidth", "capacity", "link"],
        "capacity": ["bandwidth", "compute", "link"],
        "link": ["bandwidth", "compute", "capacity"],
        "joint": ["link"],
    }
    assert main([*REQUIREMENTS, "--max-tpot-ms", "50", "--tp", "2", "--method", "capacity"]) == 0
    out = capsys.readouterr().out
    assert "unlimited bandwidth, compute, link" in out


def test_speculate_reports_the_capacity_wall_like_predict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["speculate", "--model", "llama-3.1-405b", "--draft", "llama-3.1-8b"]
    assert main([*argv, "--hw", "jetson-orin-nano-8gb"]) == 0
    out = capsys.readouterr().out
    assert "DOES NOT FIT" in out and "(does not fit)" in out
    assert main([*argv, "--hw", "jetson-orin-nano-8gb", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    # The footprints are predict's: 405B parameters x 2 bytes alone are ~100x the 8 GB.
    target = predict(
        load_model("llama-3.1-405b"), load_platform("jetson-orin-nano-8gb"), Scenario()
    )
    assert payload["target_footprint_bytes"] == pytest.approx(target.footprint.total_bytes)
    assert payload["target_footprint_bytes"] > 405e9 * 2
    assert payload["fits"] is False and payload["suggestions"]


def test_speculate_counts_the_draft_against_the_capacity() -> None:
    # Llama 3.1 8B fits a 24 GB RTX 4090 alone (~16.3 GB) but not twice over (~32.6 GB).
    model, rtx = load_model("llama-3.1-8b"), load_platform("rtx-4090")
    assert predict(model, rtx, Scenario()).fits
    estimate = speculative_decoding(model, model, rtx, Scenario(), 4, 0.7)
    assert not estimate.fits
    quantise = next(text for text in estimate.suggestions if text.startswith("quantise"))
    bits = float(quantise.split()[-2])
    quantised = Scenario(precision=Precision(weight_bits=bits))
    # The suggestion is sufficient with the 16-bit draft still resident.
    target = predict(model, rtx, quantised).footprint.total_bytes
    assert target + estimate.draft_footprint_bytes <= rtx.main_memory.capacity_bytes
    small_draft = speculative_decoding(model, load_model("qwen2.5-0.5b"), rtx, Scenario(), 4, 0.7)
    assert small_draft.fits and small_draft.suggestions == ()


def test_disagg_reports_each_sides_capacity_wall(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["disagg", "--model", "llama-3.1-8b", "--prefill-hw", "h100-sxm"]
    assert main([*argv, "--decode-hw", "jetson-orin-nano-8gb", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    # 8.03B parameters x 2 bytes = 16 GB: fits 80 GB, not 8 GB.
    assert payload["prefill_fits"] is True and payload["prefill_suggestions"] == []
    assert payload["decode_fits"] is False and payload["fits"] is False
    decode = predict(load_model("llama-3.1-8b"), load_platform("jetson-orin-nano-8gb"), Scenario())
    assert payload["decode_suggestions"] == list(decode.suggestions) != []
    assert main([*argv, "--decode-hw", "jetson-orin-nano-8gb"]) == 0
    out = capsys.readouterr().out
    assert "capacity wall, decode on jetson-orin-nano-8gb  DOES NOT FIT" in out
    assert "capacity wall, prefill" not in out
    assert main([*argv, "--decode-hw", "h100-sxm"]) == 0
    assert "DOES NOT FIT" not in capsys.readouterr().out
