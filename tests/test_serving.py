"""Serving under load: step cost pinned to genz.predict, simulator laws, traces, CLI."""

import csv
import json

import numpy as np
import pytest

from app.cli import main
from genz import (
    Parallelism,
    Precision,
    Scenario,
    load_model,
    load_runtime,
    predict,
    step_cost,
)
from roofline import InputError, load_platform
from search.serving import (
    SLO,
    KVLink,
    SchedulerConfig,
    Workload,
    build_replica,
    find_max_rate,
    find_replicas,
    load_trace,
    run,
    run_disaggregated,
    synthetic_workload,
)


@pytest.fixture(scope="module")
def h100():
    return load_platform("h100-sxm")


@pytest.fixture(scope="module")
def llama8b():
    return load_model("llama-3.1-8b")


@pytest.mark.parametrize(
    ("name", "hw", "tp", "bits", "runtime"),
    [
        ("llama-3.1-8b", "h100-sxm", 1, 16.0, None),
        ("llama-3.1-8b", "h100-sxm", 1, 16.0, "vllm"),
        ("llama-2-70b", "h100-sxm", 4, 16.0, "tensorrt-llm"),
        ("mixtral-8x7b", "a100-sxm-80gb", 2, 16.0, None),
        ("deepseek-v3", "h200-sxm", 8, 8.0, None),
    ],
)
def test_pure_steps_reproduce_predict(name, hw, tp, bits, runtime):
    """A decode-only step at the mean decode context is genz's TPOT; an unchunked
    prefill-only step of the batch's prompts is its TTFT (dense, GQA, MoE, MLA; with
    and without a runtime profile)."""
    model, platform = load_model(name), load_platform(hw)
    precision, mesh = Precision(weight_bits=bits), Parallelism(tp=tp)
    profile = None if runtime is None else load_runtime(runtime)
    cost = step_cost(
        model, platform, precision, mesh, max_tokens=70_000, max_sequences=64, runtime=profile
    )
    for batch, prompt, out in ((1, 1024, 128), (8, 2000, 300), (32, 512, 64)):
        scenario = Scenario(batch, prompt, out, precision=precision, parallelism=mesh)
        expected = predict(model, platform, scenario, runtime=profile)
        context = prompt + out / 2
        decode = cost.step_time(0, 0.0, 0.0, batch, batch * context, batch, batch)
        pairs = batch * (prompt * prompt - prompt * (prompt - 1) / 2)
        prefill = cost.step_time(batch * prompt, batch * prompt, pairs, 0, 0.0, batch, batch)
        assert decode == pytest.approx(expected.tpot_s, rel=1e-9)
        assert prefill == pytest.approx(expected.ttft_s, rel=1e-9)


def test_chunks_sum_to_chunked_ttft_and_arrays_match_scalars(llama8b, h100):
    """Four 2048-token chunks costed as steps add up to genz's chunked TTFT (attention
    is linear in the context and stays compute-bound over these chunks), and the array
    path equals the scalar path."""
    cost = step_cost(llama8b, h100, max_tokens=4096, max_sequences=64)
    q = 2048
    chunks = [
        cost.step_time(q, q * k, q * q * k - q * (q - 1) / 2, 0, 0.0, int(k == 4), 1)
        for k in (1, 2, 3, 4)
    ]
    # genz runs the LM head on a quarter of each chunk; a step runs it once, on the last.
    expected = predict(llama8b, h100, Scenario(1, 4 * q, 16, prefill_chunk=q)).ttft_s
    assert sum(chunks) == pytest.approx(expected, rel=1e-9)
    mixed = dict(
        zip(
            "abcdefg",
            ([300, 0], [900, 0], [5e4, 0], [20, 7], [3e4, 7e3], [21, 7], [23, 7]),
            strict=True,
        )
    )
    arrays = cost.step_times(*mixed.values())
    scalars = [cost.step_time(*(column[i] for column in mixed.values())) for i in range(2)]
    assert arrays.tolist() == pytest.approx(scalars, rel=1e-12)
    assert arrays[0] > cost.step_time(0, 0.0, 0.0, 20, 3e4, 20, 20)  # prefill tokens cost time


def _replica(model, platform, workload, **config):
    return build_replica(model, platform, workload, config=SchedulerConfig(**config))


def test_littles_law(llama8b, h100):
    workload = synthetic_workload(12.0, 600.0, seed=3)
    replica = _replica(llama8b, h100, workload)
    result = run(workload, replica)
    times = np.append(result.timeline_s, result.timeline_s[-1])
    in_system = (result.waiting + result.running).astype(float)
    mean_in_system = np.sum(in_system * np.diff(times)) / (times[-1] - workload.arrival_s[0])
    rate = len(workload) / (times[-1] - workload.arrival_s[0])
    assert mean_in_system == pytest.approx(rate * np.mean(result.e2e_s), rel=0.05)


def test_idle_replica_gives_batch_one_ttft(llama8b, h100):
    workload = synthetic_workload(0.05, 2000.0, length_cv=0.0, seed=1)
    result = run(workload, _replica(llama8b, h100, workload))
    alone = predict(llama8b, h100, Scenario(1, 1024, 256)).ttft_s
    assert result.summary["ttft_s_p50"] == pytest.approx(alone, rel=1e-9)
    assert result.sustainable


def test_overload_is_not_sustainable(llama8b, h100):
    workload = synthetic_workload(80.0, 120.0, seed=2)
    result = run(workload, _replica(llama8b, h100, workload))
    assert not result.sustainable
    assert "NOT SUSTAINABLE" in result.verdict
    queue = [result.waiting[np.searchsorted(result.timeline_s, t)] for t in (30.0, 60.0, 119.0)]
    assert queue[0] < queue[1] < queue[2]  # the queue grows over the arrival window


@pytest.mark.parametrize("rate", [4.0, 60.0])
def test_continuous_never_below_static(llama8b, h100, rate):
    workload = synthetic_workload(rate, 120.0, input_tokens=512, output_tokens=128, seed=5)
    static = run(workload, _replica(llama8b, h100, workload, policy="static", max_sequences=32))
    continuous = run(workload, _replica(llama8b, h100, workload, max_sequences=32))
    chunked = run(workload, _replica(llama8b, h100, workload, policy="chunked", max_sequences=32))
    floor = static.summary["throughput_tokens_per_s"]
    assert continuous.summary["throughput_tokens_per_s"] >= floor * (1 - 1e-9)
    assert chunked.summary["throughput_tokens_per_s"] >= floor * (1 - 1e-9)


def test_seed_reproduces_run_exactly(llama8b, h100):
    first, again, other = (synthetic_workload(15.0, 60.0, seed=s) for s in (7, 7, 8))
    replica = _replica(llama8b, h100, first, policy="chunked")
    a, b = run(first, replica), run(again, replica)
    assert np.array_equal(a.ttft_s, b.ttft_s) and np.array_equal(a.e2e_s, b.e2e_s)
    assert len(other) != len(first) or not np.array_equal(other.arrival_s, first.arrival_s)


@pytest.mark.parametrize("preemption", ["recompute", "swap"])
def test_preemption_when_kv_blocks_run_out(llama8b, h100, preemption):
    workload = synthetic_workload(8.0, 60.0, input_tokens=2000, output_tokens=1500, seed=4)
    replica = _replica(llama8b, h100, workload, memory_utilization=0.25, preemption=preemption)
    result = run(workload, replica)
    assert result.summary["preemptions"] > 0
    assert result.summary["finished"] == len(workload)
    assert result.summary["kv_occupancy_peak"] <= 1.0


def test_shared_prefix_cuts_ttft(llama8b, h100):
    plain = synthetic_workload(2.0, 300.0, input_tokens=8000, length_cv=0.0, seed=9)
    shared = synthetic_workload(
        2.0,
        300.0,
        input_tokens=8000,
        length_cv=0.0,
        prefix_share=1.0,
        prefix_tokens=7000,
        seed=9,
    )
    ttft = [run(w, _replica(llama8b, h100, w)).summary["ttft_s_p50"] for w in (plain, shared)]
    assert ttft[1] < ttft[0] / 3


def test_disaggregated_pools(llama8b, h100):
    workload = synthetic_workload(6.0, 120.0, seed=6)
    replica = _replica(llama8b, h100, workload)
    result = run_disaggregated(workload, replica, replica, KVLink(50e9, 10e-6), SLO(ttft_s=2.0))
    colocated = run(workload, replica)
    assert result.summary["finished"] == len(workload)
    # Decode no longer waits behind prompts: its TPOT tail is shorter than colocated.
    assert result.summary["tpot_s_p99"] < colocated.summary["tpot_s_p99"]


def test_capacity_searches_meet_the_slo(llama8b, h100):
    slo = SLO(ttft_s=2.0, tpot_s=0.05)

    def workload_at(rate):
        return synthetic_workload(rate, 40.0, seed=1)

    def replica_for(workload):
        return _replica(llama8b, h100, workload)

    found = find_max_rate(workload_at, replica_for, slo, start_rate=4.0, rtol=0.05)
    assert found.success and found.status == 0
    assert found.result.summary["ttft_s_p99"] <= 2.0
    assert any(not met and rate > found.value for rate, met in found.evaluations)
    assert found.economics.j_per_output_token > 0
    replicas = find_replicas(workload_at(found.value * 2.5), replica_for, slo)
    assert replicas.success and replicas.value >= 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("arrival_s,input_tokens\n0,5\n", "line 1: missing column 'output_tokens'"),
        ("arrival_s,input_tokens,output_tokens\n0,5,5\n-1,5,5\n", "line 3: arrival_s must be >= 0"),
        ("arrival_s,input_tokens,output_tokens\n2,5,5\n1,5,5\n", "line 3: arrival_s 1 is before"),
        ("arrival_s,input_tokens,output_tokens\n0,x,5\n", "line 2: needs a number"),
        ("arrival_s,input_tokens,output_tokens\n0,0,5\n", "line 2: input_tokens and output_tokens"),
    ],
)
def test_bad_traces_name_the_line(tmp_path, text, message):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_trace(path)


def test_trace_runs_through_cli(tmp_path, capsys):
    path = tmp_path / "trace.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,100,20\n0.5,200,30\n0.5,50,2\n")
    out = tmp_path / "requests.csv"
    code = main(["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--trace", str(path),
                 "--out", str(out), "--json"])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["finished"] == 3 and summary["sustainable"]
    rows = list(csv.DictReader(out.open()))
    assert [int(row["output_tokens"]) for row in rows] == [20, 30, 2]
    assert main(["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--trace", str(path),
                 "--out", str(tmp_path / "no" / "x.csv")]) == 2  # fmt: skip


def test_cli_summary_and_errors(capsys):
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--duration", "30"]
    assert main([*args, "--rate", "4", "--slo-ttft-p99-s", "2"]) == 0
    out = capsys.readouterr().out
    assert "TTFT P50/P90/P99" in out and "sustainable" in out
    assert main(args) == 2
    assert "--rate is required" in capsys.readouterr().err
    assert main([*args, "--find-max-rate"]) == 2
    assert "needs an SLO" in capsys.readouterr().err


def test_workload_is_a_sorted_stream():
    workload = synthetic_workload(5.0, 100.0, arrival_cv=3.0, seed=0)
    assert isinstance(workload, Workload)
    assert np.all(np.diff(workload.arrival_s) >= 0) and workload.arrival_s[-1] < 100.0
    gaps = np.diff(workload.arrival_s)
    assert gaps.std() / gaps.mean() > 2.0  # bursty
