"""Intervals on predictions made with a runtime profile, from its cross-validated error.

A profile's ``accuracy`` block (written by calibration) holds quantiles of
``measured / predicted`` batch latency on rows held out of the fit (leave one
hardware out when the data span several). An 80 % interval on a predicted time
``t`` is ``[t q(0.1), t q(0.9)]``; on a rate (tokens/s) the reciprocal. The quantiles are
those of the platform's device class when two or more of its hardware were
measured (each predicted from the others); on the one measured device of a class,
its in-sample error (labelled so); on another device of such a class, the error of
all rows. The interval
always contains the point estimate. A platform of a device class (`Platform.device_class`)
the runtime was never measured on is outside anything measured: no interval.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline import Platform

from .runtime import RuntimeProfile


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
    value: float, profile: RuntimeProfile, platform: Platform, *, rate: bool = False
) -> Interval:
    """The 80 % interval of ``value`` (a time, or a rate when ``rate``) on ``platform``."""
    accuracy = profile.accuracy
    if accuracy is None:
        return Interval(
            0.8, None, None, f"runtime {profile.name!r} carries no cross-validated error"
        )
    if platform.device_class not in accuracy.device_classes:
        return Interval(
            0.8,
            None,
            None,
            f"outside anything measured: runtime {profile.name!r} was calibrated on "
            f"{', '.join(accuracy.device_classes)} devices only, not {platform.device_class}",
        )
    measured = accuracy.classes[platform.device_class]
    seen = "measured" if platform.name in accuracy.hardware else "not measured"
    if len(measured.hardware) > 1:
        quantiles = measured.ratio_quantiles
        basis = (
            f"{accuracy.method} error of {profile.name} batch latency on "
            f"{platform.device_class} ({', '.join(measured.hardware)}; {measured.rows} rows); "
            f"{platform.name}: {seen}"
        )
    elif platform.name in measured.hardware:  # the class's one measured device itself
        quantiles = measured.in_sample_ratio_quantiles
        basis = (
            f"IN-SAMPLE error of {profile.name} batch latency on {platform.name} "
            f"({measured.rows} rows), the only {platform.device_class} device measured: "
            "no other device of its class to hold out"
        )
    else:  # a new device of a class measured on one device: as unknown as a new class
        quantiles = accuracy.ratio_quantiles
        basis = (
            f"{profile.name} measured on one {platform.device_class} device only "
            f"({measured.hardware[0]}): {accuracy.method} error over all its classes "
            f"({accuracy.rows} rows); {platform.name}: {seen}"
        )
    low_ratio, high_ratio = quantiles[0.1], quantiles[0.9]
    if rate:
        low, high = value / high_ratio, value / low_ratio
    else:
        low, high = value * low_ratio, value * high_ratio
    return Interval(0.8, min(low, value), max(high, value), basis)
