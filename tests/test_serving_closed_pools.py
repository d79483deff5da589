"""Closed-loop clients (max_concurrency) over disaggregated prefill/decode pools
(`search.serving.closed_pools`): the open-loop run when no client waits, back-to-back
requests with one client, Little's law and conservation of the clients' slots."""

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
    kv_link,
    run_disaggregated,
    simulate_disaggregated,
    synthetic_workload,
)


@pytest.fixture(scope="module")
def replicas():
    model, hw = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    sizing = synthetic_workload(math.inf, 1.0, input_tokens=2000, output_tokens=400, requests=8)
    continuous = build_replica(model, hw, sizing)
    chunked = build_replica(
        model, hw, sizing, config=SchedulerConfig(policy="chunked", max_batched_tokens=512)
    )
    return continuous, chunked


def _fixed(n, prompt, output, concurrency):
    return Workload(
        np.zeros(n),
        np.full(n, prompt, np.int64),
        np.full(n, output, np.int64),
        np.zeros(n, np.int64),
        "test",
        max_concurrency=concurrency,
    )


def _drawn(concurrency, requests=120, seed=3):
    return synthetic_workload(
        math.inf,
        1.0,
        input_tokens=300,
        output_tokens=60,
        requests=requests,
        max_concurrency=concurrency,
        seed=seed,
    )


@pytest.mark.parametrize(
    "pools, routing, chunked",
    [((1, 1), "least-loaded", False), ((2, 3), "least-loaded", False),
     ((2, 2), "round-robin", True)],
)  # fmt: skip
def test_enough_clients_is_the_open_loop_run(replicas, pools, routing, chunked):
    """C >= N: no send waits for a leave, so both pools do what the open-loop path
    (prefill pool to its end, then the decode pool) does, to rounding."""
    continuous, chunked_replica = replicas
    prefill = chunked_replica if chunked else continuous
    n, m = pools
    link = kv_link(prefill, continuous, n, m)
    runs = [
        simulate_disaggregated(
            _drawn(c, seed=5),
            prefill,
            continuous,
            link=link,
            prefill_replicas=n,
            decode_replicas=m,
            routing=routing,
        )
        for c in (None, 120)
    ]
    open_loop, closed = runs
    np.testing.assert_array_equal(closed.first_token_s, open_loop.first_token_s)
    np.testing.assert_allclose(closed.finish_s, open_loop.finish_s, rtol=1e-12)
    assert closed.combined.steps == open_loop.combined.steps
    np.testing.assert_array_equal(closed.combined.arrival_s, np.zeros(120))
    assert closed.prefill.step_s.sum() == open_loop.prefill.step_s.sum()
    assert closed.decode.step_s.sum() == pytest.approx(open_loop.decode.step_s.sum(), rel=1e-12)


def test_one_client_sends_back_to_back(replicas):
    """C = 1: each request is sent when the previous one finishes in the decode pool and
    takes what a lone request takes: prefill, KV transfer, then decode alone."""
    replica = replicas[0]
    link = kv_link(replica, replica, 2, 2)
    result = run_disaggregated(
        _fixed(5, 500, 40, 1), replica, replica, link, prefill_replicas=2, decode_replicas=2
    )
    sent = result.arrival_s
    finish = sent + result.e2e_s
    assert sent[0] == 0.0
    np.testing.assert_array_equal(sent[1:], finish[:-1])
    alone = run_disaggregated(_fixed(1, 500, 40, None), replica, replica, link)
    np.testing.assert_allclose(result.e2e_s, alone.e2e_s[0], rtol=1e-12)
    np.testing.assert_allclose(result.ttft_s, alone.ttft_s[0], rtol=1e-12)
    # the lone request by hand: its prefill step, the transfer, 39 decode steps of one
    cost = replica.cost
    prefill_s = cost.step_time(500, 500, 500 * 500 - 500 * 499 / 2, 0, 0, 1, 1)
    transfer = 500 * cost.kv_bytes_per_token / link.bandwidth_bytes_per_s + link.latency_s
    decode_s = sum(cost.decode_time(1, 500 + k) for k in range(1, 40))
    assert alone.ttft_s[0] == pytest.approx(prefill_s, rel=1e-12)
    assert alone.e2e_s[0] == pytest.approx(prefill_s + transfer + decode_s, rel=1e-9)


@pytest.mark.parametrize("concurrency", [1, 4, 16])
def test_littles_law_and_slot_conservation(replicas, concurrency):
    """Never more than C in flight; every send after the first C is the release of a
    slot by a finished request, in time order (the sorted finishes, the first N - C of
    them); the sum of E2E latencies (time-integral of requests in flight) lies between
    C x the last send and C x the last finish."""
    replica = replicas[0]
    link = kv_link(replica, replica, 2, 2)
    work = _drawn(concurrency)
    both = simulate_disaggregated(
        work, replica, replica, link=link, prefill_replicas=2, decode_replicas=2
    )
    sent, finish = both.combined.arrival_s, both.finish_s
    assert np.isfinite(finish).all()
    np.testing.assert_array_equal(sent[:concurrency], 0.0)
    np.testing.assert_array_equal(sent[concurrency:], np.sort(finish)[: 120 - concurrency])
    result = run_disaggregated(work, replica, replica, link, prefill_replicas=2, decode_replicas=2)
    assert result.summary["finished"] == 120
    steps = np.r_[np.ones(120), -np.ones(120)]
    levels = np.cumsum(steps[np.lexsort((steps, np.r_[sent, finish]))])  # leaves first on a tie
    assert levels.max() == concurrency
    area = float(result.e2e_s.sum())
    assert concurrency * sent.max() <= area * (1 + 1e-12)
    assert area <= concurrency * finish.max() * (1 + 1e-12)
    mean_in_flight = result.summary["throughput_requests_per_s"] * result.summary["e2e_s_mean"]
    assert mean_in_flight <= concurrency * (1 + 1e-9)


@pytest.mark.parametrize("preemption", ["recompute", "swap"])
@pytest.mark.parametrize("steps", [1, 4])
def test_conservation_under_preemption_prefixes_and_multistep(preemption, steps):
    """A decode pool short of KV (preemptions), shared prefixes cached in the prefill
    pool, multi-step decode blocks: every request finishes and the sends after the
    first C are still the sorted finishes."""
    model, hw = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    work = synthetic_workload(
        math.inf, 1.0, input_tokens=1500, output_tokens=300, requests=200,
        max_concurrency=48, seed=4, prefix_share=0.5, prefix_tokens=800, prefix_count=4,
    )  # fmt: skip
    prefill = build_replica(model, hw, work)
    config = SchedulerConfig(
        preemption=preemption, scheduler_steps=steps, kv_capacity_tokens=20_000
    )
    decode = build_replica(model, hw, work, config=config)
    link = kv_link(prefill, decode, 2, 2)
    both = simulate_disaggregated(
        work, prefill, decode, link=link, prefill_replicas=2, decode_replicas=2
    )
    sent, finish = both.combined.arrival_s, both.finish_s
    assert np.isfinite(finish).all() and both.combined.preemptions.sum() > 0
    assert (both.prefill.prefix_hits == 1).sum() > 50
    np.testing.assert_array_equal(sent[48:], np.sort(finish)[: 200 - 48])
    assert (finish > sent).all()


def test_more_clients_more_throughput_and_latency(replicas):
    """Monotone in C: throughput and mean E2E latency rise with the clients."""
    replica = replicas[0]
    link = kv_link(replica, replica, 1, 1)
    runs = [run_disaggregated(_drawn(c), replica, replica, link).summary for c in (1, 4, 16)]
    assert [s["throughput_tokens_per_s"] for s in runs] == sorted(
        s["throughput_tokens_per_s"] for s in runs
    )
    assert runs[0]["e2e_s_mean"] < runs[1]["e2e_s_mean"] < runs[2]["e2e_s_mean"]


def test_one_token_requests_free_their_client_at_the_first_token(replicas):
    replica = replicas[0]
    link = kv_link(replica, replica)
    result = run_disaggregated(_fixed(4, 800, 1, 1), replica, replica, link)
    np.testing.assert_array_equal(result.e2e_s, result.ttft_s)
    first = result.arrival_s + result.ttft_s
    np.testing.assert_array_equal(result.arrival_s[1:], first[:-1])


def test_a_prefill_run_is_not_reused_with_closed_loop(replicas):
    replica = replicas[0]
    link = kv_link(replica, replica)
    work = _fixed(3, 100, 10, 2)
    first = simulate_disaggregated(_fixed(3, 100, 10, None), replica, replica, link=link)
    with pytest.raises(InputError, match="closed-loop"):
        simulate_disaggregated(work, replica, replica, link=link, prefilled=first.prefill)


def test_cli_closed_loop_over_pools(capsys):
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--input", "256"]
    args += ["--output", "32", "--length-cv", "0", "--no-progress", "--policy", "disaggregated"]
    args += ["--prefill-replicas", "2", "--decode-replicas", "2"]
    assert main([*args, "--max-concurrency", "4", "--num-requests", "40", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["requests"] == 40 and out["finished"] == 40
    assert "closed loop of 4 clients" in out["workload"]
    assert out["throughput_requests_per_s"] * out["e2e_s_mean"] <= 4 * (1 + 1e-9)
    assert main([*args, "--max-concurrency", "4", "--num-requests", "8", "--find-replicas",
                 "--rate", "1", "--slo-ttft-p99-s", "1"]) == 2  # fmt: skip
    assert "--find-replicas" in capsys.readouterr().err
