"""Per-request latencies, percentiles, throughput, goodput and sustainability of a run.

- TTFT = first token - arrival; TPOT = (finish - first token) / (output - 1) (requests
  of one output token have none); end-to-end = finish - arrival. Seconds.
- ITL = the gap between successive streamed chunks of a request, over every chunk of
  the run (`emissions`; one token a chunk, or a multi-step block's tokens together).
- Throughput counts generated tokens of finished requests over the span from the
  first arrival to the last finish; goodput counts only requests meeting every SLO
  given (DistServe's definition), per second of the same span.
- The prefix hit rate is the share of requests carrying a shared prefix that found it
  in their replica's prefix cache when first admitted.
- A rate is *not sustainable* when the replica falls behind: over the second half of
  the arrival window fewer than 90 % as many requests finish as arrive (the waiting
  queue then grows without bound as the run lengthens). Not judged when every request
  arrives at once (offline runs).
- Queueing delay = first admission to a batch - the engine seeing the request (its
  send time plus any front-end time, `SchedulerConfig.request_overhead_s`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

from .engine import RunRecord
from .weighted import exact_sum, weighted_percentiles
from .workload import Workload

if TYPE_CHECKING:
    from .energy import ServingEconomics

PERCENTILES = (50, 90, 99)
#: Finishes over arrivals in the second half of the window below which a rate is
#: not sustainable.
SUSTAIN_RATIO = 0.9

Floats = NDArray[np.float64]


@dataclass(frozen=True)
class SLO:
    """Latency objectives at one percentile (None: not checked), seconds: TTFT, TPOT,
    ITL (the gap between streamed chunks over every chunk of the run, also called
    TBT) and queueing delay (arrival at the engine to first admission to a batch).
    A request meets the SLO (goodput) when its TTFT, TPOT and queueing delay are
    within their limits; the ITL limit is checked on the run's percentile only (a
    request has many gaps)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    percentile: float = 99.0
    itl_s: float | None = None
    queue_s: float | None = None

    @property
    def limits(self) -> tuple[tuple[str, str, float | None], ...]:
        """(result field, label, limit) of every objective, given or not."""
        return (
            ("ttft_s", "TTFT", self.ttft_s),
            ("tpot_s", "TPOT", self.tpot_s),
            ("itl_s", "ITL", self.itl_s),
            ("queue_s", "queueing delay", self.queue_s),
        )

    def __post_init__(self) -> None:
        for label in ("ttft_s", "tpot_s", "itl_s", "queue_s"):
            value = getattr(self, label)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise InputError(f"slo {label} must be a positive number of seconds, got {value}")
        if not 0 < self.percentile < 100:
            raise InputError(f"slo percentile must be in (0, 100), got {self.percentile}")


@dataclass(frozen=True)
class ServingResult:
    """Outcome of a simulated run (SI units). Per-request arrays are in workload order.
    ``economics`` (energy, power, cost; `energy.pool_economics`) is set by
    `capacity.run` and `capacity.run_disaggregated` when the run generated tokens."""

    arrival_s: Floats
    input_tokens: NDArray[np.int64]
    output_tokens: NDArray[np.int64]
    ttft_s: Floats
    tpot_s: Floats
    e2e_s: Floats
    preemptions: NDArray[np.int64]
    rejected: NDArray[np.bool_]
    meets_slo: NDArray[np.bool_]
    slo: SLO
    timeline_s: Floats
    waiting: NDArray[np.int64]
    running: NDArray[np.int64]
    kv_occupancy: Floats
    sustainable: bool
    verdict: str
    summary: dict[str, float] = field(default_factory=dict)
    economics: ServingEconomics | None = None
    queue_s: Floats = field(default_factory=lambda: np.zeros(0))
    itl_s: Floats = field(default_factory=lambda: np.zeros(0))
    itl_count: Floats = field(default_factory=lambda: np.zeros(0))

    def to_dict(self) -> dict[str, object]:
        """Summary figures, the verdict and the economics (JSON-ready)."""
        money = None if self.economics is None else self.economics.to_dict()
        return {
            **self.summary,
            "sustainable": self.sustainable,
            "verdict": self.verdict,
            "economics": money,
        }

    def request_rows(self) -> dict[str, NDArray[np.generic]]:
        """Per-request columns for a CSV."""
        return {
            "arrival_s": self.arrival_s,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "e2e_s": self.e2e_s,
            "preemptions": self.preemptions,
            "rejected": self.rejected,
            "meets_slo": self.meets_slo,
        }


def _percentiles(name: str, values: Floats) -> dict[str, float]:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return {f"{name}_p{p}": math.nan for p in PERCENTILES} | {f"{name}_mean": math.nan}
    points = np.percentile(finite, PERCENTILES)
    return {f"{name}_p{p}": float(v) for p, v in zip(PERCENTILES, points, strict=True)} | {
        f"{name}_mean": float(finite.mean())
    }


def _itl(record: RunRecord) -> dict[str, float]:
    """Percentiles and mean of the gaps between a request's streamed chunks over every
    chunk of the run (`emissions`; a client's ITL, distinct from the per-request TPOT)."""
    gaps, counts = record.itl_s, record.itl_count
    points = weighted_percentiles(gaps, counts, PERCENTILES)
    total = float(counts.sum())
    # exactly rounded (math.fsum's sum), so the mean does not depend on how BLAS splits a
    # dot product
    mean = exact_sum(gaps, counts) / total if total > 0 else math.nan
    return {f"itl_s_p{p}": v for p, v in zip(PERCENTILES, points, strict=True)} | {
        "itl_s_mean": mean
    }


def _sustainability(arrival: Floats, finish: Floats) -> tuple[bool, str]:
    end = float(arrival[-1]) if len(arrival) else 0.0
    if len(arrival) and end == float(arrival[0]):
        return True, "every request arrives at once (offline): sustainability is not judged"
    half = end / 2
    arrived = int(np.sum(arrival >= half))
    finished = int(np.sum((finish >= half) & (finish <= end)))
    if arrived < 20:
        return True, "too few arrivals in the second half of the window to judge"
    ratio = finished / arrived
    if ratio < SUSTAIN_RATIO:
        return False, (
            f"NOT SUSTAINABLE: {finished} requests finished while {arrived} arrived in the "
            f"second half of the window ({ratio:.0%}); the queue grows with the run"
        )
    return True, f"sustainable: {finished} finished / {arrived} arrived in the second half"


def _nothing_served(record: RunRecord) -> str:
    """The verdict of a run in which no request finished and some were rejected."""
    rejected = int(record.rejected.sum())
    return (
        f"NOTHING SERVED: {rejected} of {len(record.rejected)} request(s) rejected, none "
        f"finished (a rejected request needs more than the {record.kv_capacity_tokens} KV "
        "tokens the replica holds); raise the KV budget or shorten the requests"
    )


def _hit_rate(hits: NDArray[np.int8]) -> float:
    """Share of the admitted requests with a prefix that found it cached (NaN: none)."""
    counted = hits[hits >= 0]
    return float(counted.mean()) if len(counted) else math.nan


def summarise(
    workload: Workload,
    first_token_s: Floats,
    finish_s: Floats,
    record: RunRecord,
    slo: SLO | None = None,
) -> ServingResult:
    """Latencies, percentiles and the verdict of a run (``record`` gives the timeline)."""
    slo = slo or SLO()
    arrival = workload.arrival_s
    outputs = workload.output_tokens
    ttft = first_token_s - arrival
    e2e = finish_s - arrival
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(outputs > 1, (finish_s - first_token_s) / (outputs - 1), math.nan)
    done = np.isfinite(finish_s)
    meets = done.copy()
    if slo.ttft_s is not None:
        meets &= ttft <= slo.ttft_s
    if slo.tpot_s is not None:
        meets &= ~(tpot > slo.tpot_s)
    admitted = record.admitted_s
    # queueing delay: from the engine seeing the request (sent + front end) to admission
    seen = arrival + _front_end_s(record, arrival)
    queue = np.full(len(arrival), math.nan) if admitted is None else admitted - seen
    if slo.queue_s is not None:
        meets &= queue <= slo.queue_s
    span = float(np.nanmax(finish_s) - arrival[0]) if done.any() else math.nan
    sustainable, verdict = _sustainability(arrival, finish_s)
    if not done.any() and record.rejected.any():
        sustainable, verdict = False, _nothing_served(record)
    capacity = max(record.kv_capacity_tokens, 1)
    occupancy = record.kv_tokens / capacity
    durations = np.diff(record.timeline_s, append=record.timeline_s[-1:])
    weights = durations if durations.sum() > 0 else np.ones_like(durations)
    summary: dict[str, float] = {
        "requests": float(len(arrival)),
        "finished": float(done.sum()),
        "rejected": float(record.rejected.sum()),
        "offered_rate_per_s": len(arrival) / float(arrival[-1]) if arrival[-1] > 0 else math.nan,
        **_percentiles("ttft_s", ttft),
        **_percentiles("tpot_s", tpot),
        **_percentiles("e2e_s", e2e),
        **_itl(record),
        **({} if admitted is None else _percentiles("queue_s", queue)),
        # every sample is returned (one beam is): `Workload.samples`
        "throughput_tokens_per_s": float(outputs[done].sum()) * workload.samples / span,
        "throughput_requests_per_s": float(done.sum()) / span,
        "goodput_requests_per_s": float(meets.sum()) / span,
        "goodput_tokens_per_s": float(outputs[meets].sum()) * workload.samples / span,
        "slo_attainment": float(meets.mean()),
        "preemptions": float(record.preemptions.sum()),
        "prefix_hit_rate": _hit_rate(record.prefix_hits),
        "kv_capacity_tokens": float(record.kv_capacity_tokens),
        "kv_occupancy_mean": float(np.average(occupancy, weights=weights)),
        "kv_occupancy_peak": float(occupancy.max(initial=0.0)),
        "queue_mean": float(np.average(record.waiting, weights=weights)),
        "queue_peak": float(record.waiting.max(initial=0)),
        "running_mean": float(np.average(record.running, weights=weights)),
        "steps": float(record.steps),
        "span_s": span,
    }
    return ServingResult(
        arrival_s=arrival,
        input_tokens=workload.input_tokens,
        output_tokens=outputs,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        preemptions=record.preemptions,
        rejected=record.rejected,
        meets_slo=meets,
        slo=slo,
        timeline_s=record.timeline_s,
        waiting=record.waiting,
        running=record.running,
        kv_occupancy=occupancy,
        sustainable=sustainable,
        verdict=verdict,
        summary=summary,
        queue_s=queue,
        itl_s=record.itl_s,
        itl_count=record.itl_count,
    )


def _front_end_s(record: RunRecord, arrival: Floats) -> Floats | float:
    """Time each request spent in the front end before the engine saw it (0 when
    the record carries no engine arrival times)."""
    seen = record.engine_arrival_s
    return 0.0 if seen is None else seen - arrival


def slo_misses(result: ServingResult) -> list[str]:
    """Why the run misses its SLO percentiles, one phrase per reason (empty: it meets
    them): not sustainable, rejected requests, or a percentile above its limit (named
    with its value, e.g. ``P99 TTFT 2.41 s > 2 s``)."""
    slo, summary = result.slo, result.summary
    misses = []
    if not result.sustainable:
        misses.append("the rate is not sustainable")
    if summary["rejected"] > 0:
        misses.append(
            f"{summary['rejected']:.0f} request(s) rejected (prompt exceeds the KV cache)"
        )
    for name, label, limit in slo.limits:
        if limit is None:
            continue
        value = _percentile_of(result, name, slo.percentile)
        if value is not None and value > limit:
            misses.append(f"P{slo.percentile:g} {label} {value:.4g} s > {limit:g} s")
    return misses


def _percentile_of(result: ServingResult, name: str, percentile: float) -> float | None:
    """A percentile of a result's per-request figure (ITL: over every streamed chunk,
    weighted by the sequences that saw it); None when there is none."""
    if name == "itl_s":
        if not float(result.itl_count.sum()) > 0:
            return None
        return float(weighted_percentiles(result.itl_s, result.itl_count, (percentile,))[0])
    values = getattr(result, name)
    finite = values[np.isfinite(values)]
    return float(np.percentile(finite, percentile)) if len(finite) else None


def meets_percentiles(result: ServingResult) -> bool:
    """The run is sustainable, rejects nothing and meets its SLO percentiles of TTFT
    and TPOT (`slo_misses` is empty)."""
    return not slo_misses(result)
