"""Objectives and constraints of a co-design search, and why a space is infeasible.

An objective names a column of the evaluated designs and whether smaller or larger
is better. Constraints are upper (``max_*``) or lower (``min_*``) bounds on columns,
in SI units; every design must also fit in its device's memory (the capacity wall).
When no design meets them all, `infeasible_message` names the constraint that binds
and the best value reachable while meeting the others.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import NDArray

from roofline import InputError, require_positive


@dataclass(frozen=True)
class Objective:
    """A column to minimise or maximise; ``scale`` converts SI to the ``unit`` shown."""

    name: str
    column: str
    sense: str
    unit: str = ""
    scale: float = 1.0

    def show(self, value: float) -> str:
        """``value`` (SI) in display units, 4 significant digits."""
        unit = f" {self.unit}" if self.unit else ""
        return f"{value / self.scale:.4g}{unit}"


OBJECTIVES = {
    objective.name: objective
    for objective in (
        Objective("loss", "loss", "min", "nats/token"),
        Objective("perplexity", "perplexity", "min"),
        Objective("tpot", "tpot_s", "min", "ms", 1e-3),
        Objective("ttft", "ttft_s", "min", "ms", 1e-3),
        Objective("e2e", "e2e_s", "min", "s"),
        Objective("throughput", "throughput_tokens_per_s", "max", "tok/s"),
        Objective("throughput_per_device", "throughput_tokens_per_s_per_device", "max", "tok/s"),
        Objective("memory", "footprint_bytes", "min", "GB (decimal)", 1e9),
        Objective("devices", "devices", "min"),
        Objective("training_time", "training_time_s", "min", "h", 3600.0),
        Objective("training_cost", "training_cost_usd", "min", "USD"),
        Objective("device_cost_usd", "device_cost_usd", "min", "USD"),
        Objective("area_mm2", "area_mm2", "min", "mm^2"),
        Objective("tdp_w", "tdp_w", "min", "W"),
        Objective("usd_per_mtok", "usd_per_mtok", "min", "USD/Mtok"),
        Objective("perf_per_cost", "perf_per_cost", "max", "tok/s per device per USD"),
    )
}
MAX_OBJECTIVES = 4


def parse_objectives(value: str | Iterable[str]) -> tuple[Objective, ...]:
    """``'loss,tpot'`` or ``['loss', 'tpot']`` -> objectives (1 to 4, no repeats)."""
    if not isinstance(value, str | list | tuple):
        raise InputError(
            f"objectives must be a list or a comma-separated text naming 1 to {MAX_OBJECTIVES} "
            f"of: {', '.join(OBJECTIVES)}; got {value!r}"
        )
    names = value.split(",") if isinstance(value, str) else list(value)
    names = [str(name).strip().lower() for name in names if str(name).strip()]
    if not 1 <= len(names) <= MAX_OBJECTIVES:
        raise InputError(
            f"objectives must name 1 to {MAX_OBJECTIVES} of: {', '.join(OBJECTIVES)}; got {value!r}"
        )
    unknown = [name for name in names if name not in OBJECTIVES]
    if unknown:
        raise InputError(f"unknown objective {unknown[0]!r}; accepted: {', '.join(OBJECTIVES)}")
    if len(set(names)) != len(names):
        raise InputError(f"objectives must not repeat, got {', '.join(names)}")
    return tuple(OBJECTIVES[name] for name in names)


@dataclass(frozen=True)
class Bound:
    """One constraint: ``column`` at most (``'max'``) or at least (``'min'``) ``limit``."""

    label: str
    column: str
    kind: str
    limit: float
    unit: str
    scale: float

    def show(self, value: float) -> str:
        """``value`` (SI) in display units."""
        unit = f" {self.unit}" if self.unit else ""
        return f"{value / self.scale:.4g}{unit}"

    def ok(self, values: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Which values meet the bound."""
        return values <= self.limit if self.kind == "max" else values >= self.limit


#: Constraints field -> (column, kind, CLI/YAML name, factor from the human unit to SI, unit).
CONSTRAINT_FIELDS = {
    "max_memory_bytes": ("footprint_bytes", "max", "max-memory-gb", 1e9, "GB (decimal)"),
    "max_tpot_s": ("tpot_s", "max", "max-tpot-ms", 1e-3, "ms"),
    "max_ttft_s": ("ttft_s", "max", "max-ttft-ms", 1e-3, "ms"),
    "min_throughput_tokens_per_s": (
        "throughput_tokens_per_s",
        "min",
        "min-throughput",
        1.0,
        "tok/s",
    ),
    "max_loss": ("loss", "max", "max-loss", 1.0, "nats/token"),
    "max_perplexity": ("perplexity", "max", "max-perplexity", 1.0, ""),
    "max_devices": ("devices", "max", "max-devices", 1.0, ""),
    "max_training_time_s": ("training_time_s", "max", "max-training-hours", 3600.0, "h"),
    "max_training_cost_usd": (
        "training_cost_usd",
        "max",
        "max-training-cost-usd",
        1.0,
        "USD",
    ),
    "max_device_cost_usd": ("device_cost_usd", "max", "max-device-cost-usd", 1.0, "USD"),
    "max_area_mm2": ("area_mm2", "max", "max-area-mm2", 1.0, "mm^2"),
    "max_tdp_w": ("tdp_w", "max", "max-tdp-w", 1.0, "W"),
    "max_usd_per_mtok": ("usd_per_mtok", "max", "max-usd-per-mtok", 1.0, "USD/Mtok"),
}
#: The capacity wall: footprint over the device's capacity, at most 1.
CAPACITY = Bound("device memory capacity", "capacity_ratio", "max", 1.0, "x capacity", 1.0)
#: Objective columns a preset may lack (no price_usd, power_w or modelled area: NaN).
MAYBE_UNKNOWN = ("device_cost_usd", "area_mm2", "tdp_w", "usd_per_mtok", "perf_per_cost")


def known_value_bounds(objectives: Iterable[Objective]) -> tuple[Bound, ...]:
    """For each chosen objective in `MAYBE_UNKNOWN`, a bound only a known (finite or
    infinite, not NaN) value meets: designs without one leave the frontier by name."""
    return tuple(
        Bound(
            f"{o.name} known (presets without price, power or area have none)",
            o.column,
            "max" if o.sense == "min" else "min",
            math.inf if o.sense == "min" else -math.inf,
            o.unit,
            o.scale,
        )
        for o in objectives
        if o.column in MAYBE_UNKNOWN
    )


#: ``within_data``: the design lies inside the law's data domain (``extrapolated`` is 0).
WITHIN_DATA = Bound("inside the law's data domain", "extrapolated", "max", 0.0, "", 1.0)
#: ``within_data`` too: the design holds every dimension the law cannot price (its data did
#: not vary it: GQA ratio, FFN ratio, vocabulary, experts) at the base model's value.
WITHIN_PRICED = Bound(
    "at the base model's value on the law's unpriced dimensions", "unpriced", "max", 0.0, "", 1.0
)


@dataclass(frozen=True)
class Constraints:
    """Bounds every design must meet (SI units; None leaves a quantity free).

    ``max_memory_bytes`` bounds the per-device footprint (weights + KV cache +
    activations); ``max_devices`` the devices one replica set uses (tp*pp*ep*dp);
    ``max_training_time_s`` and ``max_training_cost_usd`` the training estimate of the
    space's ``training`` section (`search.codesign.model.design_training_seconds`).
    """

    max_memory_bytes: float | None = None
    max_tpot_s: float | None = None
    max_ttft_s: float | None = None
    min_throughput_tokens_per_s: float | None = None
    max_loss: float | None = None
    max_perplexity: float | None = None
    max_devices: float | None = None
    max_training_time_s: float | None = None
    max_training_cost_usd: float | None = None
    max_device_cost_usd: float | None = None
    max_area_mm2: float | None = None
    max_tdp_w: float | None = None
    max_usd_per_mtok: float | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None:
                continue
            label = CONSTRAINT_FIELDS[item.name][2]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"{label} must be a number > 0, got {value!r}")
            if not (np.isfinite(value) and value > 0):
                raise InputError(f"{label} must be a finite number > 0, got {value!r}")

    @classmethod
    def from_human(cls, values: Mapping[str, object], origin: str = "constraints") -> Constraints:
        """From CLI/YAML names in human units (``{'max_memory_gb': 8, 'max_tpot_ms': 20}``)."""
        by_name = {
            spec[2].replace("-", "_"): (name, spec[3]) for name, spec in CONSTRAINT_FIELDS.items()
        }
        chosen: dict[str, float] = {}
        for key, value in values.items():
            if key not in by_name:
                raise InputError(
                    f"{origin}: unknown constraint {key!r}; accepted: {', '.join(by_name)}"
                )
            if value is None:
                continue
            name, factor = by_name[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"{origin}.{key} must be a number > 0, got {value!r}")
            # checked in the unit written (ms, GB), not after conversion to SI
            chosen[name] = require_positive(f"{origin}.{key}", value) * factor
        return cls(**chosen)

    def merged(self, override: Constraints) -> Constraints:
        """These bounds with every bound set in ``override`` replacing ours."""
        values = {item.name: getattr(self, item.name) for item in fields(self)}
        for item in fields(override):
            if getattr(override, item.name) is not None:
                values[item.name] = getattr(override, item.name)
        return Constraints(**values)

    def bounds(self) -> tuple[Bound, ...]:
        """The set bounds, then the capacity wall (always on)."""
        chosen = []
        for name, (column, kind, label, factor, unit) in CONSTRAINT_FIELDS.items():
            value = getattr(self, name)
            if value is not None:
                chosen.append(Bound(label, column, kind, float(value), unit, factor))
        return (*chosen, CAPACITY)

    def to_human(self) -> dict[str, float]:
        """The set bounds by CLI name in human units."""
        return {
            label: getattr(self, name) / factor
            for name, (_, _, label, factor, _) in CONSTRAINT_FIELDS.items()
            if getattr(self, name) is not None
        }


@dataclass(frozen=True)
class BoundSummary:
    """For one bound: designs meeting every *other* bound, the best value among them,
    and the best value over all designs (NaN when there are none)."""

    others_ok: int
    best_given_others: float
    best_overall: float


def summarise(
    bounds: tuple[Bound, ...], columns: Mapping[str, NDArray[np.float64]]
) -> tuple[NDArray[np.bool_], dict[str, BoundSummary]]:
    """Feasibility mask of every design and, per bound, its `BoundSummary`."""
    checks = [bound.ok(columns[bound.column]) for bound in bounds]
    size = len(next(iter(columns.values()))) if columns else 0
    feasible = np.logical_and.reduce(checks) if checks else np.ones(size, bool)
    summary = {}
    for index, bound in enumerate(bounds):
        others = [check for j, check in enumerate(checks) if j != index]
        mask = np.logical_and.reduce(others) if others else np.ones(size, bool)
        values = columns[bound.column]
        summary[bound.label] = BoundSummary(
            int(mask.sum()), _best(bound, values[mask]), _best(bound, values)
        )
    return feasible, summary


def merge_summaries(parts: Iterable[Mapping[str, BoundSummary]]) -> dict[str, BoundSummary]:
    """Combine per-chunk summaries (counts add, bests take the better)."""
    merged: dict[str, BoundSummary] = {}
    kinds: dict[str, str] = {}
    for part in parts:
        for label, item in part.items():
            if label not in merged:
                merged[label] = item
                continue
            kind = kinds.setdefault(label, _kind_of(label))
            old = merged[label]
            merged[label] = BoundSummary(
                old.others_ok + item.others_ok,
                _better(kind, old.best_given_others, item.best_given_others),
                _better(kind, old.best_overall, item.best_overall),
            )
    return merged


def infeasible_message(bounds: tuple[Bound, ...], summary: Mapping[str, BoundSummary]) -> str:
    """One line: which bound binds and the best value reachable while meeting the others."""
    binding = [b for b in bounds if summary[b.label].others_ok > 0]
    if binding:
        parts = [f"{b.label} {_limit(b)} ({_best_given_others(b, summary)})" for b in binding]
        return "no design meets the constraints; binding: " + "; or ".join(parts)
    bests = ", ".join(
        f"{b.label} {b.show(summary[b.label].best_overall)}"
        for b in bounds
        if np.isfinite(summary[b.label].best_overall)
    )
    names = " and ".join(f"{b.label} {_limit(b)}" for b in bounds)
    return (
        f"no design meets {names} together, and relaxing any one alone is not enough; "
        f"best values over all evaluated designs: {bests}"
    )


def _best_given_others(bound: Bound, summary: Mapping[str, BoundSummary]) -> str:
    """``'best achievable while meeting the others: 3.2 ms'``, or why there is none (no
    design meeting the others has the figure: presets without a price, area or TDP)."""
    best = summary[bound.label].best_given_others
    if np.isfinite(best):
        return f"best achievable while meeting the others: {bound.show(best)}"
    return (
        "no design meeting the others has a value for it: a preset without the figure is "
        "never within the bound"
    )


def _limit(bound: Bound) -> str:
    if bound is CAPACITY:
        return "(footprint <= capacity)"
    if bound is WITHIN_DATA:
        return "(--within-data)"
    return f"{'<=' if bound.kind == 'max' else '>='} {bound.show(bound.limit)}"


def _kind_of(label: str) -> str:
    if label in (CAPACITY.label, WITHIN_DATA.label):
        return "max"
    for _, kind, name, _, _ in CONSTRAINT_FIELDS.values():
        if name == label:
            return kind
    raise KeyError(label)


def _best(bound: Bound, values: NDArray[np.float64]) -> float:
    if len(values) == 0:
        return float("nan")
    return float(values.min() if bound.kind == "max" else values.max())


def _better(kind: str, left: float, right: float) -> float:
    if np.isnan(left):
        return right
    if np.isnan(right):
        return left
    return min(left, right) if kind == "max" else max(left, right)
