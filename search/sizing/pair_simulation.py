"""A prefill/decode design pair checked, and if need be resized, on the serving simulator.

`design_pair`'s rate model sizes the N:M pools from steady-state rates: a pool is big
enough when its replicas' service rate covers the arrival rate. Poisson arrivals queue
before that: at a utilisation near one the P99 TTFT grows without bound. `simulate_pair`
replays the workload on the simulator (`search.serving`): the pair's N prefill and M
decode replicas (each on its design's platform, `roofline.design_platform`; the KV cache
over the designs' off-node link, as the rate model) and the best colocated design, at

- the rate: ``--min-throughput / output`` requests/s when a floor is given, else the
  rate the rate model says the pools serve (``DesignPair.requests_per_s``);
- ``SIMULATED_REQUESTS`` requests with the scenario's input and output lengths (fixed,
  as the rate model), Poisson arrivals drawn with seed ``SIMULATION_SEED``;
- continuous batching: a decode replica holds the scenario's batch B, a prefill replica
  one prompt per EP rank per pass (the rate model's prefill).

When the pools miss the TTFT/TPOT SLO at its P99, `search.serving.find_disaggregated_replicas`
finds the fewest pools (N', M') that meet it; if they exceed ``max_devices`` the caller
falls to the next pair in the rate model's order (`search.sizing.simulated_pairs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from genz import ModelConfig, Parallelism, Scenario
from roofline import InputError, design_platform

from ..serving import (
    SLO,
    KVLink,
    Replica,
    SchedulerConfig,
    ServingResult,
    Workload,
    build_replica,
    find_disaggregated_replicas,
    run,
    run_disaggregated,
    slo_misses,
    synthetic_workload,
)
from .design_pairs import kv_link
from .pools import ColocatedDesign, DesignPair, PhasePool
from .slo import ServiceLevel

#: Requests of one simulated run (keeps `requirements --design --disaggregated` ~seconds).
SIMULATED_REQUESTS = 400
#: Seed of the Poisson arrivals.
SIMULATION_SEED = 0
#: SLO percentile checked in simulation.
SIMULATION_PERCENTILE = 99.0


@dataclass(frozen=True)
class SimulatedRun:
    """One simulated configuration: its pools and latency percentiles (seconds)."""

    label: str
    prefill_replicas: int
    decode_replicas: int
    devices: int
    hourly_usd: float
    usd_per_million_output_tokens: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    misses: tuple[str, ...]

    @property
    def meets(self) -> bool:
        """The run meets the SLO percentiles (nothing missed)."""
        return not self.misses

    def to_dict(self) -> dict[str, object]:
        """JSON-ready values."""
        return {
            "label": self.label,
            "prefill_replicas": self.prefill_replicas,
            "decode_replicas": self.decode_replicas,
            "devices": self.devices,
            "hourly_usd": self.hourly_usd,
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            "ttft_s_p50": self.ttft_p50_s,
            "ttft_s_p99": self.ttft_p99_s,
            "tpot_s_p50": self.tpot_p50_s,
            "tpot_s_p99": self.tpot_p99_s,
            "meets_slo": self.meets,
            "misses": list(self.misses),
        }


@dataclass(frozen=True)
class PairSimulation:
    """The rate model's pools in simulation, the simulator's sizing when they miss
    (None when they meet the SLO or no pools within the device cap do), the colocated
    best in simulation, and a sentence saying what was done."""

    rate_requests_per_s: float
    requests: int
    seed: int
    rate_model: SimulatedRun
    sized: SimulatedRun | None
    colocated: SimulatedRun | None
    message: str

    @property
    def final(self) -> SimulatedRun:
        """The pools the simulation recommends (the sized ones when resized)."""
        return self.sized or self.rate_model

    @property
    def fits(self) -> bool:
        """Some pools of this pair meet the SLO within the device cap."""
        return self.final.meets

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            "rate_requests_per_s": self.rate_requests_per_s,
            "requests": self.requests,
            "seed": self.seed,
            "percentile": SIMULATION_PERCENTILE,
            "rate_model_pools": self.rate_model.to_dict(),
            "sized_pools": None if self.sized is None else self.sized.to_dict(),
            "colocated": None if self.colocated is None else self.colocated.to_dict(),
            "message": self.message,
        }


def simulation_rate(pair: DesignPair, slo: ServiceLevel) -> float:
    """Requests/s simulated: the throughput floor's, else the pools' rate-model rate."""
    floor = slo.min_throughput_tokens_per_s
    return pair.requests_per_s if floor is None else floor / pair.output_tokens


def simulation_workload(
    scenario: Scenario, rate: float, requests: int = SIMULATED_REQUESTS
) -> Workload:
    """``requests`` Poisson arrivals at ``rate`` with the scenario's fixed lengths."""
    if requests < 1:
        raise InputError(f"simulated requests must be >= 1 (got {requests})")
    return synthetic_workload(
        rate,
        requests / rate,
        input_tokens=scenario.input_tokens,
        output_tokens=scenario.output_tokens,
        length_cv=0.0,
        seed=SIMULATION_SEED,
        requests=requests,
    )


def _replica(
    model: ModelConfig,
    scenario: Scenario,
    workload: Workload,
    pool: PhasePool | ColocatedDesign,
    sequences: int,
) -> Replica:
    return build_replica(
        model,
        design_platform(pool.design, pool.cost),
        workload,
        precision=scenario.precision,
        parallelism=Parallelism(tp=pool.tp, pp=pool.pp, ep=pool.ep),
        config=SchedulerConfig(policy="continuous", max_sequences=sequences),
    )


def _summary(
    label: str,
    result: ServingResult,
    pools: tuple[int, int, int],
    hourly_usd: float,
    tokens_per_s: float,
) -> SimulatedRun:
    """``pools``: (prefill replicas, decode replicas, devices); the US$ per Mtok is the
    pools' hourly cost over the offered ``tokens_per_s`` (output tokens)."""
    summary = result.summary
    return SimulatedRun(
        label=label,
        prefill_replicas=pools[0],
        decode_replicas=pools[1],
        devices=pools[2],
        hourly_usd=hourly_usd,
        usd_per_million_output_tokens=hourly_usd / 3600 / tokens_per_s * 1e6,
        ttft_p50_s=float(summary["ttft_s_p50"]),
        ttft_p99_s=float(summary["ttft_s_p99"]),
        tpot_p50_s=float(summary["tpot_s_p50"]),
        tpot_p99_s=float(summary["tpot_s_p99"]),
        misses=tuple(slo_misses(result)),
    )


def simulate_pair(
    model: ModelConfig,
    scenario: Scenario,
    slo: ServiceLevel,
    pair: DesignPair,
    *,
    max_devices: int,
    kv_link_gb_per_s: float | None = None,
    requests: int = SIMULATED_REQUESTS,
) -> PairSimulation:
    """Simulate ``pair``'s pools and its colocated best at `simulation_rate`; resize the
    pools on the simulator when they miss the SLO (module doc)."""
    rate = simulation_rate(pair, slo)
    workload = simulation_workload(scenario, rate, requests)
    target = SLO(ttft_s=slo.max_ttft_s, tpot_s=slo.max_tpot_s, percentile=SIMULATION_PERCENTILE)
    prefill = _replica(model, scenario, workload, pair.prefill, pair.prefill.ep)
    decode = _replica(model, scenario, workload, pair.decode, scenario.batch)
    links = [kv_link(replica.platform) for replica in (prefill, decode)]
    bandwidth = min(bw for bw, _ in links) if kv_link_gb_per_s is None else kv_link_gb_per_s * 1e9
    link = KVLink(bandwidth, max(lat for _, lat in links))
    n, m = pair.prefill.replicas, pair.decode.replicas

    def devices(count_n: int, count_m: int) -> int:
        return count_n * prefill.devices + count_m * decode.devices

    def summary(label: str, result: ServingResult, count_n: int, count_m: int) -> SimulatedRun:
        hourly = count_n * pair.prefill.hourly_usd + count_m * pair.decode.hourly_usd
        pools = (count_n, count_m, devices(count_n, count_m))
        return _summary(label, result, pools, hourly, rate * scenario.output_tokens)

    result = run_disaggregated(
        workload, prefill, decode, link, target, prefill_replicas=n, decode_replicas=m
    )
    checked = summary("rate model", result, n, m)
    colocated = _colocated(model, scenario, workload, pair.colocated, target, rate)

    def unsized(message: str) -> PairSimulation:
        """The result when the pools are not resized on the simulator."""
        return PairSimulation(
            rate, len(workload), SIMULATION_SEED, checked, None, colocated, message
        )

    if checked.meets:
        return unsized(
            f"the simulator agrees: {n}:{m} pools meet the SLO at P99 at {rate:.4g} requests/s",
        )
    if target.ttft_s is None and target.tpot_s is None:
        return unsized(
            f"{n}:{m} pools do not keep up at {rate:.4g} requests/s in simulation "
            f"({'; '.join(checked.misses)}) and no TTFT/TPOT SLO is given to size them on",
        )
    most = max(1, max_devices // min(prefill.devices, decode.devices))
    found = find_disaggregated_replicas(
        workload, prefill, decode, target, lambda _n, _m: link, max_replicas=most
    )
    why = "; ".join(checked.misses)
    if not found.success or found.pools is None or devices(*found.pools) > max_devices:
        reason = found.message if not found.success else "they need more devices"
        return unsized(
            f"{n}:{m} pools miss the SLO in simulation ({why}); no pools of this pair meet "
            f"it within {max_devices} devices ({reason})",
        )
    # Grow, never shrink: the rate model's pools are what keeps each pool's service rate
    # above the arrival rate in steady state, which a finite run cannot show.
    grown_n, grown_m = max(found.pools[0], n), max(found.pools[1], m)
    grown = found.result
    if (grown_n, grown_m) != found.pools:
        grown = run_disaggregated(
            workload,
            prefill,
            decode,
            link,
            target,
            prefill_replicas=grown_n,
            decode_replicas=grown_m,
        )
    assert grown is not None
    sized = summary("simulator", grown, grown_n, grown_m)
    if not sized.meets or sized.devices > max_devices:
        return unsized(
            f"{n}:{m} pools miss the SLO in simulation ({why}); grown to "
            f"{grown_n}:{grown_m} they "
            + (f"need more than {max_devices} devices" if sized.meets else "still miss it"),
        )
    return PairSimulation(
        rate,
        len(workload),
        SIMULATION_SEED,
        checked,
        sized,
        colocated,
        f"{n}:{m} pools miss the SLO in simulation ({why}): the simulator sizes them "
        f"{grown_n}:{grown_m} ({sized.devices} devices, was {checked.devices})",
    )


def _colocated(
    model: ModelConfig,
    scenario: Scenario,
    workload: Workload,
    colocated: ColocatedDesign | None,
    target: SLO,
    rate: float,
) -> SimulatedRun | None:
    """The colocated best on the same workload, with as many replicas as its rate model
    needs for ``rate`` requests/s (None without one)."""
    if colocated is None:
        return None
    replica = _replica(model, scenario, workload, colocated, scenario.batch)
    per_replica = colocated.throughput_tokens_per_s / colocated.replicas / scenario.output_tokens
    count = max(colocated.replicas, math.ceil(rate / per_replica - 1e-9))
    result = run(workload, replica, target, replicas=count)
    per_replica_usd = (
        colocated.usd_per_million_output_tokens
        * colocated.throughput_tokens_per_s
        / colocated.replicas
        * 3600
        / 1e6
    )
    pools = (0, count, count * replica.devices)
    tokens_per_s = rate * scenario.output_tokens
    return _summary("colocated", result, pools, count * per_replica_usd, tokens_per_s)
