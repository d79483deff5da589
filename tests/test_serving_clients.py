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
