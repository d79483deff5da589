"""Serving-stack costs per version family (calibration.serving_costs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import load_script

from calibration.serving_costs import (
    MIN_ROWS,
    Residual,
    Stack,
    adapt_profile,
    family_table,
    fit_costs,
    gemm_scale,
    held_out_costs,
    newer,
    profile_stack,
    served,
    stack_of,
)
from genz import load_runtime
from roofline import InputError, load_platform


def test_stack_of_reads_engine_and_release_year() -> None:
    assert stack_of("TensorRT-LLM v1.0 (PyTorch backend)") == Stack("tensorrt-llm", "1.x", 2025)
    assert stack_of("TensorRT-LLM v0.5.0 (TensorRT 9.1)") == Stack("tensorrt-llm", "0.5", 2023)
    assert stack_of("NIM (TensorRT-LLM backend)").family == "0.9-0.11"
    assert stack_of("vLLM 0.4.1 (defaults)") == Stack("vllm", "0.4-0.5", 2024)
    assert stack_of("vLLM v0.6.0 (--num-scheduler-steps 10)").family == "0.6"
    assert stack_of("vLLM 0.19.1").family == "V1 (0.7+)"
    assert stack_of("SGLang v0.3.0").engine == "sglang"
    assert stack_of("vLLM 0.10.1.1 (V1 engine)").family == "V1 (0.7+)"
    assert stack_of("LMDeploy v0.2.0 (TurboMind)").family == "0.1-0.3"
    assert stack_of("LMDeploy 0.4.0 (TurboMind)").family == "0.4-0.6"
    with pytest.raises(InputError, match="no version family"):
        stack_of("my engine 1.0")


def test_only_a_later_family_drops_the_profiles_sequence_cost() -> None:
    vllm = load_runtime("vllm")
    assert profile_stack(vllm) == Stack("vllm", "0.4-0.5", 2024)
    assert newer(vllm, stack_of("vLLM 0.19.1"))
    assert newer(vllm, stack_of("vLLM v0.6.0"))
    assert not newer(vllm, stack_of("vLLM 0.4.1"))
    trt = load_runtime("tensorrt-llm")
    assert not newer(trt, stack_of("TensorRT-LLM v0.5.0"))  # older keeps the profile's
    assert newer(trt, stack_of("TensorRT-LLM v1.0"))
    assert not newer(load_runtime("ideal"), stack_of("vLLM 0.19.1"))  # unknown family


def _r(source: str, metric: str, diff: float, n: float, stack: Stack | None = None) -> Residual:
    return Residual(source, stack or Stack("vllm", "0.4-0.5", 2024), metric, diff, n)


def test_fit_costs_takes_medians_at_low_load_and_per_sequence() -> None:
    rows = [_r("a", "ttft", d, 1.0) for d in (0.010, 0.020, 0.030)]
    rows.append(_r("a", "ttft", 5.0, 40.0))  # queueing: not at low load
    rows.append(Residual("a", Stack("vllm", "0.4-0.5", 2024), "ttft", 0.020, 40.0, 0.05))
    rows += [_r("a", "tpot", 0.001 * n, n) for n in (1.0, 10.0, 100.0)]
    request, chunk, n_ttft, n_tpot = fit_costs(rows)
    assert request == pytest.approx(0.020)
    assert chunk == pytest.approx(0.001)
    assert (n_ttft, n_tpot) == (4, 3)  # the busy row that hardly queues counts
    assert fit_costs([_r("a", "ttft", -0.5, 1.0)])[:2] == (0.0, 0.0)  # clipped, none
    physics = Residual("a", Stack("mlc", "2024", 2024), "tpot", 0.5, 1.0, profiled=False)
    assert fit_costs([physics])[1:4:2] == (0.0, 0)  # ideal rows fit no chunk cost


def test_only_served_rows_pay_the_front_end() -> None:
    assert served("vLLM v0.6.0 (--num-scheduler-steps 10)", "offline")  # QPS inf, HTTP
    assert served("NIM (TensorRT-LLM backend); GenAI-Perf", "closed")
    assert not served("TensorRT-LLM v1.0 (PyTorch backend, trtllm-bench throughput)", "offline")
    assert not served("TensorRT-LLM v0.5.0", "static")
    assert not served("LMDeploy v0.2.0 (TurboMind, in-process profile_throughput.py)", "closed")


def test_held_out_costs_never_use_the_source_and_fall_back() -> None:
    mine = Stack("vllm", "V1 (0.7+)", 2025)
    rows = [_r("own", "ttft", 1.0, 1.0, mine) for _ in range(10)]
    rows += [_r("other", "ttft", 0.004, 1.0, mine) for _ in range(MIN_ROWS)]
    rows += [_r("old", "tpot", 0.002, 1.0) for _ in range(MIN_ROWS)]
    rows += [_r("few", "tpot", 9.0, 1.0, mine) for _ in range(MIN_ROWS - 1)]
    rows += [_r("trt", "tpot", 5.0, 1.0, Stack("tensorrt-llm", "1.x", 2025))] * MIN_ROWS
    rows += [_r("old", "ttft", 0.5, 1.0) for _ in range(MIN_ROWS)]
    costs = held_out_costs(rows, "own", mine, chunk_bases=1)
    assert costs.request_s == pytest.approx(0.004)  # the family's other source
    assert costs.chunk_s == 0.0  # too few in the family; not an older line's
    assert costs.basis == "request: family, chunk: none"
    wider = held_out_costs(rows, "own", mine)  # default: else the engine's other lines
    assert (wider.chunk_s, wider.basis) == (pytest.approx(0.002), "request: family, chunk: engine")
    other = held_out_costs(rows, "other", mine)  # the family has only "own" then
    assert other.request_s == pytest.approx(1.0)
    alone = held_out_costs(rows[10:], "other", mine)
    assert (alone.request_s, alone.chunk_s) == (pytest.approx(0.5), pytest.approx(0.002))
    assert alone.basis == "request: engine, chunk: engine"
    old = Stack("vllm", "0.4-0.5", 2024)
    assert held_out_costs(rows, "old", old).chunk_s == 0.0  # 4 engine rows: too few
    assert held_out_costs(rows, "old", old).request_s == pytest.approx(1.0)
    with pytest.raises(InputError, match="chunk_bases"):
        held_out_costs(rows, "old", old, chunk_bases=3)  # never another engine's
    empty = held_out_costs(rows[:10], "own", mine)
    assert (empty.request_s, empty.chunk_s, empty.basis) == (0.0, 0.0, "request: none, chunk: none")
    assert family_table(rows)[mine].ttft_rows == 10 + MIN_ROWS
    assert family_table(rows)[mine].request_s == pytest.approx(1.0)


def test_gemm_scale_is_the_cited_fraction_over_the_fitted_devices_mean() -> None:
    trt = load_runtime("tensorrt-llm")  # fitted on a100-sxm-40gb, a100-sxm-80gb, h100-sxm
    a100_40, h100 = 271.2 / 312, 794.5 / 989  # mamf-finder BF16 rows
    a100_80 = (256.5 / 312 + 271.2 / 312) / 2  # cuBLASLt FP16 and mamf-finder BF16
    reference = (a100_40 + a100_80 + h100) / 3
    assert gemm_scale(trt, "h100-sxm", 16.0) == pytest.approx(h100 / reference)
    assert gemm_scale(trt, "a100-sxm-80gb", 16.0) == pytest.approx(a100_80 / reference)
    fp8 = 1402.6 / 1979
    assert gemm_scale(trt, "h100-sxm", 8.0) == pytest.approx(fp8 / ((a100_40 + a100_80 + fp8) / 3))
    assert gemm_scale(trt, "l40s", 16.0) == 1.0  # no cited rate
    b200 = 3432.5 / 4500  # FP4 rows take the FP8 fraction
    assert gemm_scale(trt, "b200", 4.0) == pytest.approx(b200 / ((a100_40 + a100_80 + fp8) / 3))


def test_adapt_profile_changes_one_preset_only() -> None:
    trt = load_runtime("tensorrt-llm")
    h100, a100 = load_platform("h100-sxm"), load_platform("a100-sxm-80gb")
    assert adapt_profile(trt, h100) is trt
    adapted = adapt_profile(trt, h100, 0.5, sequence_overhead_s=0.0)
    for phase in ("prefill", "decode"):
        old, new = trt.phase(phase, h100), adapted.phase(phase, h100)
        assert new.compute_efficiency == pytest.approx(0.5 * old.compute_efficiency)
        assert new.memory_efficiency == old.memory_efficiency
        assert new.step_overhead_s == old.step_overhead_s
        assert new.sequence_overhead_s == 0.0
        assert adapted.phase(phase, a100) == trt.phase(phase, a100)
    capped = adapt_profile(trt, h100, 10.0)
    assert capped.phase("prefill", h100).compute_efficiency == 1.0


BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "serving_validate.py"


@pytest.fixture(scope="module")
def bench():
    yield load_script(BENCH)
    sys.modules.pop(BENCH.stem, None)


def test_a_later_family_and_a_chunk_cost_change_the_simulated_tpot(bench) -> None:
    setup = dict.fromkeys(bench.SETUP, "")
    setup |= {
        "model": "llama-3-8b",
        "hardware": "h100-sxm",
        "tp": "1",
        "weight_bits": "16",
        "activation_bits": "16",
        "kv_bits": "16",
        "profile": "vllm",
        "scenario": "closed",
        "requests": "12",
        "lengths": "fixed",
        "input_tokens": "128",
        "output_tokens": "16",
        "policy": "continuous",
        "max_sequences": "256",
        "max_batched_tokens": "8192",
        "memory_utilization": "0.9",
        "concurrency": "2",
    }
    tpot = bench.Measurement("tpot_ms", "mean", 1.0, 0.0, "", "", "")
    rules = bench.StackRules(families=True)

    def simulated(runtime: str, **options: object) -> dict[str, object]:
        row = setup | {"runtime": runtime}
        return bench.score_setup("f.csv", row, [tpot], bench.Options(**options))[0]

    old = simulated("vLLM 0.4.1", stack_rules=rules)
    assert old == simulated("vLLM 0.4.1")  # the profile's own family: unchanged
    assert 1.5 <= float(old["in_flight"]) <= 2.0  # Little's law: two clients
    new = simulated("vLLM 0.19.1", stack_rules=rules)
    sequence_s = load_runtime("vllm").phase("decode", load_platform("h100-sxm")).sequence_overhead_s
    drop_ms = (float(old["simulated"]) - float(new["simulated"])) / (2 * sequence_s * 1e3)
    assert drop_ms == pytest.approx(1.0, rel=0.2)  # two sequences' host cost per step gone
    charged = simulated("vLLM 0.19.1", stack_rules=rules, chunk_overhead_s=1e-3)
    added = float(charged["simulated"]) - float(new["simulated"])
    assert added == pytest.approx(2.0, rel=0.2)  # 1 ms per sequence, two in each step
