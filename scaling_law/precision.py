"""Effective parameters under low-bit weights (Kumar et al. 2024, "Scaling Laws for Precision").

Kumar et al. (arXiv 2411.04330) model training with ``P_w``-bit weights as
shrinking the parameter count: ``N_eff = N * (1 - exp(-P_w / gamma_w))``, fitted
``gamma_w = 2.6745`` (their appendix K, Table 2, as quoted by two independent
summaries; it is a parameter here, stored in every law). A law fitted on runs
trained at ``reference_bits`` (bf16: 16) already absorbs that run precision in
its N, so predictions at ``P_w`` bits use the ratio

``N_eff = N * (1 - exp(-P_w / gamma_w)) / (1 - exp(-P_ref / gamma_w))``,

which is 1 at the reference precision (so the fitted law is reproduced exactly)
and about 0.78 at 4 bits. This is Kumar's quantised-*training* form (weights held
at ``P_w`` bits while training). Weights quantised *after* training for serving are
modelled by the separate post-training degradation term, `scaling_law.ptq`, which
``codesign loss`` uses by default for serving-time bits.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError, require_positive

KUMAR_GAMMA_W = 2.6745
DEFAULT_REFERENCE_BITS = 16.0


def effective_parameter_fraction(
    weight_bits: ArrayLike, gamma_w: float = KUMAR_GAMMA_W
) -> NDArray[np.float64]:
    """``1 - exp(-P_w / gamma_w)``: the share of parameters still effective at ``P_w`` bits."""
    bits = _bits("weight_bits", weight_bits)
    require_positive("gamma_w", gamma_w)
    return -np.expm1(-bits / gamma_w)


def effective_parameters(
    params: ArrayLike,
    weight_bits: ArrayLike,
    gamma_w: float = KUMAR_GAMMA_W,
    reference_bits: float = DEFAULT_REFERENCE_BITS,
) -> NDArray[np.float64]:
    """Parameters a law sees for weights trained/served at ``weight_bits``.

    Parameters
    ----------
    params
        Parameter count N (any shape broadcasting with ``weight_bits``).
    weight_bits
        Weight precision P_w in bits (> 0; int or float, e.g. 4, 6.5, 16).
    gamma_w
        Saturation constant, bits (Kumar et al. 2024: 2.6745).
    reference_bits
        Precision of the runs the law was fitted on, bits.

    Returns
    -------
    numpy.ndarray
        ``N * f(P_w) / f(P_ref)`` with ``f(P) = 1 - exp(-P / gamma_w)``.
    """
    reference = effective_parameter_fraction(
        require_positive("reference_bits", reference_bits), gamma_w
    )
    return (
        np.asarray(params, dtype=float)
        * effective_parameter_fraction(weight_bits, gamma_w)
        / reference
    )


def _bits(field: str, value: ArrayLike) -> NDArray[np.float64]:
    try:
        bits = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{field} must be a number of bits > 0, got {value!r}") from None
    bad = ~(np.isfinite(bits) & (bits > 0))
    if np.any(bad):
        first = bits if bits.ndim == 0 else bits[bad].flat[0]
        raise InputError(f"{field} must be a number of bits > 0, got {float(first):g}")
    return bits
