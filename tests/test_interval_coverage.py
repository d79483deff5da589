"""benchmarks/interval_coverage.py: a measured value is inside, below or above its
prediction's 80% interval exactly as `calibration.prediction_interval` draws it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from calibration import Measurement, measured_metrics, prediction_interval
from genz import Parallelism, Scenario, load_model, load_runtime, predict
from roofline import load_platform

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from interval_coverage import coverage_records, table  # noqa: E402


def run(latency: float | None = None, throughput: float | None = None) -> Measurement:
    return Measurement(
        "llama-3-8b",
        "h100-sxm",
        "tensorrt-llm",
        8,
        512,
        64,
        batch_latency_s=latency,
        throughput_tok_s=throughput,
    )


def test_verdicts_follow_the_interval_of_the_prediction():
    profile = load_runtime("tensorrt-llm")
    scenario = Scenario(batch=8, input_tokens=512, output_tokens=64, parallelism=Parallelism())
    e2e = predict(load_model("llama-3-8b"), load_platform("h100-sxm"), scenario, runtime=profile)
    unit = prediction_interval(1.0, profile, load_platform("h100-sxm"))
    assert unit.low is not None and unit.high is not None and unit.low < 1 < unit.high
    rows = [
        run(e2e.e2e_s),  # the prediction itself: inside
        run(e2e.e2e_s * unit.high * 1.01),  # measured slower than the interval: above
        run(e2e.e2e_s * unit.low * 0.99),  # measured faster: below
        run(throughput=8 * 64 / (e2e.e2e_s * unit.high * 1.01)),  # from throughput: above
    ]
    verdicts = [r["verdict"] for r in coverage_records(rows, profile, "test")]
    assert verdicts == ["inside", "above", "below", "above"]
    frame = table(coverage_records(rows, profile, "test"))
    line = frame[frame.hw == "all"].iloc[0]
    assert (line["rows"], line["% inside"], line["% above"]) == (4, 25.0, 50.0)


def test_a_device_class_the_profile_never_measured_gets_no_interval():
    profile = load_runtime("tensorrt-llm")  # NVIDIA rows only
    row = Measurement("llama-3-8b", "mi250-gcd", "tensorrt-llm", 1, 128, 32, ttft_s=0.05)
    (record,) = coverage_records([row], profile, "test")
    assert record["verdict"] == "no interval" and record["metric"] == "TTFT"


def test_measured_batch_latency_comes_from_throughput_when_missing():
    times = measured_metrics([run(throughput=100.0), run(2.0)])
    assert times["batch_latency_s"].tolist() == pytest.approx([8 * 64 / 100.0, 2.0])
