"""Alternative forms of the PTQ degradation, scored on models they never saw (issue #27).

Every form here is linear in its parameters in log space, ``ln delta = X(rows) @ theta``,
so it is fitted by Huber-weighted least squares (iteratively reweighted, `fit_form`) on
the log degradation, like `scaling_law.ptq_fit` fits Kumar et al.'s form. The columns:

* ``kumar-free``: Kumar et al. 2024's Eq. 2, ``[1, ln D, -ln N, -P]``, the four constants
  refitted (`scaling_law.ptq_fit` does the same with bounds on the exponents).
* ``kumar-recal``: Kumar's exponents ``gamma_D``, ``gamma_N`` held (an offset), only the
  scale ``c_T`` and the bit scale ``gamma_post`` refitted: ``[1, -P]``.
* ``kumar-hold-D``: Kumar's ``gamma_D`` held (an offset), the scale, ``gamma_N`` and
  ``gamma_post`` refitted: ``[1, -ln N, -P]`` (the refit `benchmarks/ptq_fit.py --all-rows`
  scores best on pooled perplexity error).
* ``tokens-per-param``: one exponent on ``D / N`` (``gamma_D = gamma_N``): ``[1, ln(D/N), -P]``.
* ``two-regime-N``: Kumar's columns plus a hinge ``max(0, ln N - ln N*)``, so the N
  exponent differs above the break ``N*`` (chosen within the fit, among `BREAKS`, by the
  Huber loss on the fitted rows only).
* ``post-trained``: Kumar's constants, times one factor ``exp(theta)`` on post-trained
  (instruction-tuned) checkpoints, `is_post_trained`: ``[post]`` with Kumar's prediction as
  the offset. Pre-trained checkpoints, and so Kumar et al.'s own range, keep Kumar's
  constants exactly. Motivation: the error of a checkpoint depends on its training
  dynamics, not on (N, D) alone (Catalan-Tatjer et al. 2025, arXiv 2510.06213: the
  learning-rate schedule drives the PTQ error of open checkpoints), and post-training is a
  training stage the (N, D) of pre-training does not see.
* ``base-loss``: degradation grows as the model nears its irreducible loss,
  ``delta = c * R(N, D)^-k * exp(-P / gamma_post)`` with ``R = A / N^alpha + B / D^beta``
  the reducible loss of Hoffmann et al. 2022's fitted law (arXiv 2203.15556, Eq. 10:
  A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28): ``[1, -ln R, -P]``.

`hold_out_form` scores one form like `scaling_law.ptq_holdout.hold_out` scores Kumar's: per
held-out model (or family), the format offsets and the fit come from the other rows only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

from .ptq import KUMAR_PTQ
from .ptq_data import PtqRows
from .ptq_fit import HUBER_DELTA, fittable, predict_delta
from .ptq_formats import kind_offsets, with_kind_offsets
from .ptq_holdout import GROUPINGS

Array = NDArray[np.float64]
#: Hoffmann et al. 2022 (Chinchilla), Eq. 10 fitted constants: A, B, alpha, beta.
CHINCHILLA_REDUCIBLE = (406.4, 410.7, 0.34, 0.28)
#: Kumar et al.'s fitted range: N 30M-220M parameters, D up to 26B tokens (their Section 3),
#: integer weights at 3-8 bits; the corners on which `shift_on_kumar_range` compares.
KUMAR_RANGE = {"params": (3e7, 2.2e8), "tokens": (1e9, 2.6e10), "bits": (3.0, 4.0, 6.0, 8.0)}
#: Candidate breaks N* of the two-regime form, parameters.
BREAKS = (3e9, 1e10, 3e10)
_IRLS_STEPS = 50


#: Model names of post-trained checkpoints end with this (the tables' own model names).
POST_TRAINED_SUFFIX = "-Instruct"


def is_post_trained(rows: PtqRows) -> Array:
    """1.0 for rows of a post-trained (instruction-tuned) checkpoint, 0.0 otherwise."""
    return np.array([m.endswith(POST_TRAINED_SUFFIX) for m in rows.model], dtype=float)


def reducible_loss(params: Array, tokens: Array) -> Array:
    """``A / N^alpha + B / D^beta`` (nats per token) with Hoffmann et al.'s constants."""
    a, b, alpha, beta = CHINCHILLA_REDUCIBLE
    return a / params**alpha + b / tokens**beta


def _kumar_offset(rows: PtqRows) -> Array:
    return KUMAR_PTQ.gamma_d * np.log(rows.tokens) - KUMAR_PTQ.gamma_n * np.log(rows.params)


def _columns(form: str, rows: PtqRows, log_break: float) -> tuple[Array, Array]:
    """Design matrix and fixed offset of ``form`` at ``rows``."""
    ones, bits = np.ones(len(rows)), rows.bits
    log_n, log_d = np.log(rows.params), np.log(rows.tokens)
    zero = np.zeros(len(rows))
    if form == "kumar-free":
        return np.column_stack([ones, log_d, -log_n, -bits]), zero
    if form == "kumar-recal":
        return np.column_stack([ones, -bits]), _kumar_offset(rows)
    if form == "kumar-hold-D":
        return np.column_stack([ones, -log_n, -bits]), KUMAR_PTQ.gamma_d * log_d
    if form == "tokens-per-param":
        return np.column_stack([ones, log_d - log_n, -bits]), zero
    if form == "two-regime-N":
        hinge = np.maximum(0.0, log_n - log_break)
        return np.column_stack([ones, log_d, -log_n, -hinge, -bits]), zero
    if form == "post-trained":
        return is_post_trained(rows)[:, None], np.log(predict_delta(KUMAR_PTQ, rows))
    if form == "base-loss":
        log_r = np.log(reducible_loss(rows.params, rows.tokens))
        return np.column_stack([ones, -log_r, -bits]), zero
    raise InputError(f"PTQ form: {form!r} is not one of {', '.join(FORMS)}")


FORMS = (
    "kumar-free",
    "kumar-recal",
    "kumar-hold-D",
    "tokens-per-param",
    "two-regime-N",
    "post-trained",
    "base-loss",
)


@dataclass(frozen=True)
class FormFit:
    """A fitted form: its coefficients (``theta``, on `_columns`'s columns), the break
    ``N*`` (two-regime only, else nan) and the Huber loss on its rows."""

    form: str
    theta: Array
    n_break: float
    loss: float

    def predict(self, rows: PtqRows) -> Array:
        """Degradation, nats per token, at ``rows``' (N, D, bits)."""
        design, offset = _columns(self.form, rows, float(np.log(self.n_break)))
        return np.exp(design @ self.theta + offset)


def shift_on_kumar_range(fit: FormFit) -> tuple[float, float]:
    """Smallest and largest ratio of ``fit``'s degradation to Kumar et al.'s constants' over
    the corners of `KUMAR_RANGE`. Kumar's constants were fitted there, so a form that moves
    far from them (ratio far from 1) contradicts the data they were fitted to."""
    n, d, p = np.meshgrid(*KUMAR_RANGE.values(), indexing="ij")
    grid = PtqRows(
        ("kumar-range",) * n.size,
        ("kumar-range",) * n.size,
        ("grid",) * n.size,
        n.ravel(),
        d.ravel(),
        p.ravel(),
        np.ones(n.size),
        np.ones(n.size),
        ("grid",) * n.size,
        ("grid",) * n.size,
        ("grid",) * n.size,
        Path("kumar-range"),
    )
    ratio = fit.predict(grid) / predict_delta(KUMAR_PTQ, grid)
    return float(ratio.min()), float(ratio.max())


def _huber_lstsq(design: Array, target: Array, delta: float) -> tuple[Array, float]:
    """Huber-loss linear fit by iteratively reweighted least squares; (theta, loss)."""
    weight = np.ones(len(target))
    theta: Array = np.zeros(design.shape[1])
    for _ in range(_IRLS_STEPS):
        root = np.sqrt(weight)
        theta = np.asarray(
            np.linalg.lstsq(design * root[:, None], target * root, rcond=None)[0], dtype=float
        )
        residual = np.abs(target - design @ theta)
        new = np.where(residual <= delta, 1.0, delta / np.maximum(residual, 1e-12))
        if np.allclose(new, weight, atol=1e-10):
            break
        weight = new
    residual = np.abs(target - design @ theta)
    loss = np.where(residual <= delta, 0.5 * residual**2, delta * (residual - 0.5 * delta))
    return theta, float(loss.sum())


def fit_form(form: str, rows: PtqRows, huber_delta: float = HUBER_DELTA) -> FormFit:
    """Fit ``form`` (one of `FORMS`) to ``rows``' fittable rows at their bits."""
    kept = fittable(rows)
    breaks = BREAKS if form == "two-regime-N" else (float("nan"),)
    best: FormFit | None = None
    for n_break in breaks:
        design, offset = _columns(form, kept, float(np.log(n_break)))
        if len(kept) <= design.shape[1]:
            raise InputError(f"PTQ form {form}: needs more than {design.shape[1]} rows")
        theta, loss = _huber_lstsq(design, np.log(kept.delta) - offset, huber_delta)
        if best is None or loss < best.loss:
            best = FormFit(form, theta, float(n_break), loss)
    assert best is not None
    return best


def hold_out_form(
    rows: PtqRows, form: str | Callable[[PtqRows], Array], by: str = "model"
) -> dict[str, float]:
    """Median predicted / observed degradation per model, each model (``by="model"``) or
    family (``"family"``) predicted by ``form`` fitted without it, at effective bits from
    format offsets measured without it. ``form`` may be a fixed predictor (rows -> delta,
    e.g. Kumar's constants), then only the offsets are estimated. Models whose rows are all
    of a kind no other group measured are absent."""
    if by not in GROUPINGS:
        raise InputError(f"hold out by: {by!r} is not one of {', '.join(GROUPINGS)}")
    kept = fittable(rows)
    labels = np.array(kept.model if by == "model" else kept.family)
    out: dict[str, float] = {}
    for group in dict.fromkeys(labels):
        mine = labels == group
        others = kept.take(~mine)
        offsets = kind_offsets(others)
        placed, ok = with_kind_offsets(kept.take(mine), offsets)
        if not ok.any():
            continue
        scored = placed.take(ok)
        if callable(form):
            predicted = form(scored)
        else:
            placed_others, ok_others = with_kind_offsets(others, offsets)
            predicted = fit_form(form, placed_others.take(ok_others)).predict(scored)
        ratio = predicted / scored.delta
        model = np.array(scored.model)
        for name in dict.fromkeys(scored.model):
            out[name] = float(np.median(ratio[model == name]))
    return out
