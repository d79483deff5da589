"""Calibration on decode-only rows: efficiencies taken from the platform preset
(``codesign calibrate --inherit``) and an accuracy block headed by inter-token latency."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from app.cli import main
from calibration import Measurement, calibrate_runtime, prediction_interval, write_measurements
from calibration.rows import decompose
from genz import Scenario, load_model, load_runtime, predict, runtime_from_dict
from genz.runtime import PhaseProfile, RuntimeProfile
from roofline import InputError, load_platform

HARDWARE = ("rtx-4090", "a100-sxm-80gb", "l40s")
#: Decode: memory efficiency 0.7 and 1.5 ms per step; compute inherited (None).
TRUE_PHASE = PhaseProfile(None, 0.7, 1.5e-3)
TRUE = RuntimeProfile(name="decode-only", phases={"prefill": TRUE_PHASE, "decode": TRUE_PHASE})


def decode_rows() -> list[Measurement]:
    """Batch-1 decode rows of three model sizes on three devices, with the inter-token
    latency `TRUE` gives (exact: no noise)."""
    rows = [
        Measurement(model, hw, "mlc", 1, 16, 128, weight_bits=4.0, itl_s=1.0)
        for hw in HARDWARE
        for model in ("llama-3.2-1b", "llama-2-7b", "llama-2-13b")
    ]
    itl = decompose(rows).predict(TRUE)["itl_s"]
    return [dataclasses.replace(r, itl_s=float(t)) for r, t in zip(rows, itl, strict=True)]


def test_decode_only_rows_cannot_fit_compute_and_the_refusal_names_inherit():
    with pytest.raises(InputError, match=r"compute_efficiency \(--inherit compute_efficiency"):
        calibrate_runtime(decode_rows(), "mlc", command="test")


def test_inherited_compute_efficiency_is_each_platform_presets_own():
    result = calibrate_runtime(
        decode_rows(), "mlc", command="test", inherit=("compute_efficiency",)
    )
    fit = result.fit.default
    assert "compute_efficiency" not in fit.values and fit.inherited == ("compute_efficiency",)
    assert fit.values["memory_efficiency"] == pytest.approx(0.7, rel=1e-4)
    assert fit.values["step_overhead_s"] == pytest.approx(1.5e-3, rel=1e-3)
    document = result.document
    assert document["prefill"]["compute_efficiency"] == {
        "value": "platform",
        "calibrated_from": "test",
    }
    # No batch latency measured: the accuracy block is headed by inter-token latency.
    assert document["accuracy"]["metric"] == "itl_s" and "metrics" not in document["accuracy"]
    profile = runtime_from_dict(yaml.safe_load(yaml.safe_dump(document)))
    assert profile.phases["prefill"].compute_efficiency is None
    assert not profile.device_classes  # one device class measured: no overrides
    model, scenario = load_model("llama-2-7b"), Scenario()
    for hw in ("rtx-4090", "h100-sxm"):
        platform = load_platform(hw)
        resolved = profile.on_platform(platform).phases["prefill"]
        assert resolved.compute_efficiency == platform.efficiency.compute
        assert resolved.memory_efficiency == profile.phases["prefill"].memory_efficiency
        # Prefill at the preset's compute efficiency = the same profile with it written out.
        explicit = dataclasses.replace(
            profile,
            phases={name: resolved for name in ("prefill", "decode")},
            device_classes={},
        )
        got = predict(model, platform, scenario, runtime=profile)
        want = predict(model, platform, scenario, runtime=explicit)
        assert got.ttft_s == pytest.approx(want.ttft_s, rel=1e-12)
        assert got.tpot_s == pytest.approx(want.tpot_s, rel=1e-12)


def test_interval_of_a_decode_only_profile_says_which_error_stands_in():
    result = calibrate_runtime(
        decode_rows(), "mlc", command="test", inherit=("compute_efficiency",)
    )
    profile = runtime_from_dict(yaml.safe_load(yaml.safe_dump(result.document)))
    platform = load_platform("rtx-4090")
    tpot = prediction_interval(0.01, profile, platform, metric="itl_s")
    assert tpot.low is not None and "inter-token latency" in tpot.basis
    latency = prediction_interval(1.0, profile, platform)
    assert "batch latency" in latency.basis and "inter-token latency error stands in" in (
        latency.basis
    )
    assert latency.low == pytest.approx(tpot.low * 100) and latency.high == pytest.approx(
        tpot.high * 100
    )


def test_bad_inherit_and_bad_inherited_values_are_one_line_errors(tmp_path, capsys):
    with pytest.raises(InputError, match="--inherit: 'step_overhead_s' cannot come from"):
        calibrate_runtime(decode_rows(), "mlc", command="t", inherit=("step_overhead_s",))
    with pytest.raises(InputError, match="--inherit: compute_efficiency named more than once"):
        calibrate_runtime(decode_rows(), "mlc", command="t", inherit=("compute_efficiency",) * 2)
    phase = {
        "compute_efficiency": {"value": "platfrom", "source": "t"},
        "memory_efficiency": {"value": 0.5, "source": "t"},
        "step_overhead_s": {"value": 1e-3, "source": "t"},
    }
    with pytest.raises(InputError, match=r"compute_efficiency: value must be a number in \["):
        runtime_from_dict({"name": "x", "prefill": phase, "decode": phase})
    phase["compute_efficiency"]["value"] = "platform"
    runtime_from_dict({"name": "x", "prefill": phase, "decode": phase})  # accepted
    phase["step_overhead_s"]["value"] = "platform"
    with pytest.raises(InputError, match=r"step_overhead_s: value must be a number"):
        runtime_from_dict({"name": "x", "prefill": phase, "decode": phase})
    measurements = tmp_path / "runs.csv"
    write_measurements(decode_rows(), measurements)
    out = tmp_path / "decode.yaml"
    args = ["calibrate", "--measurements", str(measurements), "--runtime", "mlc"]
    assert main([*args, "--out", str(out)]) == 2
    assert "--inherit compute_efficiency" in capsys.readouterr().err and not out.exists()
    assert main([*args, "--inherit", "compute_efficiency", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "compute_efficiency not fitted (--inherit)" in printed
    assert (
        "--inherit compute_efficiency"
        in yaml.safe_load(out.read_text())["accuracy"]["calibrated_from"]
    )
    assert np.isfinite(
        predict(
            load_model("llama-2-7b"),
            load_platform("l4"),
            Scenario(),
            runtime=load_runtime(str(out)),
        ).tpot_s
    )
