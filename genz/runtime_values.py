"""Value entries of runtime-profile files: ``{value: x, source: ...}`` or ``{value: x,
calibrated_from: ..., interval_95: [lo, hi]}``, each checked against its range.

The shared checks of every part of the profile schema (`genz.runtime`,
`genz.runtime_formats`, `genz.runtime_accuracy`, `genz.runtime_devices`): a mapping, no
unknown key, a number in its accepted range, provenance present.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline import InputError

VALUE_KEYS = frozenset({"value", "source", "calibrated_from", "interval_95"})
#: Accepted range of each value, inclusive.
RANGES = {
    "compute_efficiency": (1e-3, 1.0),
    "memory_efficiency": (1e-3, 1.0),
    "step_overhead_s": (0.0, 1.0),
    "sequence_overhead_s": (0.0, 0.1),
    "sequence_overhead_exponent": (0.05, 2.0),
    "routing_independence": (0.0, 1.0),
    "all_reduce_latency_s": (0.0, 0.1),
    "kernel_launch_s": (0.0, 1e-3),
    "request_overhead_s": (0.0, 10.0),
    "nominal_bits": (1.0, 32.0),
    "stored_bits": (1.0, 32.0),
    "embedding_bits": (1.0, 32.0),
    "lm_head_bits": (1.0, 32.0),
    "memory_efficiency_scale": (0.05, 2.0),
    "compute_efficiency_scale": (0.05, 2.0),
    "emulated_memory_efficiency_scale": (0.01, 1.0),
}
#: An efficiency whose value is the platform preset's own.
INHERITED = "platform"


def as_mapping(value: Any, label: str) -> dict[str, Any]:
    """``value`` as a mapping, or a one-line error naming ``label``."""
    if not isinstance(value, dict):
        raise InputError(f"{label}: expected a mapping, got {type(value).__name__}")
    return value


def check_known(document: Mapping[str, Any], accepted: frozenset[str], label: str) -> None:
    """Reject the first key of ``document`` not in ``accepted``, by name."""
    unknown = sorted(set(map(str, document)) - accepted)
    if unknown:
        raise InputError(
            f"{label}: unknown key {unknown[0]!r}; accepted: {', '.join(sorted(accepted))}"
        )


def checked_value(entry: Any, key: str, label: str) -> float:
    """A value mapping's number after checking its range and provenance."""
    check_provenance(entry, label)
    number = entry["value"]
    low, high = RANGES[key]
    if isinstance(number, bool) or not isinstance(number, int | float) or not low <= number <= high:
        raise InputError(f"{label}: value must be a number in [{low:g}, {high:g}], got {number!r}")
    return float(number)


def check_provenance(entry: Any, label: str) -> None:
    """A value mapping has ``value`` and ``source`` or ``calibrated_from``."""
    check_known(as_mapping(entry, label), VALUE_KEYS, label)
    if "value" not in entry:
        raise InputError(f"{label}: missing 'value'")
    if not ("source" in entry or "calibrated_from" in entry):
        raise InputError(f"{label}: needs 'source' or 'calibrated_from'")


def efficiency_value(entry: Any, key: str, label: str) -> float | None:
    """An efficiency value, or None for ``value: platform`` (the preset's own)."""
    check_provenance(entry, label)
    if entry["value"] == INHERITED:
        return None
    if isinstance(entry["value"], str):
        low, high = RANGES[key]
        raise InputError(
            f"{label}: value must be a number in [{low:g}, {high:g}] or {INHERITED!r} "
            f"(the platform preset's own), got {entry['value']!r}"
        )
    return checked_value(entry, key, label)
