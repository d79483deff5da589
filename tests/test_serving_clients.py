"""Closed-loop clients (max_concurrency) and request counts (num_requests)."""

import json
import math

import numpy as np
import pytest

from app.cli import main
from genz import load_model
from roofline import InputError, load_platform
from search.serving import (
    SchedulerConfig,
    Workload,
    build_replica,
    counted_arrivals,
    run,
    synthetic_workload,
)


@pytest.fixture(scope="module")
def model_and_hw():
    return load_model("llama-3.1-8b"), load_platform("h100-sxm")


def _fixed(n, prompt, output, concurrency, arrival=None):
    arrivals = np.zeros(n) if arrival is None else arrival
    return Workload(
        arrivals,
        np.full(n, prompt, np.int64),
        np.full(n, output, np.int64),
        np.zeros(n, np.int64),
        "test",
        max_concurrency=concurrency,
    )


def _in_flight_peak(sent, finish):
    """Most requests in flight at once (a request leaving at t frees its slot at t)."""
    events = sorted([(t, 1) for t in sent] + [(t, -1) for t in finish], key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


@pytest.mark.parametrize("policy", ["continuous", "chunked", "static"])
def test_one_client_sends_back_to_back(model_and_hw, policy):
    """C = 1: every request is sent the moment the previous one finishes, and each
    takes the time a lone request takes (identical requests, so identical latencies)."""
    model, hw = model_and_hw
    work = _fixed(6, 200, 20, 1)
    replica = build_replica(model, hw, work, config=SchedulerConfig(policy=policy))
    result = run(work, replica)
    finish = result.arrival_s + result.e2e_s
    assert result.arrival_s[0] == 0.0
    np.testing.assert_array_equal(result.arrival_s[1:], finish[:-1])
    np.testing.assert_allclose(result.e2e_s, result.e2e_s[0], rtol=1e-9)
    alone = run(_fixed(1, 200, 20, None), replica)
    assert result.e2e_s[0] == pytest.approx(alone.e2e_s[0], rel=1e-12)
    assert result.summary["queue_peak"] == 0


@pytest.mark.parametrize("concurrency", [1, 4, 16])
def test_littles_law_and_the_bound(model_and_hw, concurrency):
    """Never more than C in flight; exactly C until the last request is sent, so the
    time-integral of requests in flight (= the sum of E2E latencies, Little's law)
    lies between C x (last send) and C x (last finish)."""
    model, hw = model_and_hw
    work = synthetic_workload(
        math.inf,
        1.0,
        input_tokens=300,
        output_tokens=60,
        requests=120,
        max_concurrency=concurrency,
        seed=3,
    )
    replica = build_replica(model, hw, work)
    result = run(work, replica)
    sent = result.arrival_s
    finish = sent + result.e2e_s
    assert np.isfinite(finish).all()
    assert _in_flight_peak(sent, finish) == concurrency
    area = float(result.e2e_s.sum())
    assert concurrency * sent.max() <= area * (1 + 1e-12)
    assert area <= concurrency * finish.max() * (1 + 1e-12)
    # throughput x mean latency = mean concurrency over the run, at most C
    mean_in_flight = result.summary["throughput_requests_per_s"] * result.summary["e2e_s_mean"]
    assert mean_in_flight <= concurrency * (1 + 1e-9)


def test_enough_clients_is_open_loop(model_and_hw):
    """C >= the request count changes nothing: bit-identical to the open-loop run."""
    model, hw = model_and_hw
    kwargs = dict(input_tokens=300, output_tokens=60, requests=50, seed=1)
    open_loop = synthetic_workload(math.inf, 1.0, **kwargs)
    closed = synthetic_workload(math.inf, 1.0, max_concurrency=50, **kwargs)
    replica = build_replica(model, hw, open_loop)
    a, b = run(open_loop, replica), run(closed, replica)
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key))


def test_a_client_waits_for_its_request_to_arrive(model_and_hw):
    """A request's send time is the later of its arrival and a free client."""
    model, hw = model_and_hw
    late = _fixed(3, 100, 10, 1, arrival=np.array([0.0, 0.0, 100.0]))
    replica = build_replica(model, hw, late)
    result = run(late, replica)
    assert result.arrival_s[1] > 0  # waited for the first to finish
    assert result.arrival_s[2] == 100.0  # the client was free long before


def test_counted_arrivals():
    rng = np.random.default_rng(0)
    times = counted_arrivals(5.0, 1000, rng)
    assert len(times) == 1000 and times[0] == 0 and np.all(np.diff(times) >= 0)
    assert 1000 / times[-1] == pytest.approx(5.0, rel=0.1)
    np.testing.assert_array_equal(counted_arrivals(math.inf, 7, rng), np.zeros(7))
    work = synthetic_workload(2.0, 600.0, requests=33)
    assert len(work) == 33
    # without a count, the draw over the duration is unchanged by the new options
    a, b = synthetic_workload(2.0, 60.0), synthetic_workload(2.0, 60.0, max_concurrency=None)
    np.testing.assert_array_equal(a.arrival_s, b.arrival_s)
    with pytest.raises(InputError, match="requests must be an integer"):
        counted_arrivals(1.0, 0, rng)
    with pytest.raises(InputError, match="needs a request count"):
        synthetic_workload(math.inf, 60.0)
    with pytest.raises(InputError, match="max_concurrency must be"):
        _fixed(2, 10, 10, 0)


def test_pools_refuse_closed_loop(model_and_hw):
    model, hw = model_and_hw
    work = _fixed(4, 100, 10, 2)
    replica = build_replica(model, hw, work)
    with pytest.raises(InputError, match="one replica"):
        run(work, replica, replicas=2)


def test_cli_closed_loop(capsys):
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--input", "128"]
    args += ["--output", "32", "--length-cv", "0", "--no-progress"]
    assert main([*args, "--max-concurrency", "2", "--num-requests", "10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["requests"] == 10 and "closed loop of 2 clients" in out["workload"]
    assert main([*args, "--max-concurrency", "2"]) == 2
    assert "--num-requests" in capsys.readouterr().err
    assert main([*args, "--rate", "inf"]) == 2
    assert main([*args, "--max-concurrency", "0", "--num-requests", "3"]) == 2
    assert (
        main(
            [
                *args,
                "--max-concurrency",
                "2",
                "--num-requests",
                "3",
                "--find-replicas",
                "--rate",
                "1",
                "--slo-ttft-p99-s",
                "1",
            ]
        )
        == 2
    )


# -- KV budget as engines state it ------------------------------------------------


def test_stated_kv_budgets(model_and_hw):
    """Tokens and blocks are taken as stated; a free-memory fraction is that share of
    what weights and the largest step's activations leave (TensorRT-LLM's rule)."""
    from genz import Precision, step_activation_bytes

    model, hw = model_and_hw
    work = _fixed(4, 500, 50, None)
    default = build_replica(model, hw, work)
    tokens = build_replica(model, hw, work, config=SchedulerConfig(kv_capacity_tokens=12345))
    blocks = build_replica(model, hw, work, config=SchedulerConfig(kv_blocks=100))
    assert tokens.kv_capacity_tokens == 12345
    assert blocks.kv_capacity_tokens == 1600
    frac = build_replica(model, hw, work, config=SchedulerConfig(kv_free_fraction=0.5))
    cost = default.cost
    act = step_activation_bytes(model, Precision(weight_bits=16), default.parallelism, 550)
    free = cost.capacity_bytes - cost.weights_bytes - act
    assert frac.kv_capacity_tokens == int(0.5 * free // cost.kv_bytes_per_token)
    # vLLM's rule at 0.9 of the device vs 0.5 of what is left: hand-checkable ordering
    assert frac.kv_capacity_tokens < default.kv_capacity_tokens
    with pytest.raises(InputError, match="give one KV budget"):
        SchedulerConfig(kv_blocks=10, kv_free_fraction=0.5)
    with pytest.raises(InputError, match="kv_blocks must be"):
        SchedulerConfig(kv_blocks=0)


# -- SLOs on ITL and queueing delay ---------------------------------------------------


def test_queue_delay_and_itl_slos(model_and_hw):
    from search.serving import SLO, slo_misses

    model, hw = model_and_hw
    work = _fixed(40, 2000, 50, None)  # all at once: later requests queue
    replica = build_replica(model, hw, work, config=SchedulerConfig(max_sequences=4))
    result = run(work, replica, SLO(queue_s=1e-3, itl_s=1e-6))
    queue = result.queue_s
    assert queue[0] == 0.0 and queue[-1] > 0  # first admitted at once, last waited
    assert np.all(queue >= 0)
    assert result.summary["queue_s_p99"] == pytest.approx(np.percentile(queue, 99))
    misses = slo_misses(result)
    assert any("queueing delay" in m for m in misses) and any("ITL" in m for m in misses)
    assert result.summary["slo_attainment"] == pytest.approx(float(np.mean(queue <= 1e-3)))
    loose = run(work, replica, SLO(queue_s=1e3, itl_s=10.0))
    assert slo_misses(loose) == []


def test_find_max_rate_on_an_itl_slo(model_and_hw):
    from search.serving import SLO, find_max_rate

    model, hw = model_and_hw

    def at(rate):
        return synthetic_workload(rate, 30.0, input_tokens=500, output_tokens=100, seed=2)

    found = find_max_rate(at, lambda w: build_replica(model, hw, w), SLO(itl_s=0.02))
    assert found.success and found.value > 0
    assert found.result.summary["itl_s_p99"] <= 0.02


# -- request-level costs --------------------------------------------------------------


def test_request_overhead_adds_to_ttft_and_bounds_throughput(model_and_hw):
    model, hw = model_and_hw
    alone = _fixed(1, 300, 20, None)
    base = run(alone, build_replica(model, hw, alone))
    slow = run(
        alone, build_replica(model, hw, alone, config=SchedulerConfig(request_overhead_s=0.03))
    )
    assert slow.ttft_s[0] - base.ttft_s[0] == pytest.approx(0.03, abs=1e-12)
    assert slow.tpot_s[0] == pytest.approx(base.tpot_s[0], rel=1e-12)
    # one FIFO front end: n requests at once reach the engine c apart, so the last is
    # seen at n x c and throughput cannot pass 1 / c
    burst = _fixed(50, 100, 4, None)
    replica = build_replica(model, hw, burst, config=SchedulerConfig(request_overhead_s=0.1))
    result = run(burst, replica)
    assert result.summary["span_s"] >= 50 * 0.1
    assert result.summary["throughput_requests_per_s"] <= 10.0
    assert result.ttft_s.min() >= 0.1
    assert np.all(result.queue_s >= -1e-12)


def test_request_overhead_with_closed_loop(model_and_hw):
    """C = 1: each request's latency carries the front-end time once."""
    model, hw = model_and_hw
    work = _fixed(5, 200, 10, 1)
    config = SchedulerConfig(request_overhead_s=0.02)
    result = run(work, build_replica(model, hw, work, config=config))
    base = run(work, build_replica(model, hw, work))
    np.testing.assert_allclose(result.e2e_s - base.e2e_s, 0.02, atol=1e-12)


def test_chunk_overhead_per_sequence_per_step(model_and_hw):
    model, hw = model_and_hw
    alone = _fixed(1, 300, 40, None)
    base = run(alone, build_replica(model, hw, alone))
    config = SchedulerConfig(chunk_overhead_s=0.001)
    slow = run(alone, build_replica(model, hw, alone, config=config))
    assert slow.tpot_s[0] - base.tpot_s[0] == pytest.approx(0.001, rel=1e-9)
    with pytest.raises(InputError, match="chunk_overhead_s"):
        SchedulerConfig(chunk_overhead_s=-1.0)


def test_cli_engine_terms(capsys):
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "2"]
    args += ["--duration", "20", "--no-progress", "--json"]
    assert main([*args, "--kv-blocks", "1000", "--request-overhead-ms", "25"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kv_capacity_tokens"] == 16000 and out["ttft_s_p50"] > 0.025
    with pytest.raises(SystemExit):  # argparse: mutually exclusive flags
        main([*args, "--kv-blocks", "10", "--kv-tokens", "10"])
    assert main([*args, "--find-max-rate", "--slo-queue-p99-s", "0.5"]) == 0
    assert main([*args, "--chunk-overhead-ms", "-1"]) == 2
