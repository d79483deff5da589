"""Text output of ``codesign requirements --design --disaggregated``: the rate model's
prefill/decode pair and pools, the best colocated design, and (unless ``--no-simulate``)
what the serving simulator measured and resized (`search.sizing.simulated_design_pair`)."""

from __future__ import annotations

from search.sizing import DesignPair, ServiceLevel, SimulatedPair, SimulatedRun, format_seconds

from ..formatting import human_bytes, print_key_values, print_table


def print_pair(
    pair: DesignPair,
    simulated: SimulatedPair | None,
    slo: ServiceLevel,
    lifetime: float,
    electricity: float,
) -> None:
    """Print the pair, its colocated comparison and its simulation."""
    rows = []
    for label, pool in (("prefill", pair.prefill), ("decode", pair.decode)):
        rows.append(
            {
                "pool": label,
                "design": pool.design.name,
                "mesh": f"tp{pool.tp} pp{pool.pp} ep{pool.ep}",
                "replicas": pool.replicas,
                "step": format_seconds(pool.seconds),
                "req/s per replica": f"{pool.requests_per_s:.4g}",
                "US$/device": f"{pool.cost.device_cost_usd:,.0f}",
                "bound": pool.bound,
            }
        )
    print_key_values(
        [
            ("SLO", slo.describe()),
            (
                "pair",
                f"prefill {pair.prefill.design.name} : decode {pair.decode.design.name}, "
                f"pools {pair.ratio_text} (of {pair.pairs_considered} feasible pairs)",
            ),
            (
                "KV transfer",
                f"{human_bytes(pair.kv_transfer_bytes)} (decimal) per request in "
                f"{format_seconds(pair.kv_transfer_s)}",
            ),
            (
                "TTFT / TPOT",
                f"{format_seconds(pair.ttft_s)} (prefill + KV transfer) / "
                f"{format_seconds(pair.tpot_s)}",
            ),
            (
                "served",
                f"{pair.requests_per_s:.4g} requests/s = "
                f"{pair.requests_per_s * pair.output_tokens:.4g} output tok/s",
            ),
            (
                "$ per Mtok",
                f"{pair.usd_per_million_output_tokens:.4g} (cost over {lifetime:g} years + "
                f"electricity at ${electricity:g}/kWh)",
            ),
        ]
    )
    print()
    print_table(rows)
    print()
    colocated = pair.colocated
    if colocated is None:
        print("colocated: no single design of the space meets the SLOs with prefill interference")
    else:
        _print_colocated(pair)
    if simulated is not None:
        print()
        _print_simulation(simulated)


def _print_colocated(pair: DesignPair) -> None:
    colocated = pair.colocated
    assert colocated is not None
    print(
        f"best colocated design: {colocated.design.name} (tp{colocated.tp} pp{colocated.pp} "
        f"ep{colocated.ep} x{colocated.replicas}), TTFT {format_seconds(colocated.ttft_s)}, "
        f"TPOT {format_seconds(colocated.tpot_s)} with prefill interference, "
        f"$/Mtok {colocated.usd_per_million_output_tokens:.4g}: the pair costs "
        f"{1 / pair.saving:.3g}x per token"  # type: ignore[operator]
    )


def _simulated_row(run: SimulatedRun) -> dict[str, object]:
    pools = (
        f"x{run.decode_replicas}"
        if run.label == "colocated"
        else f"{run.prefill_replicas}:{run.decode_replicas}"
    )
    return {
        "simulated": run.label,
        "pools": pools,
        "devices": run.devices,
        "US$/h": f"{run.hourly_usd:.3g}",
        "$/Mtok": f"{run.usd_per_million_output_tokens:.4g}",
        "TTFT P50": format_seconds(run.ttft_p50_s),
        "TTFT P99": format_seconds(run.ttft_p99_s),
        "TPOT P50": format_seconds(run.tpot_p50_s),
        "TPOT P99": format_seconds(run.tpot_p99_s),
        "SLO": "met" if run.meets else "MISSED: " + "; ".join(run.misses),
    }


def _print_simulation(simulated: SimulatedPair) -> None:
    simulation = simulated.simulation
    for pair, rejected in simulated.rejected:
        print(
            f"rejected in simulation: prefill {pair.prefill.design.name} : decode "
            f"{pair.decode.design.name} {pair.ratio_text}: {rejected.message}; next candidate"
        )
    print(
        f"simulated: {simulation.requests} Poisson requests at "
        f"{simulation.rate_requests_per_s:.4g} requests/s (seed {simulation.seed}, fixed "
        "lengths, continuous batching), SLO checked at P99; $/Mtok at that rate"
    )
    print(f"verdict: {simulation.message}")
    runs = [simulation.rate_model]
    if simulation.sized is not None:
        runs.append(simulation.sized)
    if simulation.colocated is not None:
        runs.append(simulation.colocated)
    print_table([_simulated_row(run) for run in runs])
    colocated, final = simulation.colocated, simulation.final
    if colocated is not None and colocated.meets and final.meets:
        ratio = final.usd_per_million_output_tokens / colocated.usd_per_million_output_tokens
        print(f"in simulation the pair costs {ratio:.3g}x the colocated design per token")
