"""The prefill/decode design pair checked and resized on the serving simulator."""

from __future__ import annotations

import json

import pytest
from test_design_requirements import SCENARIO, SMALL_FLAGS, _pair_space, _run

from search.sizing import ServiceLevel, design_pair, simulate_pair, simulated_design_pair
from search.sizing.pair_simulation import simulation_rate


def test_light_load_the_simulator_agrees_with_the_rate_model(llama8b) -> None:
    # 128 tok/s of 128-token answers: 1 request/s against a prefill replica serving
    # ~9 requests/s, so almost no request waits: the simulated TTFT is the prefill pass
    # and the decode batch stays far below B (TPOT no slower than the rate model's B).
    slo = ServiceLevel(max_ttft_s=1.0, max_tpot_s=0.05, min_throughput_tokens_per_s=128)
    pair = design_pair(llama8b, SCENARIO, slo, _pair_space())
    assert (pair.prefill.replicas, pair.decode.replicas) == (1, 1)
    assert simulation_rate(pair, slo) == pytest.approx(1.0)
    simulation = simulate_pair(llama8b, SCENARIO, slo, pair, max_devices=64)
    checked = simulation.rate_model
    assert checked.meets and simulation.sized is None and simulation.fits
    assert checked.ttft_p50_s == pytest.approx(pair.prefill.seconds, rel=0.02)
    assert checked.tpot_p99_s <= pair.tpot_s * 1.01
    assert "agrees" in simulation.message


def test_queueing_makes_the_simulator_add_a_prefill_replica(llama8b) -> None:
    # 2000 tok/s = 15.6 requests/s on 2 prefill replicas of ~9.3 requests/s each: the
    # rate model's 2:2 pools keep up (utilisation 0.84) and its TTFT (~0.11 s) is far
    # below 0.25 s, but Poisson queueing at that utilisation puts the P99 TTFT above it.
    slo = ServiceLevel(max_ttft_s=0.25, max_tpot_s=0.05, min_throughput_tokens_per_s=2000)
    pair = design_pair(llama8b, SCENARIO, slo, _pair_space())
    assert (pair.prefill.replicas, pair.decode.replicas) == (2, 2)
    assert pair.ttft_s < 0.25
    simulation = simulate_pair(llama8b, SCENARIO, slo, pair, max_devices=64)
    assert not simulation.rate_model.meets
    assert simulation.rate_model.ttft_p99_s > 0.25
    assert simulation.sized is not None and simulation.sized.meets
    # Grown, never shrunk: one more prefill replica, the decode pool kept.
    assert (simulation.sized.prefill_replicas, simulation.sized.decode_replicas) == (3, 2)
    assert simulation.sized.devices == simulation.rate_model.devices + pair.prefill.tp
    assert simulation.sized.ttft_p99_s <= 0.25
    hourly = 3 * pair.prefill.hourly_usd + 2 * pair.decode.hourly_usd
    assert simulation.sized.hourly_usd == pytest.approx(hourly)
    assert simulation.sized.usd_per_million_output_tokens == pytest.approx(
        hourly / 3600 / 2000 * 1e6
    )


def test_a_pair_without_pools_in_the_device_cap_gives_way(llama8b) -> None:
    # The 2:2 pools fit 4 devices but the simulator's 3:2 need 5: the next pair of the
    # rate model's order is simulated instead, and the first is reported as rejected.
    slo = ServiceLevel(max_ttft_s=0.25, max_tpot_s=0.05, min_throughput_tokens_per_s=2000)
    first = design_pair(llama8b, SCENARIO, slo, _pair_space(), max_devices=4)
    found = simulated_design_pair(llama8b, SCENARIO, slo, _pair_space(), max_devices=4)
    assert found.rejected and found.rejected[0][0].key == first.key
    assert found.pair.key != first.key
    assert "4 devices" in found.rejected[0][1].message


def test_cli_reports_the_simulation_and_skips_it_on_request(capsys) -> None:
    # The grid's 2:2 pair has a 73 ms TTFT in the rate model; at 15.6 requests/s the
    # P99 queues to ~0.14 s > 0.12 s and the simulator adds a prefill replica (3:2).
    argv = (
        "requirements",
        "--model",
        "llama-3.1-8b",
        "--design",
        "--disaggregated",
        "--max-ttft-s",
        "0.12",
        "--max-tpot-ms",
        "50",
        "--min-throughput",
        "2000",
        *SMALL_FLAGS,
    )
    code, out, _ = _run(capsys, *argv, "--json")
    assert code == 0
    payload = json.loads(out)
    simulation = payload["simulation"]
    assert simulation["rate_model_pools"]["meets_slo"] is False
    sized = simulation["sized_pools"]
    assert (sized["prefill_replicas"], sized["decode_replicas"]) == (3, 2)
    assert payload["pair"]["pool_ratio"] == "2:2"
    assert simulation["fits"] is True
    code, out, _ = _run(capsys, *argv)
    assert code == 0 and "the simulator sizes them" in out and "TTFT P99" in out
    code, out, _ = _run(capsys, *argv, "--no-simulate", "--json")
    assert code == 0 and json.loads(out)["simulation"] is None


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (
            ("--disaggregated", "--simulate-requests", "0"),
            "--simulate-requests must be an integer in [1, 100000]",
        ),
        (("--no-simulate",), "--no-simulate applies only with --disaggregated"),
        (("--disaggregated", "--no-simulate", "--simulate-requests", "9"), "give one"),
    ],
)
def test_cli_simulation_flag_errors_are_one_line(capsys, extra, needle) -> None:
    code, _, err = _run(
        capsys, "requirements", "--model", "llama-3.1-8b", "--design", *extra, *SMALL_FLAGS
    )
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1
