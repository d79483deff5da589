"""The ``precision`` section of a co-design space: weight, KV-cache and activation bits
(uniform axes, or ``weight_bits: ilp`` with the ``formats`` of a mixed allocation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from genz import AXES
from roofline import InputError
from search.bits import parse_formats

from .axes import Values, check_keys, declared_axis

PRECISION_AXES = ("weight_bits", "kv_bits", "activation_bits")


@dataclass(frozen=True)
class PrecisionSpace:
    """Uniform weight bits, or ``ilp``: the grid uses the bits of ``formats`` and the
    frontier candidates get a mixed-precision allocation (`search.quantize`)."""

    weight_bits: Values
    kv_bits: Values = (16.0,)
    activation_bits: Values = (16.0,)
    ilp_formats: str | None = None


def parse_precision(section: dict[str, Any]) -> PrecisionSpace:
    """The ``precision`` section."""
    where = "precision"
    check_keys(section, (*PRECISION_AXES, "formats"), where)
    formats = None
    if section.get("weight_bits") == "ilp":
        formats = section.get("formats", "16,8,4")
        if not isinstance(formats, str):
            raise InputError(f"{where}.formats must be a string such as '16,8,4'")
        bits = tuple(sorted({fmt.bits for fmt in parse_formats(formats)}, reverse=True))
    else:
        if "formats" in section:
            raise InputError(f"{where}.formats is used only with weight_bits: ilp")
        bits = declared_axis(section, AXES["weight_bits"], where)
    return PrecisionSpace(
        weight_bits=bits,
        kv_bits=declared_axis(section, AXES["kv_bits"], where),
        activation_bits=declared_axis(section, AXES["activation_bits"], where),
        ilp_formats=formats,
    )
