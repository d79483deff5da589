"""Co-design and bit allocation under a serving-stack profile (``--runtime``), training
time and cost as constraints, and loss intervals on every feasible design."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import run_cli

from genz import Scenario, load_model, load_runtime, predict
from roofline import InputError, load_platform
from search.bits import QuantizeBudgets, quantize
from search.codesign import (
    Constraints,
    Plan,
    allocation_precision,
    resolve_law,
    search_designs,
    space_from_dict,
)
from search.codesign.frame import design_platform, row_fields
from search.codesign.ilp import design_scenario
from search.codesign.model import model_config

#: 4 architectures x 3 weight widths on one Orin Nano, 1e9 training tokens each.
SPACE = {
    "name": "runtime-small",
    "hardware": {"presets": ["jetson-orin-nano-8gb"]},
    "model": {
        "layers": [8, 16],
        "hidden": [1024, 2048],
        "head_dim": 128,
        "kv_heads": 4,
        "ffn_ratio": 2.75,
        "ffn_multiple": 256,
    },
    "precision": {"weight_bits": [16, 8, 4]},
    "workload": {"batch": 1, "input_tokens": 256, "output_tokens": 64},
    "law": {"training_tokens": 1.0e9},
    # One fixed MFU, so the hand count below holds (the default follows width and depth:
    # tests/test_scaling_mfu.py).
    "training": {"mfu": 0.4},
}
STEP_S = 0.05


def profile(path: Path, step_s: float, efficiency: float = 1.0) -> Path:
    """A runtime profile file: both phases at ``efficiency`` of peak and ``step_s`` per step."""
    phase = {
        "compute_efficiency": {"value": efficiency, "source": "test"},
        "memory_efficiency": {"value": efficiency, "source": "test"},
        "step_overhead_s": {"value": step_s, "source": "test"},
    }
    path.write_text(yaml.safe_dump({"name": path.stem, "prefill": phase, "decode": phase}))
    return path


@pytest.fixture
def space_file(tmp_path: Path) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(SPACE))
    return path


def search_csv(space_file: Path, out: Path, *flags: str) -> pd.DataFrame:
    code, _, err = run_cli(
        "search", "--space", str(space_file), "--no-progress", "--out", str(out), *flags
    )
    assert code == 0, err
    return pd.read_csv(out).sort_values(["layers", "hidden", "weight_bits"]).reset_index(drop=True)


# --- --runtime on search / recommend ----------------------------------------------------


def test_ideal_runtime_reproduces_the_physics(space_file: Path, tmp_path: Path) -> None:
    plain = search_csv(space_file, tmp_path / "plain.csv")
    ideal = search_csv(space_file, tmp_path / "ideal.csv", "--runtime", "ideal")
    pd.testing.assert_frame_equal(plain, ideal)


def test_step_overhead_adds_to_every_tpot_and_shrinks_the_design_within_a_budget(
    space_file: Path, tmp_path: Path
) -> None:
    none = profile(tmp_path / "zero.yaml", 0.0)
    slow = profile(tmp_path / "slow.yaml", STEP_S)
    fast = search_csv(space_file, tmp_path / "a.csv", "--runtime", str(none))
    stepped = search_csv(space_file, tmp_path / "b.csv", "--runtime", str(slow))
    # One decode step per output token at batch 1: TPOT grows by exactly the step cost;
    # prefill is one step (one chunk), so TTFT too.
    np.testing.assert_allclose(stepped["tpot_s"] - fast["tpot_s"], STEP_S, rtol=1e-9)
    np.testing.assert_allclose(stepped["ttft_s"] - fast["ttft_s"], STEP_S, rtol=1e-9)
    # Within the same TPOT budget the overhead leaves less time for weights: the best
    # loss gets worse (a smaller or lower-bit design), never better.
    budget = float(np.median(fast["tpot_s"]) + STEP_S) * 1e3
    best = {}
    for name, path in (("fast", none), ("slow", slow)):
        code, out, err = run_cli(
            "search", "--space", str(space_file), "--runtime", str(path),
            "--max-tpot-ms", f"{budget}", "--objective", "loss", "--json",
        )  # fmt: skip
        assert code == 0, err
        payload = json.loads(out)
        assert payload["runtime"] == path.stem
        best[name] = payload["frontier"][0]
    assert best["slow"]["loss"] > best["fast"]["loss"]
    assert best["slow"]["params"] * best["slow"]["weight_bits"] < (
        best["fast"]["params"] * best["fast"]["weight_bits"]
    )


def test_runtime_flag_overrides_the_space_and_names_unknown_profiles(
    space_file: Path, tmp_path: Path
) -> None:
    document = dict(SPACE, hardware={**SPACE["hardware"], "runtime": "vllm"})
    with_vllm = tmp_path / "vllm_space.yaml"
    with_vllm.write_text(yaml.safe_dump(document))
    from_space = search_csv(with_vllm, tmp_path / "v.csv")
    from_flag = search_csv(space_file, tmp_path / "f.csv", "--runtime", "vllm")
    overridden = search_csv(with_vllm, tmp_path / "o.csv", "--runtime", "ideal")
    plain = search_csv(space_file, tmp_path / "p.csv")
    pd.testing.assert_frame_equal(from_space, from_flag)
    pd.testing.assert_frame_equal(overridden, plain)
    assert (from_space["tpot_s"] > plain["tpot_s"]).all()
    code, _, err = run_cli("search", "--space", str(space_file), "--runtime", "vlm")
    assert code == 2 and err.count("\n") == 1
    assert "unknown runtime 'vlm' (did you mean 'vllm'?)" in err
    code, _, err = run_cli("recommend", "--space", str(space_file), "--runtime", "nope.yaml")
    assert code == 2 and err.count("\n") == 1 and "nope.yaml" in err


# --- the ILP under a runtime profile ------------------------------------------------------


def test_quantize_costs_follow_the_runtime_and_match_its_prediction(tmp_path: Path) -> None:
    model = load_model("qwen2.5-0.5b")
    platform = load_platform("jetson-orin-nano-8gb")
    scenario = Scenario(batch=1, input_tokens=256, output_tokens=64)
    none = load_runtime(profile(tmp_path / "zero.yaml", 0.0, efficiency=0.7))
    slow = load_runtime(profile(tmp_path / "slow.yaml", STEP_S, efficiency=0.7))
    free = quantize(model, platform, scenario, "16,8,4", QuantizeBudgets(), runtime=none)
    assert free.runtime == "zero" and free.to_dict()["runtime"] == "zero"
    # The ILP's TPOT total is genz's prediction of the allocation under the same profile.
    for runtime in (none, slow, load_runtime("vllm")):
        result = quantize(
            model, platform, scenario, "16,8,4", QuantizeBudgets(max_tpot_s=1.0), runtime=runtime
        )
        assert result.success and result.prediction is not None
        again = predict(
            model, platform, dataclasses.replace(scenario, precision=result.precision), runtime
        )
        assert result.result.totals["tpot_s"] == pytest.approx(again.tpot_s, rel=1e-9)
        assert result.prediction.tpot_s == pytest.approx(again.tpot_s, rel=1e-12)
    # A budget between the 16-bit TPOT with and without the step cost: the physics-only
    # costs keep 16 bits everywhere, the step cost forces lower bits.
    # (a 5 ms step: 4-bit weights save more than 2.5 ms per token on this device).
    sixteen = free.result.totals["tpot_s"]
    budget = QuantizeBudgets(max_tpot_s=sixteen + 0.0025)
    step = load_runtime(profile(tmp_path / "step.yaml", 0.005, efficiency=0.7))
    kept = quantize(model, platform, scenario, "16,8,4", budget, runtime=none)
    forced = quantize(model, platform, scenario, "16,8,4", budget, runtime=step)
    assert {row["bits"] for row in kept.rows()} == {16.0}
    assert forced.success and min(row["bits"] for row in forced.rows()) < 16
    assert forced.result.totals["tpot_s"] <= sixteen + 0.0025


def test_cli_quantize_takes_a_runtime(tmp_path: Path) -> None:
    argv = ["quantize", "--model", "qwen2.5-0.5b", "--hw", "jetson-orin-nano-8gb", "--json"]
    payloads = {}
    for step in (0.0, STEP_S):
        path = profile(tmp_path / f"step{step:g}.yaml", step)
        code, out, _ = run_cli(*argv, "--runtime", str(path))
        assert code == 0
        payloads[step] = json.loads(out)
    assert payloads[STEP_S]["runtime"] == f"step{STEP_S:g}"
    # No budget: the same allocation, the step cost added once per token.
    gap = payloads[STEP_S]["totals"]["tpot_s"] - payloads[0.0]["totals"]["tpot_s"]
    assert gap == pytest.approx(STEP_S, rel=1e-9)
    code, out, _ = run_cli(*argv)
    assert code == 0 and json.loads(out)["runtime"] == "ideal"
    code, _, err = run_cli(*argv, "--runtime", "tensorrt")
    assert code == 2 and "did you mean 'tensorrt-llm'" in err


def test_codesign_ilp_refinement_is_costed_with_the_space_runtime(tmp_path: Path) -> None:
    document = {
        "hardware": {
            "presets": ["jetson-orin-nano-8gb"],
            "runtime": str(profile(tmp_path / "slow.yaml", STEP_S, efficiency=0.7)),
        },
        "model": {"base": "qwen2.5-0.5b", "layers": [4, 6]},
        "precision": {"weight_bits": "ilp", "formats": "16,8,4"},
        "workload": {"batch": 1, "input_tokens": 256, "output_tokens": 64},
    }
    result = search_designs(space_from_dict(document), ilp_candidates=1)
    row = result.frontier.iloc[0].to_dict()
    assert row["ilp_status"] == "optimal"
    # Within the design's own (runtime) TPOT, and genz under the same profile agrees.
    assert STEP_S < row["ilp_tpot_s"] <= row["tpot_s"] * (1 + 1e-6)
    space = result.space
    model = model_config(space.model, row_fields(row), "design")
    plan = Plan(space, resolve_law(space.law), result.objectives, result.constraints)
    precision = allocation_precision(plan, row)
    assert precision is not None
    scenario = dataclasses.replace(design_scenario(row, 16.0), precision=precision)
    again = predict(model, design_platform(space, row), scenario, space.hardware.runtime)
    assert again.tpot_s == pytest.approx(row["ilp_tpot_s"], rel=1e-9)


# --- training time and cost as constraints ----------------------------------------------

#: Hand count for layers 8, hidden 1024 (8 heads x 128, 4 KV heads), FFN 2.75 x 1024 =
#: 2816 (multiple of 256), gated, vocab 32000, untied head. Per layer: q and o 1024^2
#: each, k and v 1024 x 512 each, FFN 3 x 1024 x 2816; 8 layers + LM head 32000 x 1024
#: (the input embedding is a lookup), two RMSNorm weights per layer and the final norm
#: (1024 each). Attention FLOP: 12 L d_attn T = 12 x 8 x 1024 x 2048.
SMALLEST_NC = 8 * (2 * 1024**2 + 2 * 1024 * 512 + 3 * 1024 * 2816 + 2 * 1024) + 1024 + 32000 * 1024
SMALLEST_FLOP = (6 * SMALLEST_NC + 12 * 8 * 1024 * 2048) * 1.0e9
#: One H100 SXM (989.4 TFLOP/s dense bf16) at MFU 0.4, $2.99 per hour (the preset's).
SMALLEST_S = SMALLEST_FLOP / (989.4e12 * 0.4)
SMALLEST_USD = SMALLEST_S / 3600 * 2.99


def test_training_time_and_cost_match_the_hand_count() -> None:
    result = search_designs(space_from_dict(SPACE))
    smallest = result.designs.query("layers == 8 and hidden == 1024")
    assert pytest.approx(2436.5, abs=0.1) == SMALLEST_S  # 0.6768 h, $2.024
    np.testing.assert_allclose(smallest["training_time_s"], SMALLEST_S, rtol=1e-12)
    np.testing.assert_allclose(smallest["training_cost_usd"], SMALLEST_USD, rtol=1e-12)


def test_training_bounds_filter_and_name_the_tightest_feasible_value(space_file: Path) -> None:
    free = search_designs(space_from_dict(SPACE))
    hours = float(np.median(free.designs["training_time_s"])) / 3600
    bounded = search_designs(
        space_from_dict(SPACE), constraints=Constraints(max_training_time_s=hours * 3600)
    )
    expected = free.designs[free.designs["training_time_s"] <= hours * 3600]
    assert 0 < bounded.feasible_count == len(expected) < free.feasible_count
    assert (bounded.frontier["training_time_s"] <= hours * 3600).all()
    # Cheaper than the smallest design: one line naming the least reachable time.
    code, _, err = run_cli(
        "search", "--space", str(space_file), "--max-training-hours", "0.1", "--no-progress"
    )
    assert code == 2 and err.count("\n") == 1
    assert "binding: max-training-hours <= 0.1 h" in err
    assert f"best achievable while meeting the others: {SMALLEST_S / 3600:.4g} h" in err
    code, _, err = run_cli(
        "search", "--space", str(space_file), "--max-training-cost-usd", "1", "--no-progress"
    )
    assert code == 2 and f"{SMALLEST_USD:.4g} USD" in err
    # The YAML section takes the same names; the CLI flag replaces it.
    yaml_bound = space_from_dict({**SPACE, "constraints": {"max_training_cost_usd": 1e6}})
    assert yaml_bound.constraints.max_training_cost_usd == 1e6
    code, out, _ = run_cli(
        "search", "--space", str(space_file), "--max-training-cost-usd", f"{SMALLEST_USD * 1.01}",
        "--json",
    )  # fmt: skip
    payload = json.loads(out)
    assert code == 0 and payload["feasible_count"] == 3  # the smallest, at 16, 8 and 4 bits


def test_training_cost_bound_needs_a_priced_platform() -> None:
    document = {**SPACE, "training": {"platform": "jetson-orin-nano-8gb"}}
    with pytest.raises(InputError, match=r"max-training-cost-usd: training platform .* no price"):
        search_designs(space_from_dict(document), constraints=Constraints(max_training_cost_usd=5))


# --- intervals on every design ----------------------------------------------------------


def test_every_feasible_design_carries_its_loss_intervals(space_file: Path, tmp_path: Path) -> None:
    result = search_designs(space_from_dict(SPACE))
    designs = result.designs
    for name in ("loss_param_low", "loss_param_high", "loss_form_min", "loss_form_max"):
        assert designs[name].notna().all()
    assert (designs["loss_param_low"] <= designs["loss"] + 1e-12).all()
    assert (designs["loss"] <= designs["loss_param_high"] + 1e-12).all()
    assert (designs["loss_form_min"] <= designs["loss"] + 1e-12).all()
    assert (designs["loss"] <= designs["loss_form_max"] + 1e-12).all()
    # The frontier rows carry the same values as their rows in the whole region.
    key = ["layers", "hidden", "weight_bits"]
    merged = result.frontier.merge(designs, on=key, suffixes=("", "_all"))
    np.testing.assert_allclose(merged["loss_form_max"], merged["loss_form_max_all"])
    frame = search_csv(space_file, tmp_path / "all.csv")
    assert len(frame) == result.feasible_count and frame["loss_param_high"].notna().all()
