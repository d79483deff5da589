"""data/validation/published_runs.csv: published static-batch runs (MLC, vLLM, TensorRT-LLM,
MLX) transcribed from their sources, converted to the measurement schema."""

import dataclasses
import sys
from pathlib import Path

import pytest

from calibration import load_measurements
from genz import Parallelism, Precision, Scenario, list_runtimes, load_model, load_runtime, predict
from roofline import InputError, data_dir, load_platform

CSV = data_dir() / "validation" / "published_runs.csv"
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_rerunning_the_converter_reproduces_the_committed_file(rerun_converter):
    assert rerun_converter("convert_published_runs.py") == CSV.read_bytes()


def test_every_row_loads_names_existing_presets_and_a_dated_source():
    rows = load_measurements(CSV)
    assert len(rows) == 42
    for row in rows:
        load_model(row.model)
        load_platform(row.hw)
        assert (
            row.source.startswith("published_runs_source.csv:") and "read 2026-12-03" in row.source
        )
    assert {row.runtime for row in rows} == {"mlc", "vllm", "tensorrt-llm", "mlx"}


def test_published_figures_map_to_schema_columns_by_the_documented_formulas():
    rows = load_measurements(CSV)
    # MLC decode 204.8 tok/s at batch 1 -> ITL 1 / 204.8 s
    assert rows[0].itl_s == pytest.approx(1 / 204.8)
    # vLLM benchmark_latency 15.27 tok/s for 256 output tokens -> 256 / 15.27 s per request
    vllm = next(row for row in rows if row.runtime == "vllm")
    assert vllm.batch_latency_s == pytest.approx(256 / 15.27) and vllm.tp == 2
    # TensorRT-LLM 2,657 tok/s per GPU on tp 2 -> 5,314 tok/s in all
    trt = next(row for row in rows if row.runtime == "tensorrt-llm")
    assert trt.throughput_tok_s == pytest.approx(2 * 2657) and trt.weight_bits == 8
    # MLX prompt of 16 tokens at 27.8 tok/s -> TTFT 16 / 27.8 s
    mlx = next(row for row in rows if row.runtime == "mlx" and row.ttft_s is not None)
    assert mlx.ttft_s == pytest.approx(16 / 27.8)


@pytest.mark.parametrize("name", ["mlc", "sglang", "mlx"])
def test_runtimes_without_a_shipped_profile_say_how_to_calibrate_one(name):
    with pytest.raises(
        InputError, match=f"runtime .{name}.: no calibrated profile ships.*--runtime {name} --out"
    ):
        load_runtime(name)


def test_external_rows_tune_no_shipped_profile():
    """published_runs.csv is the external test set: no shipped profile is calibrated on it."""
    for name in list_runtimes():
        profile = load_runtime(name)
        if profile.accuracy is not None:
            assert "published_runs" not in profile.accuracy.calibrated_from, name


def test_external_errors_are_the_shipped_profiles_predictions():
    """external_accuracy scores a row with the shipped profile as predict() does."""
    sys.path.insert(0, str(BENCHMARKS))
    from external_accuracy import external_frame

    frame = external_frame()
    row = next(r for r in load_measurements(CSV) if r.runtime == "vllm" and r.batch_latency_s)
    scored = frame[(frame.source == row.source) & (frame.metric == "batch latency")]
    prediction = predict(
        load_model(row.model),
        load_platform(row.hw),
        Scenario(
            batch=row.batch,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            parallelism=Parallelism(tp=row.tp, pp=row.pp),
            precision=Precision(
                weight_bits=row.weight_bits,
                activation_bits=row.activation_bits,
                kv_bits=row.kv_bits,
            ),
        ),
        runtime=load_runtime("vllm"),
    )
    expected = 100 * (prediction.e2e_s - row.batch_latency_s) / row.batch_latency_s
    assert scored.held_out_pct.iloc[0] == pytest.approx(expected, rel=1e-6)
    # the row's device class (nvidia-gpu) has its own fit in the vLLM profile: the
    # default fit beside it is the profile without class overrides, as predict() gives
    default = dataclasses.replace(
        load_runtime("vllm"), device_classes={}, class_all_reduce_latency_s={}, class_kv_scales={}
    )
    by_default = predict(
        load_model(row.model), load_platform(row.hw), prediction.scenario, runtime=default
    )
    expected_default = 100 * (by_default.e2e_s - row.batch_latency_s) / row.batch_latency_s
    assert scored.default_fit_pct.iloc[0] == pytest.approx(expected_default, rel=1e-6)
    assert expected_default != pytest.approx(expected, rel=1e-3)
    # device_class_runs.csv rows of a runtime whose calibration does not read that file
    # (vLLM on MI300X) are external too; llama.cpp's, a calibration input, are not
    second = frame[frame.file == "data/validation/device_class_runs.csv"]
    assert set(second.runtime) == {"vllm"} and set(second.hw) == {"mi300x"}
    # runtimes without a shipped profile are scored by the physics only
    assert frame[frame.runtime == "mlc"].held_out_pct.isna().all()
