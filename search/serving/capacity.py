"""Capacity planning on the simulator: the highest rate a replica sustains within the
SLO percentiles, the fewest replicas (or prefill and decode replicas) for a rate, and
tokens per dollar and per joule there (`energy.pool_economics`: genz's power model
step by step).

The searches follow scipy's result shape (``success``, ``status``, ``message``).
Every evaluation simulates a workload drawn with the same seed, so a search is
deterministic; the rate search doubles the rate until the SLO fails, then bisects to
``rtol``; a count search doubles the count until the SLO holds, then bisects.
Colocated replicas and disaggregated pools are simulated whole, every request routed
to its pool's least-loaded replica (`routing.route`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from roofline import InputError, require_positive

from .energy import Pool, ServingEconomics, pool_economics
from .engine import RunRecord
from .metrics import SLO, ServingResult, meets_percentiles, slo_misses, summarise
from .schedulers import (
    KVLink,
    Replica,
    prefill_pool,
    simulate_disaggregated,
    simulate_replica,
)
from .workload import Workload

#: Most doublings of the rate (from ``start_rate``) or of the replica count tried.
MAX_DOUBLINGS = 24


def run(
    workload: Workload,
    replica: Replica,
    slo: SLO | None = None,
    progress: Callable[[int], None] | None = None,
    *,
    replicas: int = 1,
    routing: str = "least-loaded",
) -> ServingResult:
    """Simulate ``workload`` on ``replicas`` copies of ``replica`` (requests routed by
    ``routing``, `routing.route`) and summarise it against ``slo``."""
    record = simulate_replica(workload, replica, progress, replicas, routing)
    if record.arrival_s is not None:  # closed loop: latencies count from the send times
        workload = replace(workload, arrival_s=record.arrival_s)
    result = summarise(workload, record.first_token_s, record.finish_s, record, slo)
    return with_economics(result, [(replica, replicas, record)])


def with_economics(result: ServingResult, pools: Sequence[Pool]) -> ServingResult:
    """``result`` with the economics of its ``(replica, count, record)`` pools
    (`energy.pool_economics`); unchanged when the run generated no tokens."""
    span = result.summary["span_s"]
    tokens = result.summary["throughput_tokens_per_s"] * span
    if not (math.isfinite(span) and span > 0 and tokens > 0):
        return result
    return replace(result, economics=pool_economics(pools, span, tokens))


def run_disaggregated(
    workload: Workload,
    prefill: Replica,
    decode: Replica,
    link: KVLink,
    slo: SLO | None = None,
    *,
    prefill_replicas: int = 1,
    decode_replicas: int = 1,
    progress: Callable[[int], None] | None = None,
    routing: str = "least-loaded",
) -> ServingResult:
    """Simulate a pool of prefill replicas feeding a pool of decode replicas
    (`simulate_disaggregated`, requests routed by ``routing``); the KV occupancy and
    queue timeline are the decode pool's."""
    both = simulate_disaggregated(
        workload,
        prefill,
        decode,
        link=link,
        prefill_replicas=prefill_replicas,
        decode_replicas=decode_replicas,
        progress=progress,
        routing=routing,
    )
    if both.combined.arrival_s is not None:  # closed loop: latencies count from the sends
        workload = replace(workload, arrival_s=both.combined.arrival_s)
    result = summarise(workload, both.first_token_s, both.finish_s, both.combined, slo)
    return with_economics(
        result, [(prefill, prefill_replicas, both.prefill), (decode, decode_replicas, both.decode)]
    )


@dataclass(frozen=True)
class CapacityResult:
    """Outcome of `find_max_rate` or `find_replicas`.

    ``value`` is the rate (requests/s) or the replica count found (NaN when
    ``success`` is False; for pools, prefill plus decode replicas); ``result`` the run
    there; ``evaluations`` every ``(value tried, met)`` in order, and for pools
    ``labels`` names the pool of each and ``pools`` is (prefill, decode) replicas.
    """

    success: bool
    status: int
    message: str
    value: float
    result: ServingResult | None
    economics: ServingEconomics | None
    evaluations: tuple[tuple[float, bool], ...] = field(default=())
    labels: tuple[str, ...] = field(default=())
    pools: tuple[int, int] | None = None


#: What one rate evaluation gives: the requests drawn and the run (with its economics).
Evaluation = tuple[int, ServingResult]


def _search_rate(
    evaluate: Callable[[float], Evaluation], slo: SLO, start_rate: float, rtol: float
) -> CapacityResult:
    """Highest rate whose evaluation meets ``slo`` (module doc). Halving stops at a
    rate that draws a single request (every lower rate draws the same one); failing
    there, the message names what the SLO misses (`slo_misses`)."""
    require_positive("start_rate", start_rate)
    require_positive("rtol", rtol)
    if all(limit is None for _, _, limit in slo.limits):
        raise InputError(
            "find-max-rate needs an SLO: give a TTFT, TPOT, ITL or queueing-delay limit"
        )
    tried: list[tuple[float, bool]] = []
    passing: tuple[float, ServingResult] | None = None
    last: tuple[int, ServingResult] | None = None

    def check(rate: float) -> bool:
        nonlocal passing, last
        count, result = evaluate(rate)
        met = meets_percentiles(result)
        tried.append((rate, met))
        last = (count, result)
        if met and (passing is None or rate > passing[0]):
            passing = (rate, result)
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
            assert last is not None
            if last[0] <= 1:
                break
            high, low = low, low / 2
        if passing is None:
            assert last is not None
            count, result = last
            return _failure(
                1,
                f"the SLO cannot be met: even at {tried[-1][0]:.3g} requests/s "
                f"({count} request(s)) {'; '.join(slo_misses(result))}",
                tried,
            )
    while high - low > rtol * low:
        middle = (low + high) / 2
        low, high = (middle, high) if check(middle) else (low, middle)
    assert passing is not None  # low passed
    rate, result = passing
    return CapacityResult(
        True,
        0,
        f"highest rate meeting the SLO: {rate:.4g} requests/s (next tried {high:.4g} fails)",
        rate,
        result,
        result.economics,
        tuple(tried),
    )


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
    builds the replica for it. Fails (status 1, the missed percentile named) when
    even a rate drawing a single request misses the SLO.
    """

    def evaluate(rate: float) -> Evaluation:
        workload = workload_at(rate)
        replica = replica_for(workload)
        return len(workload), run(workload, replica, slo)

    return _search_rate(evaluate, slo, start_rate, rtol)


def find_disaggregated_max_rate(
    workload_at: Callable[[float], Workload],
    pools_for: Callable[[Workload], tuple[Replica, Replica, Callable[[int, int], KVLink]]],
    slo: SLO,
    *,
    prefill_replicas: int = 1,
    decode_replicas: int = 1,
    start_rate: float = 1.0,
    rtol: float = 0.02,
    routing: str = "least-loaded",
) -> CapacityResult:
    """Highest request rate ``prefill_replicas`` prefill and ``decode_replicas``
    decode replicas serve meeting ``slo`` (`run_disaggregated` at each rate, the same
    search as `find_max_rate`). ``pools_for(workload)`` builds the prefill and decode
    replicas for a workload and the KV link of a pair (`kv_link`); the economics count
    the devices of both pools."""

    def evaluate(rate: float) -> Evaluation:
        workload = workload_at(rate)
        prefill, decode, link_for = pools_for(workload)
        result = run_disaggregated(
            workload,
            prefill,
            decode,
            link_for(prefill_replicas, decode_replicas),
            slo,
            prefill_replicas=prefill_replicas,
            decode_replicas=decode_replicas,
            routing=routing,
        )
        return len(workload), result

    found = _search_rate(evaluate, slo, start_rate, rtol)
    return replace(found, pools=(prefill_replicas, decode_replicas))


def _fewest(check: Callable[[int], bool], most: int) -> int | None:
    """Smallest count in [1, most] passing ``check`` (assumed monotone): double, then
    bisect; None when even the doubling past ``most`` fails."""
    low, high = 0, 1
    while not check(high):
        low, high = high, high * 2
        if high > most:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if check(middle) else (middle, high)
    return high


def find_replicas(
    workload: Workload,
    replica_for: Callable[[Workload], Replica],
    slo: SLO,
    *,
    max_replicas: int = 4096,
    routing: str = "least-loaded",
) -> CapacityResult:
    """Fewest replicas that serve ``workload`` meeting ``slo``: each count's pool is
    simulated whole, requests routed by ``routing`` (`routing.route`)."""
    if all(limit is None for _, _, limit in slo.limits):
        raise InputError(
            "find-replicas needs an SLO: give a TTFT, TPOT, ITL or queueing-delay limit"
        )
    replica = replica_for(workload)
    tried: list[tuple[float, bool]] = []
    found: dict[int, ServingResult] = {}

    def check(count: int) -> bool:
        result = run(workload, replica, slo, replicas=count, routing=routing)
        met = meets_percentiles(result)
        tried.append((float(count), met))
        if met:
            found[count] = result
        return met

    count = _fewest(check, max_replicas)
    if count is None:
        return _failure(1, f"even {int(tried[-1][0])} replicas miss the SLO", tried)
    result = found[count]
    return CapacityResult(
        True,
        0,
        f"fewest replicas meeting the SLO: {count} ({count * replica.devices} devices, "
        f"{routing} routing)",
        float(count),
        result,
        result.economics,
        tuple(tried),
    )


def find_disaggregated_replicas(
    workload: Workload,
    prefill: Replica,
    decode: Replica,
    slo: SLO,
    link_for: Callable[[int, int], KVLink],
    *,
    max_replicas: int = 1024,
    routing: str = "least-loaded",
) -> CapacityResult:
    """Fewest prefill replicas N and decode replicas M that serve ``workload`` meeting
    ``slo`` (both pools simulated whole, requests routed by ``routing``).

    TTFT is set by the prefill pool alone, so N is the fewest prefill replicas whose
    pool keeps up (sustainable, nothing rejected) within the TTFT percentile; M is then
    the fewest decode replicas for which the whole run meets the SLO. Every feasible
    pair has at least N prefill replicas, and M is the fewest for the KV arrivals of N;
    with arrivals that do not get harder for the decode pool as N grows, (N, M) has the
    fewest devices and the lowest cost of all feasible pairs. ``link_for(N, M)`` gives
    the KV link of a pair (`kv_link`).
    """
    if all(limit is None for _, _, limit in slo.limits):
        raise InputError(
            "find-replicas needs an SLO: give a TTFT, TPOT, ITL or queueing-delay limit"
        )
    tried: list[tuple[float, bool]] = []
    labels: list[str] = []
    firsts: dict[int, RunRecord] = {}
    ttft_only = SLO(ttft_s=slo.ttft_s, percentile=slo.percentile)

    def check_prefill(count: int) -> bool:
        record = prefill_pool(workload, prefill, count, routing=routing)
        result = summarise(workload, record.finish_s, record.finish_s, record, ttft_only)
        met = meets_percentiles(result)
        tried.append((float(count), met))
        labels.append("prefill")
        if met:
            firsts[count] = record
        return met

    n = _fewest(check_prefill, max_replicas)
    if n is None:
        return _failure(
            1, f"even {int(tried[-1][0])} prefill replicas miss the TTFT SLO", tried, labels
        )
    found: dict[int, ServingResult] = {}

    def check_decode(count: int) -> bool:
        both = simulate_disaggregated(
            workload,
            prefill,
            decode,
            link=link_for(n, count),
            prefill_replicas=n,
            decode_replicas=count,
            prefilled=firsts[n],
            routing=routing,
        )
        result = summarise(workload, both.first_token_s, both.finish_s, both.combined, slo)
        result = with_economics(result, [(prefill, n, both.prefill), (decode, count, both.decode)])
        met = meets_percentiles(result)
        tried.append((float(count), met))
        labels.append("decode")
        if met:
            found[count] = result
        return met

    m = _fewest(check_decode, max_replicas)
    if m is None:
        return _failure(
            1,
            f"with {n} prefill replicas even {int(tried[-1][0])} decode replicas miss the SLO",
            tried,
            labels,
        )
    result = found[m]
    devices = n * prefill.devices + m * decode.devices
    return CapacityResult(
        True,
        0,
        f"fewest pools meeting the SLO: {n} prefill + {m} decode replicas ({devices} devices)",
        float(n + m),
        result,
        result.economics,
        tuple(tried),
        tuple(labels),
        (n, m),
    )


def _failure(
    status: int,
    message: str,
    tried: list[tuple[float, bool]],
    labels: list[str] | None = None,
) -> CapacityResult:
    return CapacityResult(
        False, status, message, math.nan, None, None, tuple(tried), tuple(labels or ())
    )
