"""What a transfer profile (`calibration.transfer_profile`) covers and stores beside
its fitted terms: the domain of its training rows (`genz.ProfileDomain`), a preset's
own efficiencies and device class, and the weight formats it lists."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from genz import ProfileDomain, WeightFormat, load_model, parameter_count
from roofline import data_dir, load_platform

from .calibrate import load_formats
from .transfer import TransferFit
from .transfer_terms import format_bucket


def weight_formats(fit: TransferFit, runtime: str | None) -> list[dict[str, Any]]:
    """The profile's weight formats: the runtime's own (stored bits from
    ``data/runtime_formats``) and each other nominal width its rows (all rows, for the
    generic profile) use, stored as given; each with its bucket."""
    listed = runtime_weight_formats(runtime) if runtime is not None else []
    out = [
        {
            "name": fmt.name,
            "nominal_bits": fmt.nominal_bits,
            "stored_bits": fmt.stored_bits,
            "embedding_bits": fmt.embedding_bits,
            "lm_head_bits": fmt.lm_head_bits,
        }
        for fmt in listed
    ]
    known = [fmt.nominal_bits for fmt in listed]
    widths = sorted(
        {
            float(item.row.weight_bits)
            for item in fit.terms.stored
            if runtime is None or item.row.runtime == runtime
        }
    )
    for bits in widths:
        if format_bucket(bits) != "16" and not any(np.isclose(bits, k) for k in known):
            out.append(
                {
                    "name": f"{bits:g}-bit",
                    "nominal_bits": bits,
                    "stored_bits": bits,
                    "embedding_bits": bits,
                    "lm_head_bits": bits,
                }
            )
    return out


def domain_of(fit: TransferFit, rows: np.ndarray) -> ProfileDomain:
    """What the rows (boolean) of a fit span (`genz.ProfileDomain`)."""
    chosen = [fit.terms.stored[i] for i in np.flatnonzero(rows)]
    measured = [item.row for item in chosen]
    sizes = {name: parameter_count(load_model(name)).total for name in {r.model for r in measured}}

    def span(values: list[float]) -> tuple[float, float]:
        low, high = min(values), max(values)
        return (float(low), float(high))

    def names(values: list[str]) -> tuple[str, ...]:
        return tuple(sorted({value for value in values if value}))

    return ProfileDomain(
        hardware=names([r.hw for r in measured]),
        device_classes=names([preset_terms(r.hw)[2] for r in measured]),
        harnesses=names([item.info.harness for item in chosen]),
        runtime_versions=names([r.runtime_version for r in measured]),
        dates=names([item.info.date for item in chosen]),
        weight_bits=tuple(sorted({float(r.weight_bits) for r in measured})),
        batch=span([r.batch for r in measured]),
        input_tokens=span([r.input_tokens for r in measured]),
        output_tokens=span([r.output_tokens for r in measured]),
        parameters=span([sizes[r.model] for r in measured]),
        tp=span([r.tp for r in measured]),
    )


@functools.lru_cache(maxsize=256)
def preset_terms(preset: str) -> tuple[float, float, str]:
    """A hardware preset's own compute and memory efficiency and its device class (read
    once per process: presets are files)."""
    platform = load_platform(preset)
    return platform.efficiency.compute, platform.efficiency.memory, platform.device_class


def runtime_weight_formats(runtime: str) -> list[WeightFormat]:
    """The runtime's weight formats from ``data/runtime_formats`` (none if absent), as
    the model's decomposition (`calibration.transfer_terms.build_terms`) stores them."""
    path = data_dir() / "runtime_formats" / f"{runtime}.yaml"
    return list(load_formats(path)[0]) if path.is_file() else []
