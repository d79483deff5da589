"""Serving validation data (data/validation/serving/) and the benchmark that scores it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import load_script

from genz import load_model, load_runtime
from roofline import InputError, load_platform
from search.serving import SHAREGPT_FILTER, sharegpt_lengths

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "serving_validate.py"


@pytest.fixture(scope="module")
def bench():
    yield load_script(BENCH)
    sys.modules.pop(BENCH.stem, None)


def test_every_row_loads_with_existing_presets(bench) -> None:
    files = bench.load_rows()
    assert {"sglang_vllm060_sharegpt.csv", "trtllm_perf_overview_v1.csv"} <= set(files)
    names: dict[str, set[str]] = {"model": set(), "hardware": set(), "profile": set()}
    for setups in files.values():
        for key, measurements in setups.items():
            setup = dict(zip(bench.SETUP, key, strict=True))
            for field, seen in names.items():
                seen.add(setup[field])
            assert setup["scenario"] != "rate" or float(setup["rate_per_s"]) > 0
            for m in measurements:
                assert m.measured > 0 and m.reading_error >= 0
                assert m.source.startswith("https://") and m.locator and m.read
    # each distinct name once: the rows share a few presets, and parsing is the cost
    for model in names["model"]:
        load_model(model)
    for hardware in names["hardware"]:
        load_platform(hardware)
    for profile in names["profile"] - {"ideal"}:
        load_runtime(profile)


def test_one_small_row_simulates(bench) -> None:
    files = bench.load_rows()
    key, measurements = next(
        (k, v)
        for k, v in files["sglang_vllm060_sharegpt.csv"].items()
        if dict(zip(bench.SETUP, k, strict=True))["scenario"] == "rate"
    )
    setup = dict(zip(bench.SETUP, key, strict=True)) | {"requests": "60"}
    summary = bench.simulate(setup)
    assert summary["finished"] == 60
    for m in measurements:
        value = bench.simulated_value(summary, m.metric, m.statistic)
        assert np.isfinite(value) and value > 0
    # ms = s x 1000, and ITL is read from the simulated gaps between streamed chunks
    assert bench.simulated_value(summary, "itl_ms", "p50") == summary["itl_s_p50"] * 1e3


def test_scheduler_steps_come_from_the_stated_command(bench) -> None:
    steps = {
        dict(zip(bench.SETUP, key, strict=True))["runtime"]: bench.scheduler_steps(
            dict(zip(bench.SETUP, key, strict=True))
        )
        for setups in bench.load_rows().values()
        for key in setups
    }
    for runtime, n in steps.items():
        assert n == (10 if "--num-scheduler-steps 10" in runtime else 1), runtime
    assert 10 in steps.values() and 1 in steps.values()


def test_offline_workload_arrives_at_once_and_rate_is_poisson(bench) -> None:
    setup = {
        "scenario": "rate",
        "rate_per_s": "5",
        "requests": "4000",
        "lengths": "fixed",
        "input_tokens": "100",
        "output_tokens": "20",
        "length_cv": "0",
    }
    requests = bench.workload(setup)
    gaps = np.diff(requests.arrival_s)
    assert requests.arrival_s[0] == 0 and np.all(gaps >= 0)
    assert abs(gaps.mean() - 0.2) < 0.02  # mean gap 1 / rate
    assert set(requests.input_tokens) == {100}
    offline = bench.workload(setup | {"scenario": "offline"})
    assert not offline.arrival_s.any()


def test_sharegpt_lengths_respect_the_filter_and_the_means() -> None:
    shortest, longest_prompt, longest_pair = SHAREGPT_FILTER
    inputs, outputs = sharegpt_lengths(202, 179, 1.0, 20000, np.random.default_rng(1))
    assert len(inputs) == len(outputs) == 20000
    assert inputs.min() >= shortest and outputs.min() >= shortest
    assert inputs.max() <= longest_prompt and (inputs + outputs).max() <= longest_pair
    # the filter drops only the far tail (about 1 % of lognormal draws of cv 1 here)
    assert 0.93 * 202 < inputs.mean() <= 202 * 1.02
    assert 0.93 * 179 < outputs.mean() <= 179 * 1.02
    with pytest.raises(InputError, match="sharegpt lengths"):
        sharegpt_lengths(5000, 5000, 0.0, 10, np.random.default_rng(0))


def test_a_stated_kv_capacity_replaces_the_derived_one(bench) -> None:
    files = bench.load_rows()
    key = next(
        k
        for k in files["zhjunqin_rtx3090_llama3_8b_sharegpt.csv"]
        if dict(zip(bench.SETUP, k, strict=True))["kv_capacity_tokens"]
    )
    setup = dict(zip(bench.SETUP, key, strict=True)) | {"requests": "40"}
    assert bench.simulate(setup)["kv_capacity_tokens"] == int(setup["kv_capacity_tokens"])
    derived = bench.simulate(setup | {"kv_capacity_tokens": ""})["kv_capacity_tokens"]
    assert derived != int(setup["kv_capacity_tokens"])


def test_closed_loop_rows_simulate_over_the_steady_part(bench) -> None:
    """A NIM / GenAI-Perf row: closed loop of its concurrency, KV as TensorRT-LLM's
    share of the memory after weights, figures over the steady window."""
    files = bench.load_rows()
    key = next(
        k
        for k in files["nim_genai_perf_llama3.csv"]
        if dict(zip(bench.SETUP, k, strict=True))["concurrency"] == "2"
        and dict(zip(bench.SETUP, k, strict=True))["model"] == "llama-3-8b"
    )
    setup = dict(zip(bench.SETUP, key, strict=True))
    assert setup["scenario"] == "closed" and setup["kv_free_fraction"] == "0.9"
    summary = bench.simulate(setup)
    assert summary["finished"] == int(setup["requests"])
    # two in flight: throughput x mean E2E (Little) is at most 2 over the steady window
    little = summary["throughput_requests_per_s"] * summary["e2e_s_mean"]
    assert 1.5 < little <= 2.0 + 1e-9
    assert summary["ttft_s_p95"] >= summary["ttft_s_p50"] > 0
    # one client: the front-end time adds to every TTFT once
    one = setup | {"concurrency": "1", "requests": "20"}
    base, slower = bench.simulate(one), bench.simulate(one, request_overhead_s=0.01)
    assert slower["ttft_s_mean"] == pytest.approx(base["ttft_s_mean"] + 0.01, rel=1e-9)
