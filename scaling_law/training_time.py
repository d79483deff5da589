"""Training compute and wall-clock time of an architecture (hardware as numbers only).

FLOP count (Chowdhery et al. 2022, PaLM, Appendix B, the usual MFU convention):
per training token, ``6 N_c + 12 L d_attn T``, where ``N_c`` are the parameters used in
matrix multiplies (every weight except the input-embedding lookup; an LM head tied to
the embeddings is counted once, as the head), ``L`` the layers, ``d_attn`` the
attention width (heads x head_dim), ``T`` the sequence length: ``6 N_c`` for the
forward and backward weight matmuls, ``12 L d_attn T`` for the attention scores and
the weighted sum (no causal halving, as in PaLM's MFU). Time:
``FLOP / (peak FLOP/s x MFU)``, where the peak is the dense bf16/fp16 matrix peak of
all devices used and MFU (model FLOP utilisation, in (0, 1]) is what the stack
achieves. Nothing here knows a device: pass the peak as a number.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError, require_fraction, require_positive

from .architecture import Architecture

Array = NDArray[np.float64]


def training_flops(
    compute_params: ArrayLike,
    tokens: ArrayLike,
    layers: ArrayLike,
    attention_width: ArrayLike,
    sequence_length: float,
) -> Array:
    """Training FLOP for ``tokens`` tokens: ``(6 N_c + 12 L d_attn T) * D``.

    Parameters
    ----------
    compute_params
        Parameters used in matmuls, ``N_c`` (see the module docstring).
    tokens
        Training tokens D.
    layers, attention_width
        Blocks L and attention width ``heads * head_dim``.
    sequence_length
        Training context T, tokens.
    """
    arrays = [
        _positive(name, value)
        for name, value in (
            ("compute_params", compute_params),
            ("tokens", tokens),
            ("layers", layers),
            ("attention_width", attention_width),
        )
    ]
    count, data, depth, width = arrays
    require_positive("sequence_length", sequence_length)
    return (6.0 * count + 12.0 * depth * width * float(sequence_length)) * data


def architecture_training_flops(
    architecture: Architecture, tokens: ArrayLike, sequence_length: float
) -> Array:
    """`training_flops` of (a grid of) architectures: ``N_c`` = active parameters less
    the input embedding (untied) or with the shared matrix counted once (tied)."""
    counts = architecture.counts()
    lookup = np.where(
        architecture.tie_embeddings, 0.0, counts.embedding / 2.0
    )  # untied: one of the two vocab x hidden matrices is a lookup
    compute = counts.active - lookup
    attention = np.asarray(architecture.heads, float) * np.asarray(architecture.head_dim, float)
    return training_flops(compute, tokens, architecture.layers, attention, sequence_length)


def training_seconds(flops: ArrayLike, peak_flop_per_s: ArrayLike, mfu: ArrayLike) -> Array:
    """Wall-clock seconds: ``flops / (peak_flop_per_s * mfu)``.

    ``peak_flop_per_s`` is the dense matrix peak of all devices together, FLOP/s;
    ``mfu`` in (0, 1]: one number, or one per point (`scaling_law.MfuModel.mfu`).
    """
    try:
        utilisation = np.asarray(mfu, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"mfu must be in (0, 1], got {mfu!r}") from None
    if utilisation.ndim == 0:
        require_fraction("mfu", float(utilisation))
    if np.any(~(np.isfinite(utilisation) & (utilisation > 0) & (utilisation <= 1))):
        bad = utilisation if utilisation.ndim == 0 else utilisation[~(utilisation > 0)]
        shown = float(np.ravel(bad)[0]) if np.size(bad) else float(np.max(utilisation))
        raise InputError(f"mfu must be in (0, 1], got {shown:g}")
    return _positive("flops", flops) / (_positive("peak_flop_per_s", peak_flop_per_s) * utilisation)


def implied_mfu(flops: ArrayLike, seconds: ArrayLike, peak_flop_per_s: ArrayLike) -> Array:
    """The MFU a measured time implies: ``flops / (seconds * peak_flop_per_s)``."""
    return _positive("flops", flops) / (
        _positive("seconds", seconds) * _positive("peak_flop_per_s", peak_flop_per_s)
    )


def _positive(name: str, value: ArrayLike) -> Array:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a finite number > 0, got {value!r}") from None
    bad = ~(np.isfinite(array) & (array > 0))
    if np.any(bad):
        first = array if array.ndim == 0 else array[bad].flat[0]
        raise InputError(f"{name} must be a finite number > 0, got {float(first):g}")
    return array
