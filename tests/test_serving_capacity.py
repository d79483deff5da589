"""Serving capacity planning: the max-rate search on disaggregated pools, the
unmeetable-SLO message, and least-loaded routing of colocated replicas."""

import json

import numpy as np
import pytest
from helpers import make_replica

from app.cli import main
from roofline import InputError
from search.serving import (
    SLO,
    Workload,
    find_disaggregated_max_rate,
    find_max_rate,
    find_replicas,
    kv_link,
    meets_percentiles,
    route,
    run,
    run_disaggregated,
    synthetic_workload,
)

SERVE = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm"]


def _pools_for(model, platform):
    def pools_for(workload):
        prefill = make_replica(model, platform, workload)
        decode = make_replica(model, platform, workload)
        return prefill, decode, lambda n, m: kv_link(prefill, decode, n, m)

    return pools_for


def _workload_at(rate):
    return synthetic_workload(rate, 30.0, seed=3)


# -- max rate of disaggregated pools -------------------------------------------------


def test_max_rate_of_pools_meets_the_slo_and_the_next_rate_fails(llama8b, h100):
    slo = SLO(ttft_s=1.0, tpot_s=0.03)
    pools_for = _pools_for(llama8b, h100)
    found = find_disaggregated_max_rate(
        _workload_at, pools_for, slo, prefill_replicas=1, decode_replicas=2, start_rate=8.0
    )
    assert found.success and found.status == 0 and found.pools == (1, 2)
    assert found.result.summary["ttft_s_p99"] <= 1.0
    assert found.result.summary["tpot_s_p99"] <= 0.03
    # The search bracketed the answer within rtol: a failing rate just above it.
    above = min(rate for rate, met in found.evaluations if not met and rate > found.value)
    assert above <= found.value * 1.02 + 1e-9
    # That failing rate reproduces as failing when simulated directly.
    workload = _workload_at(above)
    prefill, decode, link_for = pools_for(workload)
    again = run_disaggregated(
        workload, prefill, decode, link_for(1, 2), slo, prefill_replicas=1, decode_replicas=2
    )
    assert not meets_percentiles(again)
    # Economics count both pools: 3 one-device replicas, each drawing between the
    # H100's idle power and its board power (its activity power model).
    money = found.economics
    assert money.devices == 3
    assert h100.power_model.idle_w * 3 < money.mean_power_w < h100.power_w * 3
    assert money.j_per_output_token == pytest.approx(
        money.mean_power_w / found.result.summary["throughput_tokens_per_s"]
    )


@pytest.mark.parametrize("pools", [True, False])
def test_an_unmeetable_slo_names_the_binding_percentile(llama8b, h100, pools):
    """A 1 ms P99 TTFT is below the prefill of a single prompt: the search halves the
    rate until one request is drawn, then fails naming P99 TTFT, not TPOT."""
    slo = SLO(ttft_s=1e-3, tpot_s=1.0)
    if pools:
        found = find_disaggregated_max_rate(_workload_at, _pools_for(llama8b, h100), slo)
    else:
        found = find_max_rate(_workload_at, lambda w: make_replica(llama8b, h100, w), slo)
    assert not found.success and found.status == 1 and np.isnan(found.value)
    assert "SLO cannot be met" in found.message and "1 request(s)" in found.message
    assert "P99 TTFT" in found.message and "> 0.001 s" in found.message
    assert "TPOT" not in found.message
    assert all(not met for _, met in found.evaluations)
    lowest = found.evaluations[-1][0]
    assert len(_workload_at(lowest)) == 1 and len(_workload_at(2 * lowest)) > 1


def test_cli_find_max_rate_with_pools(capsys):
    args = [*SERVE, "--duration", "30", "--policy", "disaggregated", "--find-max-rate"]
    assert main([*args, "--decode-replicas", "2", "--rate", "8", "--slo-ttft-p99-s", "1",
                 "--slo-tpot-p99-ms", "30", "--json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["success"] and out["prefill_replicas"] == 1 and out["decode_replicas"] == 2
    assert out["economics"]["devices"] == 3 and out["rate"] > 8
    assert main([*args, "--slo-ttft-p99-s", "0.001"]) == 0
    assert "SLO cannot be met" in capsys.readouterr().out
    assert main([*args, "--trace", "x.csv", "--slo-ttft-p99-s", "1"]) == 2
    assert "--find-max-rate draws its own workload" in capsys.readouterr().err


# -- routing -------------------------------------------------------------------------


def _alternating(count=120):
    """One request a second, prompts of 100 tokens, outputs alternating 1000 and 2."""
    index = np.arange(count)
    outputs = np.where(index % 2 == 0, 1000, 2)
    return Workload(
        index * 1.0, np.full(count, 100), outputs, np.zeros(count, np.int64), "alternating"
    )


@pytest.mark.parametrize("policy", ["continuous", "chunked", "static"])
def test_least_loaded_beats_round_robin_when_lengths_alternate(llama8b, h100, policy):
    """Round-robin over 2 replicas sends every 1000-token request to replica 0: one per
    2 s, each holding one of its 2 sequence slots for about 1000 x 6.2 ms = 6.2 s, so
    it can serve 2 / 6.2 = 0.32 of the 0.5 requests/s and its queue grows. Least-loaded
    routing sees replica 0's unfinished requests and spreads the long ones, 0.25
    requests/s per replica."""
    workload = _alternating()
    replica = make_replica(llama8b, h100, workload, policy=policy, max_sequences=2)
    least = run(workload, replica, replicas=2)
    robin = run(workload, replica, replicas=2, routing="round-robin")
    assert robin.summary["ttft_s_p99"] > 20.0
    assert least.summary["ttft_s_p99"] < robin.summary["ttft_s_p99"] / 1.5
    slo = SLO(ttft_s=2.0)
    fewest = find_replicas(workload, lambda w: replica, slo)
    fewest_robin = find_replicas(workload, lambda w: replica, slo, routing="round-robin")
    assert fewest.success and fewest_robin.success
    assert fewest.value < fewest_robin.value
    if policy != "static":  # unloaded prompts: one 100-token prefill each
        assert least.summary["ttft_s_p99"] < 0.05 and fewest.value == 2


def test_pool_of_one_and_round_robin_rule(llama8b, h100):
    """One replica is the plain run; round-robin puts request i on replica i mod N."""
    workload = synthetic_workload(5.0, 20.0, arrival_cv=3.0, seed=1)
    for policy in ("continuous", "static"):
        replica = make_replica(llama8b, h100, workload, policy=policy, max_sequences=16)
        alone = run(workload, replica).summary
        assert run(workload, replica, replicas=1, routing="round-robin").summary == alone

    class Recorder:
        def __init__(self):
            self.inbox, self.limits = [], []

        def advance(self, limit):
            self.limits.append(limit)

        def load(self, at):
            return len(self.inbox)

    replicas = [Recorder() for _ in range(3)]
    route([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], replicas, "round-robin")
    assert [r.inbox for r in replicas] == [[0, 3, 6], [1, 4], [2, 5]]
    replicas = [Recorder() for _ in range(2)]
    route([0.0, 1.0, 2.0], replicas, "least-loaded")  # never finishing: alternate
    assert [r.inbox for r in replicas] == [[0, 2], [1]]
    assert replicas[0].limits == [0.0, 1.0, 2.0, float("inf")]
    with pytest.raises(InputError, match="routing must be one of least-loaded, round-robin"):
        route([0.0], replicas, "random")


def test_cli_routing_flag_changes_the_fewest_replicas(tmp_path, capsys):
    """The alternating trace on the CLI: 2 replicas least-loaded, 3 round-robin (the
    test above explains why)."""
    workload = _alternating()
    trace = tmp_path / "alternating.csv"
    rows = zip(workload.arrival_s, workload.input_tokens, workload.output_tokens, strict=True)
    trace.write_text(
        "arrival_s,input_tokens,output_tokens\n" + "".join(f"{a},{i},{o}\n" for a, i, o in rows)
    )
    args = [*SERVE, "--trace", str(trace), "--max-seqs", "2", "--find-replicas"]
    args += ["--slo-ttft-p99-s", "2", "--json"]
    counts = {}
    for routing in ("least-loaded", "round-robin"):
        assert main([*args, "--routing", routing]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["success"] and f"{routing} routing" in out["message"]
        counts[routing] = out["replicas"]
    assert counts == {"least-loaded": 2, "round-robin": 3}
