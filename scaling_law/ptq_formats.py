"""Effective bits of llama.cpp's legacy quantisation formats, measured within models.

llama.cpp's legacy formats (``Q4_0``, ``Q4_1``, ``Q5_0``, ``Q5_1``, ``Q8_0``: one scale,
and for ``_1`` a minimum, per block of 32 weights, round to nearest) lose more than the
k-quants (``Q*_K*``: super-blocks with quantised scales, error-minimising rounding) of the
same bits per weight. On the same model the difference is free of every (N, D) effect: on
Llama-3 8B, ``Q4_0`` at 4.64 bits per weight adds 0.072 nats, ``Q4_K_S`` at 4.67 adds
0.042. The PTQ form sees only bits, so legacy rows read at their nominal bits make any
constants fitted or checked on them look biased low (issue #27).

`legacy_bits_offset` measures, on every model with rows of both kinds, how many bits a
legacy row is worth fewer than its nominal bits: the bits at which the model's own k-quant
rows (``ln delta`` linear in bits, least squares) reach the legacy row's degradation,
subtracted from its nominal bits; the median over rows. `with_effective_bits` applies it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from roofline import InputError

from .ptq_data import PtqRows

#: llama.cpp's round-to-nearest block formats (one scale, optionally a minimum, per 32).
LLAMA_CPP_LEGACY = frozenset({"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"})


def is_legacy(rows: PtqRows) -> np.ndarray:
    """Mask of the rows quantised with a llama.cpp legacy format."""
    return np.array([name in LLAMA_CPP_LEGACY for name in rows.quant_type])


def legacy_offsets_by_model(rows: PtqRows) -> dict[str, np.ndarray]:
    """Per model with >= 2 k-quant rows and >= 1 legacy row: each legacy row's nominal
    bits minus its k-quant-equivalent bits."""
    legacy = is_legacy(rows)
    delta = np.log(rows.delta)
    out: dict[str, np.ndarray] = {}
    for model in dict.fromkeys(rows.model):
        mine = np.array([name == model for name in rows.model])
        kquant, old = mine & ~legacy, mine & legacy
        if kquant.sum() < 2 or not old.any():
            continue
        slope, intercept = np.polyfit(rows.bits[kquant], delta[kquant], 1)
        if slope >= 0:
            continue  # degradation must fall with bits; no usable reference curve
        equivalent = (delta[old] - intercept) / slope
        out[model] = rows.bits[old] - equivalent
    return out


def legacy_bits_offset(rows: PtqRows) -> float:
    """Median legacy offset (bits) over every legacy row of `legacy_offsets_by_model`."""
    offsets = legacy_offsets_by_model(rows)
    if not offsets:
        raise InputError("legacy bits offset needs a model with both legacy and k-quant rows")
    return float(np.median(np.concatenate(list(offsets.values()))))


def with_effective_bits(rows: PtqRows, offset: float) -> PtqRows:
    """``rows`` with every legacy row's bits lowered by ``offset`` (bits >= 0)."""
    if not np.isfinite(offset) or offset < 0:
        raise InputError(f"legacy bits offset must be finite and >= 0, got {offset!r}")
    bits = np.where(is_legacy(rows), rows.bits - offset, rows.bits)
    return dataclasses.replace(rows, bits=bits)
