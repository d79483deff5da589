"""Capacity planning on the simulator: the highest rate a replica sustains within the
SLO percentiles, the fewest replicas for a rate, and tokens per dollar and per joule
there.

Both searches follow scipy's result shape (``success``, ``status``, ``message``).
Every evaluation simulates a workload drawn with the same seed, so a search is
deterministic; the rate search doubles the rate until the SLO fails, then bisects to
``rtol``. Replicas share the traffic round-robin; one replica's share is simulated (all
replicas see statistically the same stream).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from genz import device_hour_cost
from roofline import InputError, require_fraction, require_positive

from .metrics import SLO, ServingResult, meets_percentiles, summarise
from .schedulers import Replica, simulate_disaggregated, simulate_replica
from .workload import Workload

#: Most doublings of the rate (from ``start_rate``) or of the replica count tried.
MAX_DOUBLINGS = 24


def run(
    workload: Workload,
    replica: Replica,
    slo: SLO | None = None,
    progress: Callable[[int], None] | None = None,
) -> ServingResult:
    """Simulate ``workload`` on ``replica`` and summarise it against ``slo``."""
    record = simulate_replica(workload, replica, progress)
    return summarise(workload, record.first_token_s, record.finish_s, record, slo)


def run_disaggregated(
    workload: Workload,
    prefill: Replica,
    decode: Replica,
    link_bytes_per_s: float,
    slo: SLO | None = None,
) -> ServingResult:
    """Simulate a prefill replica feeding a decode replica; the KV occupancy and queue
    timeline are the decode pool's."""
    both = simulate_disaggregated(workload, prefill, decode, link_bytes_per_s=link_bytes_per_s)
    return summarise(workload, both.first_token_s, both.finish_s, both.decode, slo)


@dataclass(frozen=True)
class ServingEconomics:
    """Cost and energy of generated tokens at a simulated operating point.

    All ``devices`` draw ``power_fraction`` of their board power for the whole run
    (genz's economics assumption); dollars are the platform's device-hour price
    (`genz.device_hour_cost`). None where the platform lists no power or price.
    """

    devices: int
    output_tokens_per_s: float
    j_per_output_token: float | None
    output_tokens_per_usd: float | None
    usd_per_million_output_tokens: float | None


def serving_economics(
    replica: Replica, replicas: int, result: ServingResult, power_fraction: float = 1.0
) -> ServingEconomics:
    """Tokens per joule and per dollar of ``replicas`` replicas each running ``result``."""
    require_fraction("power_fraction", power_fraction)
    devices = replica.devices * replicas
    tokens_per_s = result.summary["throughput_tokens_per_s"] * replicas
    platform = replica.platform
    joules = (
        None
        if platform.power_w is None
        else platform.power_w * power_fraction * devices / tokens_per_s
    )
    price = device_hour_cost(platform)
    usd_per_token = None if price is None else price.usd_per_hour * devices / 3600 / tokens_per_s
    return ServingEconomics(
        devices=devices,
        output_tokens_per_s=tokens_per_s,
        j_per_output_token=joules,
        output_tokens_per_usd=None if usd_per_token is None else 1 / usd_per_token,
        usd_per_million_output_tokens=None if usd_per_token is None else usd_per_token * 1e6,
    )


@dataclass(frozen=True)
class CapacityResult:
    """Outcome of `find_max_rate` or `find_replicas`.

    ``value`` is the rate (requests/s) or the replica count found (NaN / 0 when
    ``success`` is False); ``result`` the run there; ``evaluations`` every
    ``(value tried, met)`` in order.
    """

    success: bool
    status: int
    message: str
    value: float
    result: ServingResult | None
    economics: ServingEconomics | None
    evaluations: tuple[tuple[float, bool], ...] = field(default=())


def find_max_rate(
    workload_at: Callable[[float], Workload],
    replica_for: Callable[[Workload], Replica],
    slo: SLO,
    *,
    start_rate: float = 1.0,
    rtol: float = 0.02,
) -> CapacityResult:
    """Highest request rate one replica serves meeting ``slo`` (bisection on the rate).

    ``workload_at(rate)`` draws the workload (fixed seed); ``replica_for(workload)``
    builds the replica for it.
    """
    require_positive("start_rate", start_rate)
    require_positive("rtol", rtol)
    if slo.ttft_s is None and slo.tpot_s is None:
        raise InputError("find-max-rate needs an SLO: give a TTFT or a TPOT limit")
    tried: list[tuple[float, bool]] = []
    passing: tuple[float, ServingResult, Replica] | None = None

    def check(rate: float) -> bool:
        nonlocal passing
        workload = workload_at(rate)
        replica = replica_for(workload)
        result = run(workload, replica, slo)
        met = meets_percentiles(result)
        tried.append((rate, met))
        if met and (passing is None or rate > passing[0]):
            passing = (rate, result, replica)
        return met

    high = start_rate
    if check(high):
        low = high
        for _ in range(MAX_DOUBLINGS):
            high *= 2
            if not check(high):
                break
            low = high
        else:
            return _failure(2, f"the SLO still holds at {low:g} requests/s", tried)
    else:
        low = high / 2
        for _ in range(MAX_DOUBLINGS):
            if check(low):
                break
            high, low = low, low / 2
        else:
            return _failure(1, f"the SLO fails even at {low:g} requests/s", tried)
    while high - low > rtol * low:
        middle = (low + high) / 2
        low, high = (middle, high) if check(middle) else (low, middle)
    assert passing is not None  # low passed
    rate, result, replica = passing
    return CapacityResult(
        True,
        0,
        f"highest rate meeting the SLO: {rate:.4g} requests/s (next tried {high:.4g} fails)",
        rate,
        result,
        serving_economics(replica, 1, result),
        tuple(tried),
    )


def find_replicas(
    workload: Workload,
    replica_for: Callable[[Workload], Replica],
    slo: SLO,
    *,
    max_replicas: int = 4096,
) -> CapacityResult:
    """Fewest replicas that serve ``workload`` (round-robin) meeting ``slo``."""
    if slo.ttft_s is None and slo.tpot_s is None:
        raise InputError("find-replicas needs an SLO: give a TTFT or a TPOT limit")
    tried: list[tuple[float, bool]] = []
    found: dict[int, tuple[ServingResult, Replica]] = {}

    def check(count: int) -> bool:
        share = workload.thinned(count)
        replica = replica_for(share)
        result = run(share, replica, slo)
        met = meets_percentiles(result)
        tried.append((float(count), met))
        if met:
            found[count] = (result, replica)
        return met

    low, high = 0, 1
    while not check(high):
        low, high = high, high * 2
        if high > max_replicas:
            return _failure(1, f"even {low} replicas miss the SLO", tried)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if check(middle) else (middle, high)
    result, replica = found[high]
    return CapacityResult(
        True,
        0,
        f"fewest replicas meeting the SLO: {high} ({high * replica.devices} devices)",
        float(high),
        result,
        serving_economics(replica, high, result),
        tuple(tried),
    )


def _failure(status: int, message: str, tried: list[tuple[float, bool]]) -> CapacityResult:
    return CapacityResult(False, status, message, math.nan, None, None, tuple(tried))
