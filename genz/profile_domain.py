"""What a runtime profile was fitted on, and whether a prediction lies inside it.

A profile's ``domain`` block (written by ``codesign calibrate``) records the measured
set-ups its values come from: hardware presets and device classes, harnesses, runtime
versions and dates where the rows state them, weight bits, and the ranges of batch,
prompt and output lengths, model size (parameters) and tensor-parallel degree.
`outside_domain` lists, one short phrase each, how a scenario leaves it; an empty list
means inside. A prediction outside applies its stack terms where nothing checked them,
so front ends print the reasons and widen the interval (`calibration.prediction_intervals`).

YAML layout::

    domain:
      hardware: [a100-sxm-40gb, h100-sxm]
      device_classes: [nvidia-gpu]
      harnesses: [offline_generate]        # empty: the rows did not say
      runtime_versions: []
      dates: [2024-10]
      weight_bits: [16.0]
      batch: [1, 64]
      input_tokens: [128, 2048]
      output_tokens: [128, 2048]
      parameters: [6.7e9, 7.1e10]
      tp: [1, 8]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roofline import InputError

#: Keys holding lists of names, and keys holding [low, high] ranges.
NAME_KEYS = ("hardware", "device_classes", "harnesses", "runtime_versions", "dates")
RANGE_KEYS = ("batch", "input_tokens", "output_tokens", "parameters", "tp")
BITS_KEY = "weight_bits"
DOMAIN_KEYS = frozenset({*NAME_KEYS, *RANGE_KEYS, BITS_KEY})


@dataclass(frozen=True)
class ProfileDomain:
    """The set-ups a profile was fitted on (see the module docstring)."""

    hardware: tuple[str, ...] = ()
    device_classes: tuple[str, ...] = ()
    harnesses: tuple[str, ...] = ()
    runtime_versions: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()
    weight_bits: tuple[float, ...] = ()
    batch: tuple[float, float] | None = None
    input_tokens: tuple[float, float] | None = None
    output_tokens: tuple[float, float] | None = None
    parameters: tuple[float, float] | None = None
    tp: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The YAML mapping (`domain_from_dict` reads it back)."""
        out: dict[str, Any] = {key: list(getattr(self, key)) for key in NAME_KEYS}
        out[BITS_KEY] = [float(bits) for bits in self.weight_bits]
        for key in RANGE_KEYS:
            value = getattr(self, key)
            if value is not None:
                out[key] = [float(value[0]), float(value[1])]
        return out


def domain_from_dict(document: Any, origin: str) -> ProfileDomain:
    """Read a ``domain`` mapping, rejecting unknown keys and malformed ranges by name."""
    if not isinstance(document, dict):
        raise InputError(f"{origin}: expected a mapping, got {type(document).__name__}")
    unknown = sorted(set(map(str, document)) - DOMAIN_KEYS)
    if unknown:
        raise InputError(
            f"{origin}: unknown key {unknown[0]!r}; accepted: {', '.join(sorted(DOMAIN_KEYS))}"
        )
    values: dict[str, Any] = {}
    for key in NAME_KEYS:
        names = document.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str | int) for n in names):
            raise InputError(f"{origin}.{key}: expected a list of names")
        values[key] = tuple(str(name) for name in names)
    bits = document.get(BITS_KEY, [])
    if not isinstance(bits, list) or not all(_is_number(b) and b > 0 for b in bits):
        raise InputError(f"{origin}.{BITS_KEY}: expected a list of positive numbers")
    values[BITS_KEY] = tuple(float(b) for b in bits)
    for key in RANGE_KEYS:
        if key not in document:
            continue
        pair = document[key]
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(_is_number(v) and v > 0 for v in pair)
            or pair[0] > pair[1]
        ):
            raise InputError(f"{origin}.{key}: expected [low, high] with 0 < low <= high")
        values[key] = (float(pair[0]), float(pair[1]))
    return ProfileDomain(**values)


def outside_domain(
    domain: ProfileDomain,
    hardware: str,
    device_class: str,
    point: Mapping[str, float],
    harness: str = "",
) -> list[str]:
    """How a prediction leaves ``domain``: one phrase per reason (empty: inside).

    ``point`` holds the scenario's ``batch``, ``input_tokens``, ``output_tokens``,
    ``parameters`` (the model's), ``tp`` and ``weight_bits`` (layer weights); keys it
    lacks are not checked. ``harness`` is checked only when given and the domain lists
    harnesses.
    """
    reasons = []
    if domain.hardware and hardware not in domain.hardware:
        if domain.device_classes and device_class not in domain.device_classes:
            reasons.append(
                f"device class {device_class} not measured (fitted on "
                f"{', '.join(domain.device_classes)})"
            )
        else:
            reasons.append(f"hardware {hardware} not measured (same class: {device_class})")
    if harness and domain.harnesses and harness not in domain.harnesses:
        reasons.append(f"harness {harness} not measured ({', '.join(domain.harnesses)})")
    bits = point.get(BITS_KEY)
    if (
        bits is not None
        and domain.weight_bits
        and not any(math.isclose(bits, known, abs_tol=0.3) for known in domain.weight_bits)
    ):
        listed = ", ".join(f"{b:g}" for b in domain.weight_bits)
        reasons.append(f"{bits:g}-bit weights not measured ({listed})")
    for key in RANGE_KEYS:
        bounds, value = getattr(domain, key), point.get(key)
        if bounds is None or value is None:
            continue
        if not bounds[0] <= value <= bounds[1]:
            reasons.append(f"{key.replace('_', ' ')} {value:g} outside {bounds[0]:g}-{bounds[1]:g}")
    return reasons


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
