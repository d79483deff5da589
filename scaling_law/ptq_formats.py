"""Effective bits of each quantisation format kind, measured within models (issue #27).

Formats of the same bits per weight lose different amounts: llama.cpp's legacy formats
(``Q4_0``, ``Q4_1``, ``Q5_0``, ``Q5_1``, ``Q8_0``: one scale, and for ``_1`` a minimum, per
block of 32 weights, round to nearest) lose more than the k-quants (``Q*_K*``: super-blocks
with quantised scales, error-minimising rounding); an importance matrix (``+imatrix``) and
the i-quants (``IQ*``: codebooks / non-linear grids, quantised with an importance matrix)
lose less; round-to-nearest group formats (``INT4-g128``, ``FP4-g128``, ``NF4-g128``, the
learned ``ANY4-g128``) differ among themselves. On the same model the difference is free of
every (N, D) effect: on Llama-3 8B, ``Q4_0`` at 4.64 bits per weight adds 0.072 nats,
``Q4_K_S`` at 4.67 adds 0.042. The PTQ form sees only bits, so rows read at their nominal
bits make any constants fitted or checked on them look biased.

`format_kind` names each row's kind; the reference kind is llama.cpp's k-quants without an
importance matrix (`REFERENCE_KIND`), the kind with the most rows. `kind_offsets_by_model`
measures, on every model with >= 2 reference rows (``ln delta`` linear in bits, least
squares, falling) and rows of another kind, how many bits each such row is worth fewer than
its nominal bits: the bits at which the model's own reference rows reach its degradation,
subtracted from its nominal bits (negative: worth more). `kind_offsets` takes the median per
kind; `with_kind_offsets` applies them and says which rows' kind has no measured offset.
The legacy-only helpers (`legacy_bits_offset`, ...) are the same measurement for one kind.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from roofline import InputError

from .ptq_data import PtqRows

#: llama.cpp's round-to-nearest block formats (one scale, optionally a minimum, per 32).
LLAMA_CPP_LEGACY = frozenset({"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"})
REFERENCE_KIND = "k-quant"
IMATRIX_SUFFIX = "+imatrix"
GROUP_SUFFIX = "-g128"


def format_kind(quant_type: str) -> str:
    """The kind of a quantisation type: ``legacy``, ``k-quant`` (the reference),
    ``k-quant+imatrix``, ``i-quant`` (llama.cpp ``IQ*``, with or without the suffix: the
    i-quants are made with an importance matrix) or a group format's own name
    (``INT4-g128`` ...)."""
    base = quant_type.removesuffix(IMATRIX_SUFFIX)
    if base.endswith(GROUP_SUFFIX):
        return base
    if base.upper().startswith("IQ"):
        return "i-quant"
    if base in LLAMA_CPP_LEGACY:
        return "legacy" + (IMATRIX_SUFFIX if base != quant_type else "")
    return REFERENCE_KIND + (IMATRIX_SUFFIX if base != quant_type else "")


def kinds(rows: PtqRows) -> tuple[str, ...]:
    """`format_kind` of every row."""
    return tuple(format_kind(name) for name in rows.quant_type)


def kind_offsets_by_model(rows: PtqRows) -> dict[str, dict[str, np.ndarray]]:
    """``{kind: {model: offsets}}``: per model with >= 2 reference rows on a falling
    ``ln delta``-bits line, each non-reference row's nominal bits minus its
    reference-equivalent bits."""
    kind = np.array(kinds(rows))
    model = np.array(rows.model)
    delta = np.log(rows.delta)
    out: dict[str, dict[str, np.ndarray]] = {}
    for name in dict.fromkeys(rows.model):
        mine = model == name
        reference = mine & (kind == REFERENCE_KIND)
        if reference.sum() < 2 or np.ptp(rows.bits[reference]) <= 0:
            continue
        slope, intercept = np.polyfit(rows.bits[reference], delta[reference], 1)
        if slope >= 0:
            continue  # degradation must fall with bits; no usable reference curve
        for other in dict.fromkeys(kind[mine & (kind != REFERENCE_KIND)]):
            rows_k = mine & (kind == other)
            equivalent = (delta[rows_k] - intercept) / slope
            out.setdefault(str(other), {})[name] = rows.bits[rows_k] - equivalent
    return out


def kind_offsets(rows: PtqRows) -> dict[str, float]:
    """Median offset (bits) per kind over every row of `kind_offsets_by_model`; the
    reference kind's is 0."""
    out = {REFERENCE_KIND: 0.0}
    for kind, by_model in kind_offsets_by_model(rows).items():
        out[kind] = float(np.median(np.concatenate(list(by_model.values()))))
    return out


def with_kind_offsets(rows: PtqRows, offsets: dict[str, float]) -> tuple[PtqRows, np.ndarray]:
    """``rows`` with every row's bits lowered by its kind's offset, and the mask of rows
    whose kind is in ``offsets`` (the others keep their nominal bits and cannot be placed)."""
    kind = kinds(rows)
    placed = np.array([k in offsets for k in kind])
    shift = np.array([offsets.get(k, 0.0) for k in kind])
    if not np.all(np.isfinite(shift)):
        raise InputError("format offsets must be finite numbers of bits")
    return dataclasses.replace(rows, bits=rows.bits - shift), placed


def is_legacy(rows: PtqRows) -> np.ndarray:
    """Mask of the rows quantised with a llama.cpp legacy format."""
    return np.array([name in LLAMA_CPP_LEGACY for name in rows.quant_type])


def legacy_offsets_by_model(rows: PtqRows) -> dict[str, np.ndarray]:
    """Per model with >= 2 k-quant rows and >= 1 legacy row: each legacy row's nominal
    bits minus its k-quant-equivalent bits."""
    return kind_offsets_by_model(rows).get("legacy", {})


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
