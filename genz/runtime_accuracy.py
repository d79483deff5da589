"""The accuracy block of a runtime profile: held-out error quantiles of measured /
predicted, overall, per device class and per metric (part of `genz.runtime`'s schema)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from roofline import InputError

from .runtime_values import as_mapping, check_known

ACCURACY_KEYS = frozenset(
    {"method", "hardware", "device_classes", "rows", "ratio_quantiles", "calibrated_from"}
)
#: Optional accuracy key: held-out error of the metrics other than batch latency.
ACCURACY_METRICS = ("ttft_s", "itl_s")
METRIC_ACCURACY_KEYS = frozenset({"rows", "ratio_quantiles", "device_classes"})
#: Fewest held-out rows of a metric (overall, or of a device class) whose own error
#: quantiles give an interval; below it the batch-latency quantiles stand in.
MIN_METRIC_ROWS = 20
#: Optional accuracy key: per metric, the held-out MAPE of the profile and of physics.
MAPE_KEYS = frozenset({"profile", "ideal", "sources", "rows"})
MAPE_METRICS = ("batch_latency_s", *ACCURACY_METRICS)
CLASS_ACCURACY_KEYS = frozenset(
    {"hardware", "rows", "ratio_quantiles", "in_sample_ratio_quantiles"}
)


@dataclass(frozen=True)
class ClassAccuracy:
    """Error on one device class's rows, quantiles of measured / predicted: held out
    (``ratio_quantiles``) and by the fitted profile itself (``in_sample_...``)."""

    hardware: tuple[str, ...]
    rows: int
    ratio_quantiles: Mapping[float, float]
    in_sample_ratio_quantiles: Mapping[float, float]


@dataclass(frozen=True)
class MetricAccuracy:
    """Held-out error of one metric besides batch latency (``ttft_s``, ``itl_s``):
    quantiles of measured / predicted over its ``rows``, and per device class."""

    rows: int
    ratio_quantiles: Mapping[float, float]
    classes: Mapping[str, ClassAccuracy]


@dataclass(frozen=True)
class HeldOutMape:
    """One metric's held-out error: the profile's and physics alone's (``ideal``) MAPE,
    %, averaged over ``sources`` (``rows`` values)."""

    profile: float
    ideal: float
    sources: int
    rows: int


@dataclass(frozen=True)
class Accuracy:
    """Cross-validated error of a profile: quantiles of measured / predicted batch
    latency, over all rows and per device class; ``metrics``: the same of TTFT and
    inter-token latency where rows measure them. ``metric`` names what the top-level
    quantiles measure: batch latency, or, for a profile calibrated on rows without one
    (decode-only rows), the first of `ACCURACY_METRICS` its rows measure."""

    method: str
    hardware: tuple[str, ...]
    rows: int
    ratio_quantiles: Mapping[float, float]
    classes: Mapping[str, ClassAccuracy]
    calibrated_from: str
    metrics: Mapping[str, MetricAccuracy] = field(default_factory=dict)
    metric: str = "batch_latency_s"
    held_out_mape: Mapping[str, HeldOutMape] = field(default_factory=dict)

    @property
    def device_classes(self) -> tuple[str, ...]:
        """The device classes measured."""
        return tuple(self.classes)


def accuracy_from_dict(entry: Any, label: str) -> Accuracy:
    check_known(
        as_mapping(entry, label), ACCURACY_KEYS | {"metrics", "metric", "held_out_mape"}, label
    )
    headline = str(entry.get("metric", "batch_latency_s"))
    if headline not in ("batch_latency_s", *ACCURACY_METRICS):
        raise InputError(
            f"{label}.metric: one of batch_latency_s, {', '.join(ACCURACY_METRICS)}; "
            f"got {headline!r}"
        )
    missing = sorted(ACCURACY_KEYS - set(entry))
    if missing:
        raise InputError(f"{label}: missing {missing[0]!r}")
    metrics = {}
    for metric, part in as_mapping(entry.get("metrics", {}), f"{label}.metrics").items():
        where = f"{label}.metrics.{metric}"
        if metric not in ACCURACY_METRICS:
            raise InputError(f"{where}: unknown metric; accepted: {', '.join(ACCURACY_METRICS)}")
        check_known(as_mapping(part, where), METRIC_ACCURACY_KEYS, where)
        missing = sorted(METRIC_ACCURACY_KEYS - set(part))
        if missing:
            raise InputError(f"{where}: missing {missing[0]!r}")
        metrics[str(metric)] = MetricAccuracy(
            rows=_count(part["rows"], f"{where}.rows"),
            ratio_quantiles=_quantiles(part["ratio_quantiles"], f"{where}.ratio_quantiles"),
            classes=_classes(part["device_classes"], f"{where}.device_classes"),
        )
    return Accuracy(
        method=str(entry["method"]),
        hardware=tuple(map(str, entry["hardware"])),
        rows=_count(entry["rows"], f"{label}.rows"),
        ratio_quantiles=_quantiles(entry["ratio_quantiles"], f"{label}.ratio_quantiles"),
        classes=_classes(entry["device_classes"], f"{label}.device_classes"),
        calibrated_from=str(entry["calibrated_from"]),
        metrics=metrics,
        metric=headline,
        held_out_mape=_mapes(entry.get("held_out_mape", {}), f"{label}.held_out_mape"),
    )


def _mapes(entry: Any, label: str) -> dict[str, HeldOutMape]:
    """Per metric: ``{profile: %, ideal: %, sources: N, rows: N}``."""
    out = {}
    for metric, part in as_mapping(entry, label).items():
        where = f"{label}.{metric}"
        if metric not in MAPE_METRICS:
            raise InputError(f"{where}: unknown metric; accepted: {', '.join(MAPE_METRICS)}")
        check_known(as_mapping(part, where), MAPE_KEYS, where)
        missing = sorted(MAPE_KEYS - set(part))
        if missing:
            raise InputError(f"{where}: missing {missing[0]!r}")
        percents = []
        for key in ("profile", "ideal"):
            value = part[key]
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value < float("inf")
            ):
                raise InputError(f"{where}.{key}: must be a percentage >= 0, got {value!r}")
            percents.append(float(value))
        out[str(metric)] = HeldOutMape(
            profile=percents[0],
            ideal=percents[1],
            sources=_count(part["sources"], f"{where}.sources"),
            rows=_count(part["rows"], f"{where}.rows"),
        )
    return out


def _count(value: Any, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{label}: must be a whole number >= 1, got {value!r}")
    return value


def _classes(entry: Any, label: str) -> dict[str, ClassAccuracy]:
    """Per device class: its hardware, rows and held-out and in-sample quantiles."""
    classes = {}
    for kind, part in as_mapping(entry, label).items():
        where = f"{label}.{kind}"
        check_known(as_mapping(part, where), CLASS_ACCURACY_KEYS, where)
        missing = sorted(CLASS_ACCURACY_KEYS - set(part))
        if missing:
            raise InputError(f"{where}: missing {missing[0]!r}")
        classes[str(kind)] = ClassAccuracy(
            hardware=tuple(map(str, part["hardware"])),
            rows=_count(part["rows"], f"{where}.rows"),
            ratio_quantiles=_quantiles(part["ratio_quantiles"], f"{where}.ratio_quantiles"),
            in_sample_ratio_quantiles=_quantiles(
                part["in_sample_ratio_quantiles"], f"{where}.in_sample_ratio_quantiles"
            ),
        )
    return classes


def _quantiles(entry: Any, label: str) -> dict[float, float]:
    """Quantile levels in (0, 1) to ratios > 0; 0.1 and 0.9 required."""
    quantiles = as_mapping(entry, label)
    parsed: dict[float, float] = {}
    for level, ratio in quantiles.items():
        try:
            level_f, ratio_f = float(level), float(ratio)
        except (TypeError, ValueError):
            raise InputError(f"{label}: numbers expected, got {level!r}: {ratio!r}") from None
        if not (0 < level_f < 1 and ratio_f > 0):
            raise InputError(
                f"{label}: levels must be in (0, 1) and ratios > 0, got {level!r}: {ratio!r}"
            )
        parsed[level_f] = ratio_f
    if not {0.1, 0.9} <= set(parsed):
        raise InputError(f"{label}: needs the 0.1 and 0.9 quantiles")
    return dict(sorted(parsed.items()))
