"""Values of a co-design space file: numbers, axes (value, list, ``{values}`` or
``{min, max, steps}``) and mappings with strictly checked keys. Every error is an
`InputError` naming the field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from genz import AXES, Axis
from roofline import InputError

MAX_AXIS_VALUES = 4096
Values = tuple[float, ...]


def section(value: Any, where: str, allowed: tuple[str, ...] | None) -> dict[str, Any]:
    """``value`` if it is a mapping (with only ``allowed`` keys, when given)."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a mapping")
    if allowed is not None:
        check_keys(value, allowed, where)
    return value


def check_keys(value: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    """Refuse the first unknown key by name, listing the accepted ones."""
    unknown = sorted(str(key) for key in value if key not in allowed)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}; accepted: {', '.join(allowed)}")


def number(value: Any, where: str) -> float:
    """A YAML number; strings such as ``18e12`` (YAML 1.1 reads them as text) are accepted."""
    if isinstance(value, bool):
        raise InputError(f"{where} must be a number, got {value!r}")
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where} must be a number, got {value!r}") from None
    if not math.isfinite(result):
        raise InputError(f"{where} must be finite, got {value!r}")
    return result


def axis(
    section: Mapping[str, Any],
    key: str,
    where: str,
    default: Any,
    low: float,
    high: float,
    integer: bool,
) -> Values:
    """Values of axis ``key`` of ``section`` (one value, a list, ``{values: [...]}`` or
    ``{min, max, steps[, spacing]}``), each in ``[low, high]``; repeats dropped."""
    value = section.get(key, default)
    label = f"{where}.{key}"
    if isinstance(value, dict):
        if "values" in value:
            check_keys(value, ("values",), label)
            items = value["values"]
            if not isinstance(items, list):
                raise InputError(f"{label}.values must be a list")
        else:
            items = value_range(value, label, integer)
    elif isinstance(value, list):
        items = value
    else:
        items = [value]
    if not 1 <= len(items) <= MAX_AXIS_VALUES:
        raise InputError(f"{label} must hold 1 to {MAX_AXIS_VALUES} values, got {len(items)}")
    values: list[float] = []
    for item in items:
        parsed = number(item, label)
        if integer and parsed != round(parsed):
            raise InputError(f"{label} must hold whole numbers, got {item!r}")
        if not low <= parsed <= high:
            raise InputError(f"{label} must be in [{low:g}, {high:g}], got {item!r}")
        if parsed not in values:
            values.append(parsed)
    return tuple(values)


def value_range(value: Mapping[str, Any], label: str, integer: bool) -> list[float]:
    """``steps`` values from ``min`` to ``max``, linear or ``spacing: log`` (rounded if integer)."""
    check_keys(value, ("min", "max", "steps", "spacing"), label)
    missing = [key for key in ("min", "max", "steps") if key not in value]
    if missing:
        raise InputError(f"{label}: a range needs min, max and steps (missing {missing[0]!r})")
    low, high = number(value["min"], f"{label}.min"), number(value["max"], f"{label}.max")
    steps = value["steps"]
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_AXIS_VALUES:
        raise InputError(f"{label}.steps must be an integer in [1, {MAX_AXIS_VALUES}]")
    if high < low:
        raise InputError(f"{label}: max ({high:g}) must be >= min ({low:g})")
    spacing = value.get("spacing", "linear")
    if spacing not in ("linear", "log"):
        raise InputError(f"{label}.spacing must be 'linear' or 'log', got {spacing!r}")
    if spacing == "log" and low <= 0:
        raise InputError(f"{label}: log spacing needs min > 0")
    points = np.geomspace(low, high, steps) if spacing == "log" else np.linspace(low, high, steps)
    return [float(round(p)) if integer else float(p) for p in points]


def ints(
    section: Mapping[str, Any], key: str, where: str, default: Any, low: float, high: float
) -> tuple[int, ...]:
    """A whole-number axis as ints."""
    return tuple(int(v) for v in axis(section, key, where, default, low, high, True))


def scenario_counts(section: Mapping[str, Any], name: str, where: str) -> tuple[int, ...]:
    """Values of whole-number scenario axis ``name`` (`genz.AXES`: its default and range)."""
    spec = AXES[name]
    return ints(section, name, where, spec.default, spec.low, spec.high)


def declared_axis(section: Mapping[str, Any], spec: Axis, where: str) -> Values:
    """Values of the real-valued axis ``spec`` declares (its key, default and range)."""
    return axis(section, spec.name, where, spec.default, spec.low, spec.high, spec.integer)
