"""Calibration of runtime profiles: recovery, refusal, folds, the shipped profiles."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sys
import types
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np
import pytest
import yaml

import calibration.cross_validation as cross_validation
from app.cli import main
from calibration import (
    HeldOutRow,
    Measurement,
    calibrate_runtime,
    held_out_rows,
    load_formats,
    read_held_out,
    recalibrate,
    shipped_held_out_path,
    write_held_out,
    write_measurements,
)
from calibration.fit import fit_profile
from calibration.rows import decompose
from genz import load_runtime, runtime_from_dict
from genz.runtime import PhaseProfile, RuntimeProfile
from roofline import InputError, data_dir

BENCH = data_dir() / "validation" / "llm_inference_bench" / "normalized.csv"
CSV = data_dir() / "validation" / "measurements_normalized.csv"
TRUE = RuntimeProfile(
    name="synthetic",
    phases={
        "prefill": PhaseProfile(0.45, 0.6, 2e-3, 2e-5),
        "decode": PhaseProfile(0.45, 0.6, 2e-3, 2e-5),
    },
    all_reduce_latency_s=3e-5,
)


def grid_rows(hardware: tuple[str, ...] = ("a100-sxm-40gb", "h100-sxm")) -> list[Measurement]:
    """A varied design: models, batches, lengths and tp (placeholder latency 1 s)."""
    rows = []
    for hw in hardware:
        for model, tp in (("llama-3-8b", 1), ("llama-2-7b", 2), ("llama-2-70b", 4)):
            for batch in (1, 8, 32):
                for tokens in (128, 1024):
                    rows.append(
                        Measurement(
                            model, hw, "vllm", batch, tokens, tokens, tp=tp, batch_latency_s=1.0
                        )
                    )
    return rows


def with_latencies(rows: list[Measurement], profile: RuntimeProfile, noise: float, seed: int = 0):
    """The rows with batch latencies the model itself gives under ``profile``, times
    log-normal noise of ``noise`` (relative)."""
    predicted = decompose(rows).predict(profile)["batch_latency_s"]
    factor = np.exp(np.random.default_rng(seed).normal(0.0, noise, len(rows)))
    return [
        dataclasses.replace(row, batch_latency_s=float(value))
        for row, value in zip(rows, predicted * factor, strict=True)
    ]


def test_calibration_recovers_known_parameters_from_noisy_synthetic_runs():
    rows = with_latencies(grid_rows(), TRUE, noise=0.01)
    fit = fit_profile(decompose(rows), "synthetic")
    # (true value, relative tolerance): compute efficiency and the per-sequence cost
    # move few rows' times, so 1 % noise leaves them looser.
    truth = {
        "compute_efficiency": (0.45, 0.2),
        "memory_efficiency": (0.6, 0.05),
        "step_overhead_s": (2e-3, 0.15),
        "sequence_overhead_s": (2e-5, 0.3),
        "all_reduce_latency_s": (3e-5, 0.1),
    }
    assert fit.success and fit.condition < 100
    for name, (value, tolerance) in truth.items():
        assert fit.values[name] == pytest.approx(value, rel=tolerance), name
        low, high = fit.intervals[name]
        assert low <= fit.values[name] <= high


def test_batch_one_rows_of_one_shape_cannot_separate_step_cost_from_bandwidth():
    """Batch-1 decode of one model and one shape: t = W / (bw x eff) + step, one equation
    for two unknowns (the long prompt identifies compute efficiency)."""
    rows = [
        Measurement("llama-3-8b", "h100-sxm", "vllm", 1, 2048, 128, batch_latency_s=1.0)
        for _ in range(6)
    ]
    rows = with_latencies(rows, TRUE, noise=0.01)
    with pytest.raises(InputError, match="cannot separate memory_efficiency and step_overhead_s"):
        fit_profile(decompose(rows), "synthetic")
    short = [dataclasses.replace(row, input_tokens=128) for row in rows]
    with pytest.raises(InputError, match="no measured row depends on compute_efficiency"):
        fit_profile(decompose(short), "synthetic")


def moe_rows(batches: tuple[int, ...]) -> list[Measurement]:
    """Mixtral (tp 4) and two dense models on two hardware, at ``batches``."""
    rows = []
    for hw in ("a100-sxm-40gb", "h100-sxm"):
        for model, tp in (("mixtral-8x7b", 4), ("llama-3-8b", 1), ("llama-2-70b", 4)):
            for batch in batches:
                for tokens in (128, 1024):
                    rows.append(
                        Measurement(
                            model, hw, "vllm", batch, tokens, tokens, tp=tp, batch_latency_s=1.0
                        )
                    )
    return rows


def test_calibration_recovers_the_routing_independence_of_moe_rows():
    skewed = PhaseProfile(0.45, 0.6, 2e-3, 2e-5, routing_independence=0.2)
    truth = dataclasses.replace(TRUE, phases={"prefill": skewed, "decode": skewed})
    rows = with_latencies(moe_rows((1, 8, 32)), truth, noise=0.01)
    fit = fit_profile(decompose(rows), "synthetic")
    assert fit.values["routing_independence"] == pytest.approx(0.2, rel=0.15)
    low, high = fit.intervals["routing_independence"]
    assert low <= 0.2 <= high and not fit.refused
    dense = [row for row in rows if row.model != "mixtral-8x7b"]
    assert fit_profile(decompose(dense), "synthetic").unused["routing_independence"] == (
        "no mixture-of-experts row"
    )
    single = [row for row in rows if row.batch == 1 or row.model != "mixtral-8x7b"]
    assert fit_profile(decompose(single), "synthetic").unused["routing_independence"] == (
        "no mixture-of-experts row decodes two or more sequences"
    )


def test_routing_independence_the_rows_cannot_identify_is_refused_with_the_reason():
    """Uniform routing at batch 64: 8 (1 - 0.75^64) = 8.0 experts at any independence
    above a few %, so the rows cannot tell it; the fit leaves it out and says why."""
    rows = with_latencies(moe_rows((64,)), TRUE, noise=0.01)
    fit = fit_profile(decompose(rows), "synthetic")
    assert "routing_independence" not in fit.values
    assert fit.refused["routing_independence"] == (
        "the measurements do not constrain routing_independence: its 95% interval covers "
        "the whole range [0, 1]"
    )
    assert fit.profile.phases["decode"].routing_independence == 1.0


def test_leave_one_hardware_out_never_fits_on_the_held_out_hardware(monkeypatch):
    rows = with_latencies(grid_rows(("a100-sxm-40gb", "h100-sxm", "mi250-gcd")), TRUE, 0.02)
    data = decompose(rows)
    seen: list[set[str]] = []
    real = cross_validation.fit_runtime

    def spy(train, *args, **kwargs):
        seen.append(set(train.hw))
        return real(train, *args, **kwargs)

    monkeypatch.setattr(cross_validation, "fit_runtime", spy)
    cv = cross_validation.cross_validate(data, "synthetic")
    assert cv.method == "leave-one-hardware-out" and cv.folds == 3
    hardware = {"a100-sxm-40gb", "h100-sxm", "mi250-gcd"}
    assert sorted(map(sorted, seen)) == sorted(sorted(hardware - {hw}) for hw in hardware)
    assert np.all(np.isfinite(cv.predicted["batch_latency_s"]))


def test_calibrate_excludes_rows_faster_than_physics_and_names_them():
    rows = with_latencies(grid_rows(), TRUE, noise=0.02)
    rows[0] = dataclasses.replace(rows[0], batch_latency_s=1e-4, source="mine.csv:2")
    result = calibrate_runtime(rows, "vllm", command="test")
    assert [(row.source, reason.split()[0]) for row, reason in result.excluded] == [
        ("mine.csv:2", "batch")
    ]
    assert result.fit.default.rows == len(rows) - 1
    assert result.errors_pct(out_of_sample=True).size == len(rows) - 1


def test_shipped_tensorrt_llm_profile_names_its_command():
    """The command benchmarks/README.md lists is the one tensorrt-llm.yaml records."""
    assert load_runtime("tensorrt-llm").accuracy.calibrated_from == (
        "codesign calibrate --measurements data/validation/llm_inference_bench/normalized.csv "
        "data/validation/measurements_normalized.csv --runtime tensorrt-llm "
        "--out data/runtimes/tensorrt-llm.yaml"
    )


#: The shipped profiles, the slowest re-derivation first (llama.cpp: three tables, the
#: per-format fits) so that two workers finish together.
SHIPPED_PROFILES = ("llama.cpp", "vllm", "tensorrt-llm", "deepspeed-mii", "deepspeed")
#: Re-derivations run at once: one process per core, at most two.
PARALLEL_FITS = max(1, min(2, os.cpu_count() or 1))


def re_derive(name: str) -> tuple[dict, list[HeldOutRow], int]:
    """`recalibrate` of shipped profile ``name``: the profile document it writes, the
    held-out rows ``--held-out`` writes, and how many rows the cross-validation scored."""
    result = recalibrate(load_runtime(name))
    scored = int(result.cv.scored(result.data).sum())
    return result.document, list(held_out_rows(result, name)), scored


@pytest.fixture(scope="module")
def re_derived(request: pytest.FixtureRequest):
    """The re-derivations the session's items select, `PARALLEL_FITS` processes at a time
    (each a fresh interpreter: ``spawn``); by profile name, a future of `re_derive`."""
    wanted = {
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "originalname", None)
        == "test_every_shipped_profile_is_re_derived_from_the_data"
    }
    context = multiprocessing.get_context("spawn")
    # A spawned child re-runs the parent's ``__main__`` by path; after Streamlit's AppTest
    # that is the dashboard script, which then runs in every child. The children start
    # inside `submit`, so a bare ``__main__`` while submitting keeps them clean.
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        with ProcessPoolExecutor(PARALLEL_FITS, mp_context=context) as pool:
            futures = {
                name: pool.submit(re_derive, name) for name in SHIPPED_PROFILES if name in wanted
            }
            sys.modules["__main__"] = main
            yield futures
    finally:
        sys.modules["__main__"] = main


@pytest.mark.parametrize("name", SHIPPED_PROFILES)
def test_every_shipped_profile_is_re_derived_from_the_data(
    name: str, re_derived: dict[str, Future]
) -> None:
    """data/runtimes/<name>.yaml is what its calibrated_from command produces (fit, refusals,
    intervals and the cross-validated accuracy block), value for value; and
    data/runtimes/held_out/<name>.csv (the Accuracy page's scatter) what the same command
    writes with ``--held-out``, row for row (rewrite: that command with ``--held-out
    data/runtimes/held_out/<name>.csv``)."""
    shipped = load_runtime(name)
    document, derived, scored = re_derived[name].result()
    assert runtime_from_dict(document) == shipped
    stored = read_held_out(shipped_held_out_path(name))
    assert len(stored) == len(derived) == scored > 0
    for got, want in zip(stored, derived, strict=True):
        assert (got.runtime, got.hardware, got.method) == (want.runtime, want.hardware, want.method)
        assert got.measured_s == want.measured_s
        # The held-out fits converge to scipy's least_squares tolerance, and numpy's AVX-512
        # and AVX2 kernels differ in the last bits: re-derived on an AVX-512 machine, the
        # llama.cpp folds' predictions moved by up to 1.7e-5 relative (vllm 2e-8); 1e-4 is
        # far below the 0.1 % the accuracy figures are quoted at.
        assert got.predicted_s == pytest.approx(want.predicted_s, rel=1e-4)


def test_held_out_files_round_trip_and_refuse_malformed_lines(tmp_path):
    rows = (
        HeldOutRow("vllm", "h100-sxm", "leave-one-hardware-out", 0.1 + 0.2, 1 / 3),
        HeldOutRow("vllm", "a100-sxm-40gb", "leave-one-hardware-out", 2.5e-3, 7e-3),
    )
    path = write_held_out(rows, tmp_path / "rows.csv")
    assert read_held_out(path) == rows  # repr floats read back bit for bit
    path.write_text(path.read_text() + "vllm,h100-sxm,5-fold,fast,0.2\n")
    with pytest.raises(InputError, match="line 4: expected 5 fields"):
        read_held_out(path)
    path.write_text("runtime,hw\n")
    with pytest.raises(InputError, match="header must be runtime,hardware,method"):
        read_held_out(path)
    # only the profiles codesign calibrate wrote ship one (ideal is physics alone)
    assert not shipped_held_out_path("ideal").exists()


def test_cli_calibrate_writes_only_where_told(tmp_path, capsys):
    rows = with_latencies(grid_rows(), TRUE, noise=0.02)
    measured = tmp_path / "runs.csv"
    write_measurements(rows, measured)
    out = tmp_path / "profiles" / "mine.yaml"
    args = ["calibrate", "--measurements", str(measured), "--runtime", "vllm", "--out", str(out)]
    assert main(args) == 2
    assert "--out folder does not exist" in capsys.readouterr().err
    out.parent.mkdir()
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "0 excluded (a mesh the model cannot split" in text and "95% interval" in text
    assert "out-of-sample (leave-one-hardware-out)" in text
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["mine.yaml", "runs.csv"]
    profile = load_runtime(out)
    assert profile.accuracy is not None and profile.accuracy.hardware == (
        "a100-sxm-40gb",
        "h100-sxm",
    )
    assert yaml.safe_load(out.read_text())["decode"]["memory_efficiency"][
        "calibrated_from"
    ].startswith("codesign calibrate --measurements")


def test_cli_predict_with_a_runtime_prints_and_returns_intervals(capsys):
    assert main(["predict", "--model", "llama-3-8b", "--hw", "h100-sxm", "--runtime", "vllm"]) == 0
    text = capsys.readouterr().out
    assert "80% interval" in text and "basis (TTFT)" in text and "basis (end-to-end)" in text
    assert "set-ups like the profile's calibration data" in text
    assert (
        main(
            ["predict", "--model", "llama-3-8b", "--hw", "h100-sxm", "--runtime", "vllm", "--json"]
        )
        == 0
    )
    summary = yaml.safe_load(capsys.readouterr().out)["summary"]
    interval = summary["intervals"]["tpot_s"]
    assert summary["runtime"] == "vllm" and interval["low"] <= summary["tpot_s"] <= interval["high"]
    # vLLM's rows measure inter-token latency 9 times: its interval says whose error it uses.
    assert interval["basis"].startswith("inter-token latency: 9 held-out rows < 20")
    assert summary["intervals"]["e2e_s"]["basis"].startswith("leave-one-hardware-out error")


def test_llama_cpp_formats_file_loads_with_sources():
    formats, sources = load_formats(data_dir() / "runtime_formats" / "llama.cpp.yaml")
    assert [fmt.name for fmt in formats] == ["F16", "Q4_0", "Q4_K_M", "Q8_0"]
    assert all("ggml" in sources[fmt.name] or "llama.cpp" in sources[fmt.name] for fmt in formats)


def test_rerunning_the_measurements_converter_reproduces_the_committed_file(rerun_converter):
    assert rerun_converter("convert_measurements.py") == CSV.read_bytes()


def test_a_format_no_row_moves_with_is_held_at_its_bound_not_refused(capsys, tmp_path):
    """Q4_0 rows measured 25% faster than streaming their weights at the peak bandwidth
    allows (as llama.cpp's quantised rows on consumer GPUs are, beside their F16 rows):
    the fit pushes the Q4_0 scale until scale x memory efficiency reaches its cap of 1,
    where no row moves with it, so it is held at its upper bound and reported and the
    rest fit (was: the whole calibration refused, "no measured row depends on ...")."""
    formats, _ = load_formats(data_dir() / "runtime_formats" / "llama.cpp.yaml")
    q4 = next(fmt for fmt in formats if fmt.name == "Q4_0")
    truth = dataclasses.replace(
        TRUE, weight_formats=(dataclasses.replace(q4, memory_efficiency_scale=2.0),)
    )
    base = [
        dataclasses.replace(row, runtime="llama.cpp", tp=1)
        for row in grid_rows(("rtx-4090", "rtx-3090"))
        if row.model != "llama-2-70b"
    ]
    f16 = with_latencies(base, truth, noise=0.01)
    quantised = [dataclasses.replace(row, weight_bits=q4.nominal_bits) for row in base]
    at_peak = decompose(quantised, formats).predict(truth)["batch_latency_s"]
    rows = f16 + [
        dataclasses.replace(row, batch_latency_s=float(0.75 * value))
        for row, value in zip(quantised, at_peak, strict=True)
    ]
    fit = fit_profile(decompose(rows, formats), "llama.cpp", formats)
    name = "Q4_0.memory_efficiency_scale"
    assert fit.values[name] == 2.0 and name in fit.capped and name not in fit.intervals
    assert "peak bandwidth" in fit.capped[name]
    measured = tmp_path / "runs.csv"
    write_measurements(rows, measured)
    args = ["calibrate", "--measurements", str(measured), "--runtime", "llama.cpp"]
    formats_file = str(data_dir() / "runtime_formats" / "llama.cpp.yaml")
    # 4 of the 48 rows run at 0.75 x peak bandwidth are faster than the efficiency-1
    # bound: excluded, so exit 1 (the profile is fitted on the other 44 and written).
    assert main([*args, "--formats", formats_file, "--out", str(tmp_path / "p.yaml")]) == 1
    captured = capsys.readouterr()
    assert "4 of 48 rows excluded (4 batch latency faster" in captured.err
    out = captured.out
    assert f"{name} not fitted: no row's prediction moves with it" in out
    assert "none: held at its upper bound" in out
    written = yaml.safe_load((tmp_path / "p.yaml").read_text())
    scale = written["weight_formats"]["Q4_0"]["memory_efficiency_scale"]
    assert scale["value"] == 2.0 and "upper bound" in scale["calibrated_from"]
