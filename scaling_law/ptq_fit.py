"""Fit the PTQ degradation constants to published perplexities (issue #13).

Form (`scaling_law.ptq`): ``delta = c_t * D^gamma_d / N^gamma_n * exp(-P / gamma_post)``
nats per token. In log space it is linear in the fit-space vector
``theta = (ln c_t, gamma_d, gamma_n, 1 / gamma_post)``::

    ln delta = ln c_t + gamma_d ln D - gamma_n ln N - P / gamma_post

and is fitted with the project's robust machinery (`scaling_law.objective`: Huber loss on
log residuals, L-BFGS-B with the analytic Jacobian, restarts, a grid of starts).

Identifiability: before fitting, the column-scaled, centred Jacobian of ``ln delta``
(columns ``1, ln D, -ln N, -P`` with the last three centred on their means, each scaled
to unit norm) has its condition number computed; a condition number above
`MAX_CONDITION` (Belsley's "strong collinearity" bound) means the rows cannot separate
the parameters, and the exponents are fixed, in the order ``gamma_d``, ``gamma_n``,
``gamma_post``, to the reference values (Kumar et al.'s, labelled) until it is not. A
column with no spread (one D in the data) is fixed outright. The fit reports which
parameters were fixed and why.

Rows whose degradation is below `MIN_DELTA_NATS` are left out of the fit and the
evaluation: a perplexity quoted to 4 decimals, and run-to-run noise of about 1e-3 in
the published ratios, leave their log residual undetermined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

from .forms import Features, LawForm
from .objective import HuberObjective, local_minimum
from .ptq import KUMAR_PTQ, PtqConstants
from .ptq_data import PtqRows

Array = NDArray[np.float64]
PARAMETERS = ("ln_c_t", "gamma_d", "gamma_n", "inv_gamma_post")
EXPONENTS = ("gamma_d", "gamma_n", "gamma_post")
MAX_CONDITION = 30.0
MIN_DELTA_NATS = 1e-3
HUBER_DELTA = 0.25
FITTED_NAME = "fitted to published llama.cpp PTQ perplexities (benchmarks/ptq_fit.py)"
EXPONENT_FLOOR = 1e-3  # exponents stay > 0: the term must grow with D and fall with N
_FIX_ORDER = (1, 2, 3)
_NAMES_BY_INDEX = {1: "gamma_d", 2: "gamma_n", 3: "gamma_post"}


def _log_delta(theta: Array, features: Features) -> Array:
    theta = np.asarray(theta, dtype=float)
    log_n, log_d, bits = (
        np.log(features["params"]),
        np.log(features["tokens"]),
        features["bits"],
    )
    if theta.ndim == 2:
        return theta[:, :1] + theta[:, 1:2] * log_d - theta[:, 2:3] * log_n - theta[:, 3:4] * bits
    return theta[0] + theta[1] * log_d - theta[2] * log_n - theta[3] * bits


def _jacobian(theta: Array, features: Features) -> tuple[Array, Array]:
    columns = _design(features)
    return _log_delta(theta, features), columns


def _design(features: Features) -> Array:
    log_n, log_d = np.log(features["params"]), np.log(features["tokens"])
    return np.column_stack([np.ones_like(log_n), log_d, -log_n, -features["bits"]])


def _to_public(theta: Array) -> Array:
    out = np.array(theta, dtype=float)
    out[..., 0] = np.exp(out[..., 0])
    out[..., 3] = 1.0 / out[..., 3]
    return out


def _from_public(values: Array) -> Array:
    out = np.array(values, dtype=float)
    out[..., 0] = np.log(out[..., 0])
    out[..., 3] = 1.0 / out[..., 3]
    return out


PTQ_LAW_FORM = LawForm(
    name="ptq-kumar",
    parameter_names=PARAMETERS,
    public_names=("c_t", "gamma_d", "gamma_n", "gamma_post"),
    log_loss=_log_delta,
    initial_grid=np.array(
        [
            [0.0, gd, gn, inv]
            for gd in (0.1, 0.5, 1.0)
            for gn in (0.1, 0.35, 1.0)
            for inv in (0.8, 1.7, 3.0)
        ]
    ),
    jacobian=_jacobian,
    bounds=((None, None), (EXPONENT_FLOOR, 3.0), (EXPONENT_FLOOR, 3.0), (0.05, 20.0)),
    to_public=_to_public,
    from_public=_from_public,
    batched=True,
    description="ln delta_PTQ = ln c_t + gamma_d ln D - gamma_n ln N - P / gamma_post "
    "(features params, tokens and bits)",
)


@dataclass(frozen=True)
class PtqFit:
    """One fit: constants, which exponents were fixed (and to what), conditioning.

    ``condition_all_free`` is the scaled-Jacobian condition number with every parameter
    free; ``condition`` the one of the parameters actually fitted.
    """

    constants: PtqConstants
    fixed: dict[str, float]
    fixed_reason: str
    condition_all_free: float
    condition: float
    objective: float
    converged: bool
    rows: int


def fittable(rows: PtqRows) -> PtqRows:
    """The rows whose degradation is at least `MIN_DELTA_NATS` (the rest is noise)."""
    return rows.take(rows.delta >= MIN_DELTA_NATS)


def scaled_condition(features: Features, free: list[int]) -> float:
    """Condition number of the centred, column-scaled Jacobian over ``free`` (inf if a
    free exponent's column has no spread)."""
    design = _design(features)[:, free]
    centred = design.copy()
    for k, index in enumerate(free):
        if index != 0:
            centred[:, k] = design[:, k] - design[:, k].mean()
    norms = np.linalg.norm(centred, axis=0)
    if np.any(norms <= 1e-12 * max(1.0, float(np.max(np.abs(design))))):
        return float("inf")
    singular = np.linalg.svd(centred / norms, compute_uv=False)
    return float(singular[0] / singular[-1]) if singular[-1] > 0 else float("inf")


def fit_ptq(
    rows: PtqRows,
    reference: PtqConstants = KUMAR_PTQ,
    *,
    source: str = "fitted (Huber on ln delta, L-BFGS-B) to published PTQ perplexities",
    name: str = FITTED_NAME,
    huber_delta: float = HUBER_DELTA,
    max_condition: float = MAX_CONDITION,
    hold: tuple[str, ...] = (),
) -> PtqFit:
    """Fit the PTQ constants to ``rows`` (rows below `MIN_DELTA_NATS` are dropped first).

    Exponents the rows cannot identify (see the module docstring) are held at
    ``reference``'s values and listed in ``PtqFit.fixed``; ``hold`` names exponents
    (from `EXPONENTS`) to hold there regardless.
    """
    unknown = sorted(set(hold) - set(EXPONENTS))
    if unknown:
        raise InputError(f"hold: unknown exponent {unknown[0]!r}; accepted: {', '.join(EXPONENTS)}")
    kept = fittable(rows)
    if len(kept) < 2:
        raise InputError(f"PTQ fit needs at least 2 rows with delta >= {MIN_DELTA_NATS} nats")
    features: Features = {"params": kept.params, "tokens": kept.tokens, "bits": kept.bits}
    free = [0, 1, 2, 3]
    condition_all = scaled_condition(features, free)
    reasons = []
    for index, exponent in _NAMES_BY_INDEX.items():
        if exponent in hold:
            free.remove(index)
            reasons.append(f"{exponent} (held by choice)")
    condition = scaled_condition(features, free)
    for index in _FIX_ORDER:
        if condition <= max_condition and len(kept) > len(free):
            break
        free.remove(index)
        reasons.append(f"{_NAMES_BY_INDEX[index]} (condition {condition:.3g} > {max_condition:g})")
        condition = scaled_condition(features, free)
    template = PTQ_LAW_FORM.theta_from_public(_public(reference))
    observed = np.log(kept.delta)
    free_index = np.array(free, dtype=np.int64)
    objective = HuberObjective(PTQ_LAW_FORM, features, observed, huber_delta, free_index, template)
    best = None
    for row in PTQ_LAW_FORM.initial_grid:
        start = template.copy()
        start[free_index] = row[free_index]
        # Intercept that matches the mean log degradation at this start's exponents.
        start[0] = 0.0
        start[0] = float(np.mean(observed - _log_delta(start, features)))
        result, converged = local_minimum(objective, start[free_index], "L-BFGS-B")
        if best is None or result.fun < best[0].fun:
            best = (result, converged)
    assert best is not None
    theta = objective.full(best[0].x)
    public = PTQ_LAW_FORM.public_values(theta)
    fixed = {_NAMES_BY_INDEX[i]: public[_NAMES_BY_INDEX[i]] for i in (1, 2, 3) if i not in free}
    fixed_note = (
        "; held at the reference values ("
        + reference.source.split(";")[0]
        + "): "
        + ", ".join(reasons)
        if reasons
        else ""
    )
    constants = PtqConstants(
        c_t=public["c_t"],
        gamma_d=public["gamma_d"],
        gamma_n=public["gamma_n"],
        gamma_post=public["gamma_post"],
        source=source + fixed_note,
        name=name,
    )
    return PtqFit(
        constants,
        fixed,
        ", ".join(reasons),
        condition_all,
        condition,
        float(best[0].fun),
        best[1],
        len(kept),
    )


@dataclass(frozen=True)
class PtqErrors:
    """Errors of predicted degradation and predicted quantised perplexity on some rows.

    ``delta_mape`` and ``ppl_mape`` in percent; ``delta_median_abs`` in nats per token.
    """

    rows: int
    delta_mape: float
    delta_median_abs: float
    ppl_mape: float


def ptq_errors(rows: PtqRows, predicted_delta: Array) -> PtqErrors:
    """Compare ``predicted_delta`` (nats/token) with the rows' observed degradation."""
    observed = rows.delta
    predicted_ppl = rows.ppl_16 * np.exp(predicted_delta)
    return PtqErrors(
        len(rows),
        float(100 * np.mean(np.abs(predicted_delta - observed) / observed)),
        float(np.median(np.abs(predicted_delta - observed))),
        float(100 * np.mean(np.abs(predicted_ppl - rows.ppl_quant) / rows.ppl_quant)),
    )


@dataclass(frozen=True)
class HeldOutModel:
    """Leave-one-model-out: the fit without ``model``'s rows, scored on them."""

    model: str
    fit: PtqFit
    predicted_delta: Array
    errors: PtqErrors


def leave_one_model_out(
    rows: PtqRows,
    reference: PtqConstants = KUMAR_PTQ,
    *,
    huber_delta: float = HUBER_DELTA,
    hold: tuple[str, ...] = (),
) -> list[HeldOutModel]:
    """Refit without each model in turn (each fold re-checks identifiability) and score
    the held-out model's fittable rows."""
    kept = fittable(rows)
    names = list(dict.fromkeys(kept.model))
    if len(names) < 2:
        raise InputError("leave-one-model-out needs rows of at least 2 models")
    out = []
    for name in names:
        mask = np.array([model == name for model in kept.model])
        fit = fit_ptq(kept.take(~mask), reference, huber_delta=huber_delta, hold=hold)
        held = kept.take(mask)
        predicted = predict_delta(fit.constants, held)
        out.append(HeldOutModel(name, fit, predicted, ptq_errors(held, predicted)))
    return out


def predict_delta(constants: PtqConstants, rows: PtqRows) -> Array:
    """The form's degradation at the rows' (N, D, bits), nats per token."""
    theta = PTQ_LAW_FORM.theta_from_public(_public(constants))
    return np.exp(
        _log_delta(theta, {"params": rows.params, "tokens": rows.tokens, "bits": rows.bits})
    )


def _public(constants: PtqConstants) -> dict[str, float]:
    return {
        "c_t": constants.c_t,
        "gamma_d": constants.gamma_d,
        "gamma_n": constants.gamma_n,
        "gamma_post": constants.gamma_post,
    }
