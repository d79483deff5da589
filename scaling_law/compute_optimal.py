"""Compute-optimal allocation of a Chinchilla-form law: parameters, tokens and tokens per
parameter at a training budget, with the band over the law's bootstrap refits.

For ``L = E + A' / N^alpha + B / D^beta`` at ``C = 6 N D`` FLOP the loss is minimised at
(Hoffmann et al. 2022, Eq. 4)

    N_opt = G (C / 6)^(beta / (alpha + beta)),   G = (alpha A' / (beta B))^(1 / (alpha + beta)),
    D_opt = (C / 6) / N_opt,

so tokens per parameter ``D_opt / N_opt`` is constant in C only when ``alpha = beta``; it
falls with C when ``beta > alpha`` and rises when ``beta < alpha``. For the shape-aware
form ``A' = A exp(min_u s(u))`` is the N coefficient at the law's preferred width/depth
(``s = c_a1 u + c_a2 u^2``; the FFN and GQA terms at their reference, 0). N is counted in
the law's own convention (``include_embeddings``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError

from .law import ScalingLaw

Array = NDArray[np.float64]
#: Forms whose loss is Chinchilla's sum of an N term and a D term.
CHINCHILLA_FORMS = ("chinchilla", "chinchilla-shape", "chinchilla-shape-beta-prior")
#: FLOP per parameter per training token of the allocation (C = 6 N D).
FLOP_PER_PARAMETER_TOKEN = 6.0


@dataclass(frozen=True)
class ComputeOptimal:
    """Loss-minimising allocation at each training budget.

    ``flop`` (FLOP), ``params`` (N, the law's convention), ``tokens`` (D) and
    ``tokens_per_parameter`` (D / N) are the point estimate; ``tokens_per_parameter_low``
    and ``_high`` the percentile band over the law's bootstrap refits at its
    ``confidence`` (None without bootstrap samples).
    """

    flop: Array
    params: Array
    tokens: Array
    tokens_per_parameter: Array
    tokens_per_parameter_low: Array | None
    tokens_per_parameter_high: Array | None
    confidence: float


def effective_n_coefficient(values: dict[str, float]) -> float:
    """``A'``: the law's N coefficient at its preferred width/depth (``A`` for plain
    Chinchilla, or when the fitted aspect term has no interior minimum)."""
    linear = values.get("aspect_linear", 0.0)
    quadratic = values.get("aspect_quadratic", 0.0)
    shape = -(linear**2) / (4 * quadratic) if quadratic > 0 else 0.0
    return values["A"] * float(np.exp(shape))


def optimal_params(values: dict[str, float], flop: ArrayLike) -> Array:
    """``N_opt`` (parameters) at ``flop`` (FLOP) for one parameter set of a Chinchilla form."""
    alpha, beta = values["alpha"], values["beta"]
    scale = (alpha * effective_n_coefficient(values) / (beta * values["B"])) ** (1 / (alpha + beta))
    return scale * (np.asarray(flop, float) / FLOP_PER_PARAMETER_TOKEN) ** (beta / (alpha + beta))


def compute_optimal(law: ScalingLaw, flop: ArrayLike) -> ComputeOptimal:
    """The loss-minimising N, D and D / N of ``law`` at each budget of ``flop`` (FLOP > 0)."""
    if law.form not in CHINCHILLA_FORMS:
        raise InputError(
            f"law form {law.form!r}: compute-optimal allocation needs one of "
            + ", ".join(CHINCHILLA_FORMS)
        )
    budgets = np.atleast_1d(np.asarray(flop, float))
    if not np.all(np.isfinite(budgets)) or np.any(budgets <= 0):
        raise InputError("flop must be finite and > 0")
    params = optimal_params(dict(law.params), budgets)
    tokens = budgets / FLOP_PER_PARAMETER_TOKEN / params
    low = high = None
    if law.bootstrap_params:
        names = law.law_form.public_names
        ratios = np.array(
            [
                _ratio(dict(zip(names, sample, strict=True)), budgets)
                for sample in law.bootstrap_params
            ]
        )
        tail = (1 - law.confidence) / 2 * 100
        low, high = np.percentile(ratios, [tail, 100 - tail], axis=0)
    return ComputeOptimal(budgets, params, tokens, tokens / params, low, high, law.confidence)


def _ratio(values: dict[str, float], budgets: Array) -> Array:
    params = optimal_params(values, budgets)
    return budgets / FLOP_PER_PARAMETER_TOKEN / params**2
