"""Intervals on predictions made with a runtime profile, from its cross-validated error.

A profile's ``accuracy`` block (written by calibration) holds quantiles of
``measured / predicted`` on rows held out of the fit (leave one hardware out when
the data span several): of batch latency, and (``metrics``) of TTFT (``ttft_s``) and
inter-token latency (``itl_s``, = TPOT) where rows measure them. An 80 % interval on
a predicted time ``t`` is ``[t q(0.1), t q(0.9)]``; on a rate (tokens/s) the
reciprocal. Throughput takes the batch-latency quantiles (every measured row's
throughput is ``batch x output / batch latency``, so the two errors are one).

Each metric's interval comes from its own held-out error when `MIN_METRIC_ROWS` or
more rows measured it, else from the profile's headline error (`Accuracy.metric`:
batch latency, or for a profile fitted on decode-only rows inter-token latency), and
the basis says so.
Within the chosen metric, the quantiles are those of the platform's device class
when two or more of its hardware were measured (each predicted from the others) and
the class has `MIN_METRIC_ROWS` rows of the metric (batch latency: any); on the one
measured device of a class, its in-sample error (labelled so); otherwise the error
of all rows. The interval always contains the point estimate. A platform of a
device class (`Platform.device_class`) on which the runtime's rows never measured
the metric (nor batch latency) is outside anything measured: no interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from genz import MIN_METRIC_ROWS, RuntimeProfile
from genz.fitting import Accuracy, ClassAccuracy
from roofline import Platform

#: What each metric is called in an interval's basis.
METRIC_LABELS = {
    "batch_latency_s": "batch latency",
    "ttft_s": "TTFT",
    "itl_s": "inter-token latency",
}


@dataclass(frozen=True)
class Interval:
    """``level`` interval ``[low, high]`` of a prediction (same unit), and its basis."""

    level: float
    low: float | None
    high: float | None
    basis: str

    def to_dict(self) -> dict[str, object]:
        """Plain mapping for JSON."""
        return {"level": self.level, "low": self.low, "high": self.high, "basis": self.basis}


def prediction_interval(
    value: float,
    profile: RuntimeProfile,
    platform: Platform,
    *,
    rate: bool = False,
    metric: str = "batch_latency_s",
) -> Interval:
    """The 80 % interval of ``value`` (a time, or a rate when ``rate``) on ``platform``,
    from the held-out error of ``metric`` (`METRIC_LABELS`; batch latency when it has
    fewer than `MIN_METRIC_ROWS` rows)."""
    accuracy = profile.accuracy
    if accuracy is None:
        return Interval(
            0.8, None, None, f"runtime {profile.name!r} carries no cross-validated error"
        )
    own = accuracy.metrics.get(metric)
    usable = own is not None and own.rows >= MIN_METRIC_ROWS and metric != accuracy.metric
    measured = {*accuracy.device_classes, *(own.classes if usable and own else ())}
    if platform.device_class not in measured:
        return Interval(
            0.8,
            None,
            None,
            f"outside anything measured: runtime {profile.name!r} was calibrated on "
            f"{', '.join(sorted(measured))} devices only, not {platform.device_class} "
            f"({METRIC_LABELS[metric]})",
        )
    quantiles, basis = _metric_quantiles(accuracy, profile.name, platform, metric)
    low_ratio, high_ratio = quantiles[0.1], quantiles[0.9]
    if rate:
        low, high = value / high_ratio, value / low_ratio
    else:
        low, high = value * low_ratio, value * high_ratio
    return Interval(0.8, min(low, value), max(high, value), basis)


#: Each predicted quantity's `prediction_interval` arguments, (``rate``, ``metric``):
#: TTFT and TPOT from their own held-out errors, end-to-end latency and throughput (a
#: rate) from batch latency's.
INTERVAL_KINDS: Mapping[str, tuple[bool, str]] = {
    "ttft_s": (False, "ttft_s"),
    "tpot_s": (False, "itl_s"),
    "e2e_s": (False, "batch_latency_s"),
    "throughput_tokens_per_s": (True, "batch_latency_s"),
}


def prediction_intervals(
    values: Mapping[str, float], profile: RuntimeProfile, platform: Platform
) -> dict[str, Interval]:
    """`prediction_interval` of each quantity of `INTERVAL_KINDS` in ``values``
    (``ttft_s``, ``tpot_s``, ``e2e_s`` in seconds, ``throughput_tokens_per_s``)."""
    return {
        key: prediction_interval(values[key], profile, platform, rate=rate, metric=metric)
        for key, (rate, metric) in INTERVAL_KINDS.items()
        if key in values
    }


def _metric_quantiles(
    accuracy: Accuracy, name: str, platform: Platform, metric: str
) -> tuple[Mapping[float, float], str]:
    """Quantiles for ``metric`` on ``platform`` and the sentence saying whose they are."""
    own = accuracy.metrics.get(metric)
    label, headline = METRIC_LABELS[metric], METRIC_LABELS[accuracy.metric]
    if metric == accuracy.metric or own is None or own.rows < MIN_METRIC_ROWS:
        quantiles, basis = _class_quantiles(
            accuracy.ratio_quantiles,
            accuracy.rows,
            accuracy.classes,
            1,
            accuracy,
            name,
            platform,
            headline,
        )
        if metric == accuracy.metric:
            return quantiles, basis
        rows = 0 if own is None else own.rows
        return quantiles, (
            f"{label}: {rows} held-out rows < {MIN_METRIC_ROWS}, so the {headline} "
            f"error stands in: {basis}"
        )
    return _class_quantiles(
        own.ratio_quantiles,
        own.rows,
        own.classes,
        MIN_METRIC_ROWS,
        accuracy,
        name,
        platform,
        label,
    )


def _class_quantiles(
    overall: Mapping[float, float],
    rows: int,
    classes: Mapping[str, ClassAccuracy],
    fewest: int,
    accuracy: Accuracy,
    name: str,
    platform: Platform,
    label: str = "batch latency",
) -> tuple[Mapping[float, float], str]:
    """The device class's held-out quantiles (two or more of its hardware measured,
    ``fewest`` rows or more), its in-sample ones on its one measured device, else those
    of every row, with the basis."""
    kind = platform.device_class
    seen = "measured" if platform.name in accuracy.hardware else "not measured"
    measured = classes.get(kind)
    if measured is None or measured.rows < fewest:
        count = 0 if measured is None else measured.rows
        return overall, (
            f"{accuracy.method} error of {name} {label} over all its classes ({rows} rows; "
            f"{kind}: {count} rows < {fewest}); {platform.name}: {seen}"
        )
    if len(measured.hardware) > 1:
        return measured.ratio_quantiles, (
            f"{accuracy.method} error of {name} {label} on {kind} "
            f"({', '.join(measured.hardware)}; {measured.rows} rows); {platform.name}: {seen}"
        )
    if platform.name in measured.hardware:  # the class's one measured device itself
        return measured.in_sample_ratio_quantiles, (
            f"IN-SAMPLE error of {name} {label} on {platform.name} ({measured.rows} rows), "
            f"the only {kind} device measured: no other device of its class to hold out"
        )
    # A new device of a class measured on one device: as unknown as a new class.
    return overall, (
        f"{name} measured on one {kind} device only ({measured.hardware[0]}): "
        f"{accuracy.method} error of {label} over all its classes ({rows} rows); "
        f"{platform.name}: {seen}"
    )
