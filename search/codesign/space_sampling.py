"""The ``sampling`` section of a co-design space: sample count, method, refinement rounds
and seed of a sampled search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline import InputError

from .axes import check_keys


@dataclass(frozen=True)
class SamplingSpec:
    """Sampled search: ``samples`` points (Latin hypercube or random), then
    ``refine_rounds`` rounds evaluating the axis neighbours of the frontier."""

    samples: int = 4096
    method: str = "lhs"
    refine_rounds: int = 3
    seed: int = 0


def parse_sampling(section: dict[str, Any]) -> SamplingSpec:
    """The ``sampling`` section (defaults `SamplingSpec`)."""
    where = "sampling"
    check_keys(section, ("samples", "method", "refine_rounds", "seed"), where)
    spec = SamplingSpec()
    values = {}
    for key, low, high in (
        ("samples", 1, 10_000_000),
        ("refine_rounds", 0, 100),
        ("seed", 0, 2**32),
    ):
        value = section.get(key, getattr(spec, key))
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InputError(f"{where}.{key} must be an integer in [{low}, {high}], got {value!r}")
        values[key] = value
    method = section.get("method", spec.method)
    if method not in ("lhs", "random"):
        raise InputError(f"{where}.method must be 'lhs' or 'random', got {method!r}")
    return SamplingSpec(method=method, **values)
