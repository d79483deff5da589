"""Serving simulator: the prefix cache over K shared prefixes, N:M disaggregated pools
with least-loaded routing, the fewest-pools search, and rate x policy sweeps."""

import csv
import json
import re

import numpy as np
import pytest
from helpers import make_replica

from app.cli import main
from genz import Scenario, predict
from roofline import InputError, link_parameters, load_platform
from search.serving import (
    SLO,
    KVLink,
    Workload,
    find_disaggregated_replicas,
    fitted_workload,
    kv_link,
    kv_transfer,
    load_trace,
    meets_percentiles,
    run,
    run_disaggregated,
    run_sweep,
    simulate_disaggregated,
    simulate_pool,
    summarise,
    sweep_row,
    synthetic_workload,
    zipf_weights,
)

SERVE = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm"]


# -- prefix cache ------------------------------------------------------------------


def test_one_prefix_on_an_idle_replica_misses_once_then_hits(llama8b, h100):
    """K = 1 is the single shared prefix: the first request computes the whole prompt
    (genz's batch-1 TTFT), every later one only its 1000 own tokens."""
    workload = synthetic_workload(
        0.05, 2000.0, input_tokens=8000, length_cv=0.0, prefix_share=1.0, prefix_tokens=7000
    )
    replica = make_replica(llama8b, h100, workload)
    result = run(workload, replica)
    whole = predict(llama8b, h100, Scenario(1, 8000, 256)).ttft_s
    q, c = 1000, 8000
    suffix = replica.cost.step_time(q, c, q * c - q * (q - 1) / 2, 0, 0.0, 1, 1)
    assert result.ttft_s[0] == pytest.approx(whole, rel=1e-9)
    # Requests arriving to an idle replica (not behind another's decode step).
    idle = workload.arrival_s[1:] > np.maximum.accumulate(workload.arrival_s + result.e2e_s)[:-1]
    assert idle.sum() > 60
    assert result.ttft_s[1:][idle] == pytest.approx(np.full(idle.sum(), suffix), rel=1e-12)
    assert result.summary["prefix_hit_rate"] == pytest.approx((len(workload) - 1) / len(workload))


def test_one_prefix_under_load_keeps_the_single_prefix_figures(llama8b, h100):
    """The figures the single pre-cached prefix model printed for this run (commit
    ef561be: P50/P99 TTFT 64.15 / 295.0 ms, P50/P99 TPOT 17.68 / 33.12 ms, 1639 tokens/s);
    the cache now also makes the very first request miss, nothing else changes."""
    workload = synthetic_workload(
        8.0, 300.0, input_tokens=3000, output_tokens=200, prefix_share=0.6, prefix_tokens=2000,
        seed=11,
    )  # fmt: skip
    summary = run(workload, make_replica(llama8b, h100, workload)).summary
    assert summary["ttft_s_p50"] == pytest.approx(0.06415, rel=0.02)
    assert summary["ttft_s_p99"] == pytest.approx(0.2950, rel=0.02)
    assert summary["tpot_s_p50"] == pytest.approx(0.01768, rel=0.01)
    assert summary["tpot_s_p99"] == pytest.approx(0.03312, rel=0.01)
    assert summary["throughput_tokens_per_s"] == pytest.approx(1639.0, rel=0.001)
    shared = int((workload.prefixes >= 0).sum())
    assert summary["prefix_hit_rate"] == pytest.approx((shared - 1) / shared)


def test_hit_rate_falls_as_prefixes_outgrow_the_cache(llama8b, h100):
    """At a fixed KV budget (~58k tokens: about 14 of the 4000-token prefixes), more
    distinct prefixes mean fewer hits (LRU evicts idle prefixes) and a longer TTFT."""
    rates, ttfts = [], []
    for count in (1, 4, 16, 64):
        workload = synthetic_workload(
            4.0, 200.0, input_tokens=4500, output_tokens=100, length_cv=0.0, prefix_share=1.0,
            prefix_tokens=4000, prefix_count=count, prefix_zipf=0.0, seed=3,
        )  # fmt: skip
        result = run(workload, make_replica(llama8b, h100, workload, memory_utilization=0.3))
        assert result.summary["kv_occupancy_peak"] <= 1.0
        rates.append(result.summary["prefix_hit_rate"])
        ttfts.append(result.summary["ttft_s_mean"])
    assert rates == sorted(rates, reverse=True) and len(set(rates)) == 4
    assert rates[-1] < 0.3 < 0.95 < rates[0]
    assert ttfts == sorted(ttfts)


@pytest.mark.parametrize("preemption", ["recompute", "swap"])
def test_preemption_with_many_prefixes_finishes_every_request(llama8b, h100, preemption):
    """Tight KV, long outputs, 12 prefixes: sequences are preempted (a swapped one takes
    its prefix blocks along) and prefixes evicted, and every request still finishes."""
    workload = synthetic_workload(
        8.0, 60.0, input_tokens=2500, output_tokens=1500, prefix_share=0.8, prefix_tokens=1500,
        prefix_count=12, seed=4,
    )  # fmt: skip
    replica = make_replica(llama8b, h100, workload, memory_utilization=0.25, preemption=preemption)
    result = run(workload, replica)
    assert result.summary["preemptions"] > 0
    assert result.summary["finished"] == len(workload)
    assert result.summary["kv_occupancy_peak"] <= 1.0
    assert 0 < result.summary["prefix_hit_rate"] < 1


def test_a_prompt_that_fits_only_without_its_prefix_is_rejected(llama8b, h100, tmp_path):
    """Its prefix must be resident beside it: a prompt as large as the KV cache is
    refused even when its own tokens alone would fit (it never blocks the queue)."""
    sizing = Workload(np.zeros(1), np.array([100_000]), np.array([5]), np.zeros(1, np.int64), "")
    replica = make_replica(llama8b, h100, sizing, memory_utilization=0.3)
    capacity = replica.kv_capacity_tokens
    assert 1000 < capacity < 100_000
    path = tmp_path / "trace.csv"
    path.write_text(
        "arrival_s,input_tokens,output_tokens,prefix_id,prefix_tokens\n"
        f"0,100,5,1,50\n1,{capacity},5,1,50\n2,100,5,1,50\n"
    )
    result = run(load_trace(path), replica)
    assert result.rejected.tolist() == [False, True, False]
    assert result.summary["finished"] == 2


def test_zipf_popularity():
    assert zipf_weights(3, 1.0) == pytest.approx(np.array([1, 1 / 2, 1 / 3]) / (11 / 6))
    assert zipf_weights(4, 0.0) == pytest.approx(np.full(4, 0.25))
    workload = synthetic_workload(
        50.0, 200.0, prefix_share=0.5, prefix_tokens=100, prefix_count=10, prefix_zipf=1.2
    )
    ids = workload.prefixes
    assert abs((ids >= 0).mean() - 0.5) < 0.02
    counts = np.bincount(ids[ids >= 0], minlength=10)
    assert counts[0] > counts[1] > counts[4] > counts[9] > 0
    assert np.all(workload.input_tokens[ids >= 0] > 100)
    with pytest.raises(InputError, match="prefix_count must be an integer"):
        zipf_weights(0, 1.0)


def test_trace_prefix_ids_are_read_and_fitted(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text(
        "arrival_s,input_tokens,output_tokens,prefix_id,prefix_tokens\n"
        "0,500,10,7,300\n0.1,400,10,,\n0.2,900,10,7,300\n0.3,600,10,2,50\n"
    )
    trace = load_trace(path)
    assert trace.prefixes.tolist() == [7, -1, 7, 2]
    assert trace.prefix_tokens.tolist() == [300, 0, 300, 50]
    fitted = fitted_workload(trace, 40.0, 100.0, seed=1)
    carried = fitted.prefixes >= 0
    assert abs(carried.mean() - 0.75) < 0.05
    assert set(fitted.prefixes[carried].tolist()) == {2, 7}
    assert (fitted.prefixes == 7).sum() > 1.5 * (fitted.prefixes == 2).sum()  # 2:1 in the trace
    assert np.all(fitted.prefix_tokens[fitted.prefixes == 7] == 300)


HEADER = "arrival_s,input_tokens,output_tokens,prefix_id,prefix_tokens\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEADER + "0,500,10,7,300\n0,500,10,x,300\n", "line 3: prefix_id and prefix_tokens must"),
        (HEADER + "0,500,10,-1,300\n", r"line 2: prefix_id must be in \[0, "),
        (HEADER + "0,500,10,1,500\n", r"line 2: prefix_tokens must be in \[1, input_tokens\)"),
        (HEADER + "0,500,10,1,0\n", "line 2: prefix_tokens must be in"),
        (HEADER + "0,500,10,4,100\n1,500,10,,\n2,500,10,4,90\n", "line 4: prefix 4 has 90"),
        ("arrival_s,input_tokens,output_tokens,prefix_id\n0,5,5,1\n", "line 1: column 'prefix_id'"),
        ("arrival_s,input_tokens,output_tokens,cached_tokens\n0,5,5,1\n", "line 1: column 'cach"),
    ],
)
def test_bad_prefix_columns_name_the_line(tmp_path, text, message):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_trace(path)


# -- pools -------------------------------------------------------------------------


def test_littles_law_holds_for_a_routed_pool(llama8b, h100):
    workload = synthetic_workload(30.0, 300.0, seed=3)
    replica = make_replica(llama8b, h100, workload)
    record = simulate_pool(
        workload, replica.cost, replica.config, replica.kv_capacity_tokens, replicas=3
    )
    result = summarise(workload, record.first_token_s, record.finish_s, record)
    assert result.summary["finished"] == len(workload)
    times = np.append(result.timeline_s, result.timeline_s[-1])
    in_system = (result.waiting + result.running).astype(float)
    span = times[-1] - workload.arrival_s[0]
    mean_in_system = np.sum(in_system * np.diff(times)) / span
    assert mean_in_system == pytest.approx(len(workload) / span * np.mean(result.e2e_s), rel=0.05)
    assert result.summary["kv_capacity_tokens"] == 3 * replica.kv_capacity_tokens
    # Three replicas at 30/s serve what one does at 10/s (least-loaded routing balances).
    alone = run(synthetic_workload(10.0, 300.0, seed=3), replica).summary
    assert result.summary["tpot_s_p50"] == pytest.approx(alone["tpot_s_p50"], rel=0.1)


def test_kv_transfer_is_the_prompts_cache_over_the_link(llama8b, h100):
    workload = synthetic_workload(2.0, 30.0, seed=2)
    replica = make_replica(llama8b, h100, workload)
    size, seconds = kv_transfer(workload, replica, replica, KVLink(100e9, 1e-5))
    # 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes = 131072 bytes per token.
    assert size == pytest.approx(workload.input_tokens * 131072.0)
    assert seconds == pytest.approx(workload.input_tokens * 131072.0 / 100e9 + 1e-5)
    two = make_replica(llama8b, h100, workload, tp=2)  # each device sends half
    assert kv_transfer(workload, two, two, KVLink(100e9, 0))[1] == pytest.approx(size / 2 / 100e9)


def test_kv_link_from_the_interconnect(llama8b, h100):
    workload = synthetic_workload(2.0, 30.0, seed=2)
    one = make_replica(llama8b, h100, workload)
    inside = kv_link(one, one, 2, 2)  # 4 devices: one node, NVLink
    bandwidth, latency = link_parameters(h100, 4)
    assert (inside.bandwidth_bytes_per_s, inside.latency_s) == (float(bandwidth), float(latency))
    across = kv_link(one, one, 6, 4)  # 10 devices: two nodes, the scale-out network
    assert across.bandwidth_bytes_per_s == pytest.approx(50e9 * h100.efficiency.interconnect)
    a100 = load_platform("a100-sxm-80gb")
    mixed = kv_link(one, make_replica(llama8b, a100, workload))
    assert mixed.bandwidth_bytes_per_s == pytest.approx(
        min(float(link_parameters(p, 9)[0]) for p in (h100, a100))
    )
    assert kv_link(one, one, bandwidth_bytes_per_s=7e9).bandwidth_bytes_per_s == 7e9


def test_decode_replicas_cut_tpot_and_leave_ttft_alone(llama8b, h100):
    workload = synthetic_workload(25.0, 120.0, seed=6)
    replica = make_replica(llama8b, h100, workload)
    runs = [
        simulate_disaggregated(
            workload, replica, replica, link=kv_link(replica, replica, 1, m), decode_replicas=m
        )
        for m in (1, 3)
    ]
    assert np.array_equal(runs[0].first_token_s, runs[1].first_token_s)  # prefill pool alone
    tpot = [
        summarise(workload, r.first_token_s, r.finish_s, r.combined).summary["tpot_s_p99"]
        for r in runs
    ]
    assert tpot[1] < tpot[0]
    # A second prefill replica halves the prefill queueing: TTFT P99 drops.
    ttft = [
        run_disaggregated(workload, replica, replica, kv_link(replica, replica, n, 3),
                          prefill_replicas=n, decode_replicas=3).summary["ttft_s_p99"]
        for n in (1, 2)
    ]  # fmt: skip
    assert ttft[1] < ttft[0]


def test_fewest_pools_is_minimal(llama8b, h100):
    """The (N, M) found meets the SLO, one fewer of either fails, and no pair of up to
    one more replica per pool meets it with fewer devices."""
    workload = synthetic_workload(40.0, 60.0, seed=4)
    replica = make_replica(llama8b, h100, workload)
    slo = SLO(ttft_s=0.3, tpot_s=0.015)

    def link_for(n, m):
        return kv_link(replica, replica, n, m)

    found = find_disaggregated_replicas(workload, replica, replica, slo, link_for)
    assert found.success and found.pools is not None
    n, m = found.pools
    assert n + m >= 3 and found.value == n + m
    assert found.labels[0] == "prefill" and found.labels[-1] == "decode"

    def met(a, b):
        result = run_disaggregated(
            workload, replica, replica, link_for(a, b), slo, prefill_replicas=a, decode_replicas=b
        )
        return meets_percentiles(result)

    assert met(n, m)
    feasible = [(a, b) for a in range(1, n + 2) for b in range(1, m + 2) if met(a, b)]
    assert min(a + b for a, b in feasible) == n + m
    assert not any(a < n for a, _ in feasible)
    money = found.economics
    assert money.devices == n + m
    assert h100.power_model.idle_w * (n + m) < money.mean_power_w < h100.power_w * (n + m)
    assert money.j_per_output_token == pytest.approx(
        money.mean_power_w / found.result.summary["throughput_tokens_per_s"]
    )


def test_cli_pools(capsys):
    args = [*SERVE, "--rate", "20", "--duration", "60", "--policy", "disaggregated"]
    assert main([*args, "--prefill-replicas", "2", "--decode-replicas", "3", "--decode-hw",
                 "a100-sxm-80gb", "--prefill-tp", "2", "--json"]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    assert summary["finished"] == summary["requests"] and summary["sustainable"]
    assert main([*args, "--find-replicas", "--slo-ttft-p99-s", "1", "--slo-tpot-p99-ms", "30"]) == 0
    out = capsys.readouterr().out
    assert "prefill + " in out and "tokens per dollar" in out and "tokens per joule" in out
    assert main([*SERVE, "--rate", "5", "--prefill-replicas", "2"]) == 2
    assert "add --policy disaggregated" in capsys.readouterr().err
    assert main([*args, "--decode-replicas", "0"]) == 2
    assert "--decode-replicas must be an integer in [1, 4096]" in capsys.readouterr().err
    assert main([*args, "--prefill-tp", "0"]) == 2
    assert "--prefill-tp must be an integer in [1, 4096], got 0" in capsys.readouterr().err


def test_cli_prefix_cache_line(capsys):
    assert main([*SERVE, "--rate", "4", "--duration", "60", "--prefix-share", "0.8",
                 "--prefix-tokens", "2000", "--prefix-count", "20", "--prefix-zipf", "1.1"]) == 0  # fmt: skip
    assert re.search(r"^prefix cache +hit rate", capsys.readouterr().out, re.MULTILINE)
    assert main([*SERVE, "--rate", "4", "--prefix-share", "2", "--prefix-tokens", "10"]) == 2
    assert "--prefix-share must be in [0, 1]" in capsys.readouterr().err


# -- sweeps ------------------------------------------------------------------------


def test_sweep_rows_are_the_runs(llama8b, h100):
    def evaluate(rate):
        workload = synthetic_workload(rate, 30.0, seed=1)
        return sweep_row(rate, "continuous", run(workload, make_replica(llama8b, h100, workload)))

    rows = run_sweep(evaluate, [3.0, 6.0])
    direct = run(synthetic_workload(6.0, 30.0, seed=1), make_replica(llama8b, h100,
                 synthetic_workload(6.0, 30.0, seed=1)))  # fmt: skip
    assert rows[1]["ttft_s_p99"] == direct.summary["ttft_s_p99"]
    assert rows[1]["sustainable"] == direct.sustainable and rows[0]["rate"] == 3.0
    with pytest.raises(InputError, match="parallel must be one of serial, ray"):
        run_sweep(evaluate, [1.0], parallel="dask")


def test_cli_sweep_prints_a_row_per_point_and_writes_csv(tmp_path, capsys):
    out = tmp_path / "sweep.csv"
    code = main([*SERVE, "--duration", "60", "--sweep-rates", "2,4", "--sweep-policies",
                 "continuous,disaggregated", "--out", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert printed.count("continuous") == 2 and printed.count("disaggregated") == 2
    rows = list(csv.DictReader(out.open()))
    assert [(row["rate"], row["policy"]) for row in rows] == [
        ("2.0", "continuous"), ("4.0", "continuous"),
        ("2.0", "disaggregated"), ("4.0", "disaggregated"),
    ]  # fmt: skip
    assert all(row["sustainable"] == "True" for row in rows)
    assert main([*SERVE, "--sweep-rates", "4,x"]) == 2
    assert "--sweep-rates must be comma-separated numbers" in capsys.readouterr().err
    assert main([*SERVE, "--rate", "4", "--sweep-policies", "chunked"]) == 2
    assert "--sweep-policies goes with --sweep-rates" in capsys.readouterr().err
    assert main([*SERVE, "--sweep-rates", "4", "--sweep-policies", "fcfs"]) == 2
    assert "'fcfs' is not one of" in capsys.readouterr().err
