"""Runtime profiles: strict loader, the ``ideal`` identity, the hook vs the fitting path,
stored bits, intervals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from calibration import Measurement, prediction_interval
from calibration.rows import decompose
from genz import (
    Precision,
    Scenario,
    evaluate_grid,
    list_runtimes,
    load_model,
    load_runtime,
    predict,
    runtime_from_dict,
)
from genz.ffn_ops import expected_experts_touched
from genz.runtime import (
    MIN_METRIC_ROWS,
    Accuracy,
    ClassAccuracy,
    MetricAccuracy,
    PhaseProfile,
    RuntimeProfile,
    WeightFormat,
)
from genz.runtime_cost import scaled_terms
from roofline import InputError, load_platform

SOURCE = {"source": "test"}


def phase(**values: float) -> dict[str, dict[str, object]]:
    base = {"compute_efficiency": 0.5, "memory_efficiency": 0.7, "step_overhead_s": 1e-3}
    return {key: {"value": value, **SOURCE} for key, value in {**base, **values}.items()}


def document(**extra: object) -> dict[str, object]:
    return {"name": "test", "prefill": phase(), "decode": phase(), **extra}


def test_every_shipped_profile_loads_and_ideal_is_empty():
    names = list_runtimes()
    assert {"ideal", "vllm", "tensorrt-llm", "llama.cpp", "deepspeed"} <= set(names)
    for name in names:
        assert load_runtime(name).name == name
    assert load_runtime("ideal").is_ideal


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"shedule": 1}, "unknown key 'shedule'"),
        ({"decode": {**phase(), "memory_eff": {"value": 1, **SOURCE}}}, "unknown key 'memory_eff'"),
        ({"decode": phase(memory_efficiency=1.5)}, "decode.memory_efficiency: value must be"),
        (
            {"decode": {**phase(), "step_overhead_s": {"value": 0.001}}},
            "needs 'source' or 'calibrated_from'",
        ),
        (
            {"decode": {"compute_efficiency": {"value": 0.5, **SOURCE}}},
            "missing 'memory_efficiency'",
        ),
        ({"device_classes": {"nvidia-gpu": {"decod": phase()}}}, "unknown key 'decod'"),
    ],
)
def test_loader_names_the_offending_field(change, message):
    with pytest.raises(InputError, match=message):
        runtime_from_dict({**document(), **change}, origin="t.yaml")


def test_loader_needs_both_phases_and_reads_a_file(tmp_path):
    with pytest.raises(InputError, match="decode missing"):
        runtime_from_dict({"name": "x", "prefill": phase()})
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(document()), encoding="utf-8")
    assert load_runtime(path).phases["decode"].memory_efficiency == 0.7
    with pytest.raises(InputError, match="unknown runtime 'nope'"):
        load_runtime("nope")


def test_ideal_reproduces_todays_numbers_exactly():
    model, platform = load_model("llama-3-8b"), load_platform("h100-sxm")
    ideal = load_runtime("ideal")
    scenario = Scenario(batch=8, input_tokens=512, output_tokens=64)
    assert predict(model, platform, scenario, runtime=ideal) == predict(model, platform, scenario)
    axes = {"batch": np.array([1, 16, 64]), "tp": np.array([1, 2, 4])}
    with_ideal = evaluate_grid(model, platform, **axes, runtime=ideal)
    plain = evaluate_grid(model, platform, **axes)
    for field in dataclasses.fields(plain):
        if field.name != "bound_order":
            np.testing.assert_array_equal(
                getattr(with_ideal, field.name), getattr(plain, field.name)
            )


def test_hook_and_fitting_path_agree_row_by_row():
    """`predict(..., runtime=)` and the decomposed rows calibration fits give equal times."""
    profile = dataclasses.replace(
        load_runtime("tensorrt-llm"),
        device_classes={"amd-gpu": {"decode": PhaseProfile(0.3, 0.4, 2e-3, 1e-5)}},
        class_all_reduce_latency_s={"amd-gpu": 4e-5},
    )
    rows = [
        Measurement("llama-3-8b", "h100-sxm", "tensorrt-llm", 16, 512, 128, batch_latency_s=1.0),
        Measurement(
            "llama-2-70b", "a100-sxm-40gb", "tensorrt-llm", 4, 128, 64, tp=4, batch_latency_s=1.0
        ),
        Measurement(
            "mixtral-8x7b", "mi250-gcd", "tensorrt-llm", 32, 1024, 32, tp=2, batch_latency_s=1.0
        ),
        Measurement(
            "llama-2-7b",
            "mi250-gcd",
            "tensorrt-llm",
            1,
            256,
            256,
            pp=2,
            prefill_chunk=16,
            batch_latency_s=1.0,
        ),
    ]
    fast = decompose(rows).predict(profile)
    for index, row in enumerate(rows):
        scenario = Scenario(
            batch=row.batch,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            parallelism=dataclasses.replace(Scenario().parallelism, tp=row.tp, pp=row.pp),
            prefill_chunk=row.prefill_chunk,
        )
        slow = predict(load_model(row.model), load_platform(row.hw), scenario, runtime=profile)
        assert slow.ttft_s == pytest.approx(fast["ttft_s"][index], rel=1e-12)
        assert slow.tpot_s == pytest.approx(fast["itl_s"][index], rel=1e-12)
        assert slow.e2e_s == pytest.approx(fast["batch_latency_s"][index], rel=1e-12)


def test_profile_changes_efficiency_and_adds_one_step_operator():
    model, platform = load_model("llama-3-8b"), load_platform("h100-sxm")
    slow = runtime_from_dict(document(decode=phase(memory_efficiency=0.35)))
    fast = runtime_from_dict(document())
    scenario = Scenario(batch=1)
    slow_tpot = predict(model, platform, scenario, runtime=slow).tpot_s
    fast_prediction = predict(model, platform, scenario, runtime=fast)
    step = [op for op in fast_prediction.decode.operators if op.name == "runtime_step"]
    assert [op.time_s for op in step] == [pytest.approx(1e-3)]
    # Memory-bound batch-1 decode: half the bandwidth fraction roughly doubles the rest.
    assert (slow_tpot - 1e-3) == pytest.approx(2 * (fast_prediction.tpot_s - 1e-3), rel=0.02)


def test_stored_bits_of_a_format_reach_the_weight_bytes():
    model, platform = load_model("llama-2-7b"), load_platform("rtx-4090")
    llama = load_runtime("llama.cpp")
    q4km = llama.format_for_bits(4.85)
    assert q4km is not None and q4km.lm_head_bits > q4km.stored_bits
    scenario = Scenario(precision=Precision(weight_bits=4.85))
    stored = predict(model, platform, scenario, runtime=llama).footprint.weights_bytes
    plain = predict(model, platform, scenario).footprint.weights_bytes
    assert stored > plain  # output.weight at Q6_K costs more than 4.85 bits
    unlisted = Scenario(precision=Precision(weight_bits=3.0))
    assert (
        predict(model, platform, unlisted, runtime=llama).footprint.weights_bytes
        == predict(model, platform, unlisted).footprint.weights_bytes
    )


def _with_accuracy(low: float, high: float, hardware=("h100-sxm", "l4")) -> RuntimeProfile:
    quantiles = {0.1: low, 0.5: 1.0, 0.9: high}
    accuracy = Accuracy(
        method="leave-one-hardware-out",
        hardware=(*hardware, "mi250-gcd"),
        rows=20,
        ratio_quantiles={0.1: 0.5, 0.5: 1.0, 0.9: 3.0},
        classes={
            "nvidia-gpu": ClassAccuracy(hardware, 10, quantiles, quantiles),
            "amd-gpu": ClassAccuracy(
                ("mi250-gcd",), 10, {0.1: 0.5, 0.9: 2.0}, {0.1: 0.8, 0.9: 1.3}
            ),
        },
        calibrated_from="test",
    )
    return dataclasses.replace(runtime_from_dict(document()), accuracy=accuracy)


def test_intervals_contain_the_estimate_and_widen_with_the_error():
    platform = load_platform("a100-sxm-40gb")
    narrow = prediction_interval(0.01, _with_accuracy(0.9, 1.1), platform)
    wide = prediction_interval(0.01, _with_accuracy(0.7, 1.5), platform)
    skewed = prediction_interval(0.01, _with_accuracy(1.05, 1.3), platform)
    for interval in (narrow, wide, skewed):
        assert interval.low is not None and interval.high is not None
        assert interval.low <= 0.01 <= interval.high
    assert wide.low < narrow.low and wide.high > narrow.high
    rate = prediction_interval(100.0, _with_accuracy(0.8, 1.25), platform, rate=True)
    assert (rate.low, rate.high) == pytest.approx((80.0, 125.0))
    assert "not measured" in narrow.basis and "nvidia-gpu (h100-sxm, l4" in narrow.basis
    # The one measured device of its class: its in-sample error, labelled.
    lone = prediction_interval(0.01, _with_accuracy(0.9, 1.1), load_platform("mi250-gcd"))
    assert (lone.low, lone.high) == pytest.approx((0.008, 0.013))
    assert lone.basis.startswith("IN-SAMPLE")
    # Another device of that class: as unknown as a new class, all rows' error.
    other = prediction_interval(0.01, _with_accuracy(0.9, 1.1), load_platform("mi300x"))
    assert (other.low, other.high) == pytest.approx((0.005, 0.03))
    assert "measured on one amd-gpu device only" in other.basis


def test_a_device_class_never_measured_gets_no_interval():
    outside = prediction_interval(0.01, _with_accuracy(0.9, 1.1), load_platform("apple-m2-max-30c"))
    assert outside.low is None and "outside anything measured" in outside.basis
    bare = prediction_interval(0.01, runtime_from_dict(document()), load_platform("h100-sxm"))
    assert bare.low is None and "no cross-validated error" in bare.basis


def _with_metrics(ttft_rows: int, itl_rows: int) -> RuntimeProfile:
    """`_with_accuracy(0.9, 1.1)` plus TTFT and inter-token-latency errors of their own."""
    base = _with_accuracy(0.9, 1.1)
    assert base.accuracy is not None
    ttft = {0.1: 0.6, 0.5: 1.0, 0.9: 1.5}
    metrics = {
        "ttft_s": MetricAccuracy(
            ttft_rows,
            {0.1: 0.5, 0.5: 1.0, 0.9: 2.0},
            {
                "nvidia-gpu": ClassAccuracy(("h100-sxm", "l4"), ttft_rows, ttft, ttft),
                "apple-soc": ClassAccuracy(("apple-m1-7c", "apple-m2-ultra"), 30, ttft, ttft),
            },
        ),
        "itl_s": MetricAccuracy(itl_rows, {0.1: 0.7, 0.9: 1.4}, {}),
    }
    return dataclasses.replace(base, accuracy=dataclasses.replace(base.accuracy, metrics=metrics))


def test_ttft_and_tpot_intervals_come_from_their_own_held_out_errors():
    platform = load_platform("a100-sxm-40gb")
    profile = _with_metrics(ttft_rows=MIN_METRIC_ROWS, itl_rows=MIN_METRIC_ROWS - 1)
    ttft = prediction_interval(0.1, profile, platform, metric="ttft_s")
    assert (ttft.low, ttft.high) == pytest.approx((0.06, 0.15))
    assert "error of test TTFT on nvidia-gpu" in ttft.basis
    # Too few inter-token-latency rows: the batch-latency quantiles, labelled.
    tpot = prediction_interval(0.01, profile, platform, metric="itl_s")
    assert (tpot.low, tpot.high) == pytest.approx((0.009, 0.011))
    assert tpot.basis.startswith(f"inter-token latency: {MIN_METRIC_ROWS - 1} held-out rows <")
    # A class with too few TTFT rows of its own: the metric's error over all rows.
    thin = _with_metrics(ttft_rows=MIN_METRIC_ROWS, itl_rows=1)
    assert thin.accuracy is not None
    lone = prediction_interval(0.1, thin, load_platform("mi250-gcd"), metric="ttft_s")
    assert (lone.low, lone.high) == pytest.approx((0.05, 0.2))
    assert "TTFT over all its classes" in lone.basis and "amd-gpu: 0 rows" in lone.basis
    batch = prediction_interval(0.01, profile, platform)
    assert (batch.low, batch.high) == pytest.approx((0.009, 0.011))
    # TTFT measured on a class whose batch latency never was: TTFT has an interval.
    apple = load_platform("apple-m2-max-30c")
    assert prediction_interval(0.1, profile, apple, metric="ttft_s").low == pytest.approx(0.06)
    outside = prediction_interval(0.1, profile, apple)
    assert outside.low is None and outside.basis.endswith("not apple-soc (batch latency)")


def test_accuracy_metrics_are_read_from_a_profile_and_checked():
    quantiles = {"0.1": 0.8, "0.9": 1.2}
    group = {"hardware": ["h100-sxm"], "rows": 3, "ratio_quantiles": quantiles}
    accuracy = {
        "method": "5-fold",
        "hardware": ["h100-sxm"],
        "rows": 30,
        "ratio_quantiles": quantiles,
        "device_classes": {"nvidia-gpu": {**group, "in_sample_ratio_quantiles": quantiles}},
        "calibrated_from": "test",
        "metrics": {"ttft_s": {"rows": 3, "ratio_quantiles": quantiles, "device_classes": {}}},
    }
    profile = runtime_from_dict(document(accuracy=accuracy))
    assert profile.accuracy is not None and profile.accuracy.metrics["ttft_s"].rows == 3
    wrong = {**accuracy, "metrics": {"tpot": accuracy["metrics"]["ttft_s"]}}
    with pytest.raises(InputError, match=r"metrics\.tpot: unknown metric; accepted: ttft_s, itl_s"):
        runtime_from_dict(document(accuracy=wrong))
    empty = {**accuracy, "metrics": {"itl_s": {**accuracy["metrics"]["ttft_s"], "rows": 0}}}
    with pytest.raises(InputError, match=r"metrics\.itl_s\.rows: must be a whole number >= 1"):
        runtime_from_dict(document(accuracy=empty))


def test_experts_touched_follow_the_routing_independence():
    """8 experts, top 2, 16 tokens: uniform 8 (1 - 0.75^16); all alike: the top 2;
    half independent: 8.5 tokens."""
    assert expected_experts_touched(8, 2, 16.0) == pytest.approx(8 * (1 - 0.75**16))
    assert expected_experts_touched(8, 2, 16.0, 0.0) == pytest.approx(2.0)
    assert expected_experts_touched(8, 2, 16.0, 0.5) == pytest.approx(8 * (1 - 0.75**8.5))
    assert expected_experts_touched(8, 2, 1.0, 0.3) == pytest.approx(2.0)


def test_routing_independence_zero_streams_only_the_top_k_experts_per_step():
    """Mixtral decode at batch 16 with every sequence routed alike streams the expert
    weights of 2 experts per layer instead of 8 (1 - 0.75^16); independence 1 is the
    physics' uniform routing."""
    model, platform = load_model("mixtral-8x7b"), load_platform("h100-sxm")

    def expert_bytes(routing: float | None) -> float:
        profile = None
        if routing is not None:
            profile = runtime_from_dict(document(decode=phase(routing_independence=routing)))
        prediction = predict(model, platform, Scenario(batch=16), runtime=profile)
        return next(op.bytes for op in prediction.decode.operators if op.name == "routed_experts")

    per_expert = 3 * model.hidden_size * model.moe_intermediate_size * 16 / 8  # one layer
    assert expert_bytes(1.0) == expert_bytes(None)
    assert expert_bytes(None) - expert_bytes(0.0) == pytest.approx(
        (expected_experts_touched(8, 2, 16.0) - 2) * per_expert * model.num_moe_layers,
        rel=1e-12,
    )
    with pytest.raises(
        InputError, match=r"routing_independence: value must be a number in \[0, 1\]"
    ):
        runtime_from_dict(document(decode=phase(routing_independence=1.5)))


def test_weight_format_needs_its_bits():
    with pytest.raises(InputError, match="missing 'stored_bits'"):
        runtime_from_dict(
            document(weight_formats={"Q4_0": {"nominal_bits": {"value": 4.5, **SOURCE}}})
        )
    assert WeightFormat("F16", 16, 16, 16, 16).memory_efficiency_scale == 1.0


def test_format_scale_never_streams_faster_than_peak() -> None:
    """Memory fraction = phase efficiency x format scale, capped at 1 (hand values)."""
    fraction_of = (0.5, 0.8)  # compute, memory efficiency
    compute, memory = np.array([1.0]), np.array([2.0])
    assert scaled_terms(compute, memory, *fraction_of, 1.0)[1] == pytest.approx([2.5])  # 2 / 0.8
    assert scaled_terms(compute, memory, *fraction_of, 1.1)[1] == pytest.approx([2 / 0.88])
    # 0.8 x 2 = 1.6 > 1: the peak bandwidth itself, never 2 / 1.6
    assert scaled_terms(compute, memory, *fraction_of, 2.0)[1] == pytest.approx([2.0])
    assert scaled_terms(compute, memory, *fraction_of, np.array([1.0, 2.0]))[1] == pytest.approx(
        [2.5, 2.0]
    )
    assert scaled_terms(compute, memory, *fraction_of, 2.0)[0] == pytest.approx([2.0])  # 1 / 0.5


def test_held_out_mape_is_read_and_checked():
    quantiles = {"0.1": 0.8, "0.9": 1.2}
    accuracy = {
        "method": "leave-one-source-out",
        "hardware": ["h100-sxm"],
        "rows": 30,
        "ratio_quantiles": quantiles,
        "device_classes": {},
        "calibrated_from": "test",
        "held_out_mape": {"itl_s": {"profile": 20.5, "ideal": 24.8, "sources": 20, "rows": 300}},
    }
    profile = runtime_from_dict(document(accuracy=accuracy))
    assert profile.accuracy is not None
    assert profile.accuracy.held_out_mape["itl_s"].ideal == 24.8
    for bad, message in (
        ({"tpot": accuracy["held_out_mape"]["itl_s"]}, r"held_out_mape\.tpot: unknown metric"),
        ({"itl_s": {"profile": 1.0}}, r"held_out_mape\.itl_s: missing 'ideal'"),
        (
            {"itl_s": {**accuracy["held_out_mape"]["itl_s"], "ideal": float("nan")}},
            r"held_out_mape\.itl_s\.ideal: must be a percentage >= 0",
        ),
    ):
        with pytest.raises(InputError, match=message):
            runtime_from_dict(document(accuracy={**accuracy, "held_out_mape": bad}))


def test_a_formats_compute_scale_applies_on_its_device_only_and_is_capped() -> None:
    """Compute fraction = phase efficiency x the format's compute scale, capped at 1 (hand
    values); a device's override applies on that preset, elsewhere the format's own (1)."""
    compute, memory = np.array([1.0]), np.array([2.0])
    assert scaled_terms(compute, memory, 0.5, 0.8, 1.0, np.asarray(0.5))[0] == pytest.approx([4.0])
    assert scaled_terms(compute, memory, 0.5, 0.8, 1.0, np.asarray(3.0))[0] == pytest.approx([1.0])
    from genz.inputs import scenario_inputs
    from genz.resolved import resolve

    fmt = {key: {"value": 4.5, **SOURCE} for key in ("stored_bits", "embedding_bits")}
    entry = {"nominal_bits": {"value": 4.0, **SOURCE}, "lm_head_bits": {"value": 6, **SOURCE}}
    device = {
        "prefill": phase(),
        "decode": phase(),
        "weight_formats": {"Q4_0": {"compute_efficiency_scale": {"value": 0.6, **SOURCE}}},
    }
    profile = runtime_from_dict(
        document(weight_formats={"Q4_0": {**fmt, **entry}}, devices={"h100-sxm": device})
    )
    four = scenario_inputs(Scenario(precision=Precision(weight_bits=4.0)))
    sixteen = scenario_inputs(Scenario())
    h100, a100 = load_platform("h100-sxm"), load_platform("a100-sxm-80gb")
    assert float(np.asarray(resolve(h100, profile, four).compute_scale)[0]) == 0.6
    assert float(np.asarray(resolve(h100, profile, sixteen).compute_scale)[0]) == 1.0
    assert resolve(a100, profile, four).compute_scale is None
    plain = dataclasses.replace(
        profile,
        devices={
            "h100-sxm": dataclasses.replace(profile.devices["h100-sxm"], compute_format_scales={})
        },
    )
    model, long_prompt = (
        load_model("llama-2-7b"),
        Scenario(input_tokens=4096, precision=Precision(weight_bits=4)),
    )
    ratio = (
        predict(model, h100, long_prompt, runtime=profile).ttft_s
        / predict(model, h100, long_prompt, runtime=plain).ttft_s
    )
    # a compute-bound prefill slows by up to 1 / 0.6 (memory-bound operators and the step
    # cost do not)
    assert 1.3 < ratio <= 1 / 0.6 + 1e-12
