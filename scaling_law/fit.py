"""Fit a loss law: multi-start robust regression, bootstrap intervals, held-out error.

One entry point, scipy-shaped: `fit_law(data, form, method=...)` returns a
frozen `FitResult` with ``success``, ``status``, ``message``, the fitted
`ScalingLaw` (values, percentile intervals, bootstrap standard errors) and the
residual and cross-validation reports. Procedure (Hoffmann et al. 2022,
Approach 3, as replicated by Besiroglu et al. 2024):

1. Huber loss (``delta = 1e-3``) on log-loss residuals (`scaling_law.objective`).
2. Evaluate the objective on the form's start grid (Epoch's 4,500 points for the
   Chinchilla forms); run the local solver from the ``n_starts`` best grid points
   (``None``: from every point); keep the lowest minimum.
3. Bootstrap: refit on ``bootstrap`` resamples (rows drawn with replacement, or
   whole runs with ``bootstrap_unit='architecture'``), each started from the
   distinct local minima of step 2; percentile intervals and standard deviations
   of the reported parameters.
4. Held-out error from k-fold, leave-one-out or leave-one-architecture-out
   (``cross_validation='architecture'``: every checkpoint of one width x depth
   held out together) refits; residual summary. The law records its domain
   (ranges of the fitted rows, `scaling_law.domain`).

Everything is deterministic given ``seed``. A tqdm progress bar (stderr) counts
solver runs; ``progress=False`` hides it. BLAS is held to one thread while the
solvers run: their BLAS calls are on 5-by-5 problems, and a threaded OpenBLAS
made L-BFGS-B about ten times slower on a busy two-core machine.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from roofline import InputError, require_fraction, require_positive

from .data import ScalingData
from .diagnostics import (
    cross_validate,
    fold_indices,
    residual_report,
)
from .domain import dimension_report, domain_of
from .fit_result import FitResult
from .forms import LawForm, get_form
from .law import ScalingLaw
from .objective import SUPPORTED_METHODS, HuberObjective, local_minimum, within_bounds
from .precision import DEFAULT_REFERENCE_BITS, KUMAR_GAMMA_W
from .resampling import MAX_RESTART_MINIMA, Refitter, distinct_minima

logger = logging.getLogger(__name__)
Array = NDArray[np.float64]


def fit_law(
    data: ScalingData,
    form: str | LawForm = "chinchilla",
    method: str = "L-BFGS-B",
    *,
    huber_delta: float = 1e-3,
    grid: ArrayLike | None = None,
    n_starts: int | None = 24,
    bootstrap: int = 100,
    confidence: float = 0.95,
    cross_validation: int | str | None = 5,
    bootstrap_unit: str = "row",
    drop_highest_loss: int = 0,
    include_embeddings: bool = True,
    moe_parameters: str = "active",
    gamma_w: float = KUMAR_GAMMA_W,
    reference_bits: float = DEFAULT_REFERENCE_BITS,
    seed: int = 0,
    progress: bool = True,
    maxiter: int | None = None,
) -> FitResult:
    """Fit ``form`` to ``data`` by robust multi-start regression in log space.

    Parameters
    ----------
    data
        Training runs (`load_scaling_csv` or `ScalingData.from_columns`).
    form
        Registered form name or a `LawForm`.
    method
        ``'L-BFGS-B'`` (default), ``'BFGS'`` or ``'Nelder-Mead'``.
    huber_delta
        Huber threshold on log-loss residuals (Hoffmann et al.: 1e-3).
    grid
        Start points ``(g, p)`` in fit space; default: the form's grid.
    n_starts
        Solver runs from the best grid points; None runs from every point.
    bootstrap
        Resamples for intervals (0 skips them).
    confidence
        Coverage of the percentile intervals, in (0, 1).
    cross_validation
        Folds k >= 2, ``'loo'`` (leave-one-out), ``'architecture'`` (one fold per run:
        all rows of one architecture, see `ScalingData.run_groups`), or None/0 to skip.
    bootstrap_unit
        ``'row'`` (resample rows) or ``'architecture'`` (resample whole runs).
    drop_highest_loss
        Leave out the runs whose loss is at least the k-th highest (Besiroglu et
        al. drop 5 from the Chinchilla set: the runs with fewer than 0.41 tokens
        per parameter).
    include_embeddings, moe_parameters
        Convention of N when counted from architecture columns; stored in the law.
    gamma_w, reference_bits
        Precision model for a ``weight_bits`` column; stored in the law.
    seed
        Seed of the bootstrap resampling and fold assignment.
    progress
        Show a tqdm bar on stderr.
    maxiter
        Iteration cap per solver run (default depends on the method).
    """
    law_form = get_form(form)
    if method not in SUPPORTED_METHODS:
        raise InputError(f"unknown method {method!r}; accepted: {', '.join(SUPPORTED_METHODS)}")
    require_positive("huber_delta", huber_delta)
    require_fraction("confidence", confidence)
    if confidence == 1:
        raise InputError("confidence must be in (0, 1), got 1")
    if moe_parameters not in ("active", "total"):
        raise InputError(f"moe_parameters must be 'active' or 'total', got {moe_parameters!r}")
    if bootstrap_unit not in ("row", "architecture"):
        raise InputError(f"bootstrap_unit must be 'row' or 'architecture', got {bootstrap_unit!r}")
    seed = _count("seed", seed, minimum=0)
    bootstrap = _count("bootstrap", bootstrap, minimum=0)
    drop_highest_loss = _count("drop_highest_loss", drop_highest_loss, minimum=0)
    if n_starts is not None:
        n_starts = _count("n_starts", n_starts, minimum=1)
    folds_option = _folds(cross_validation)

    features = data.law_features(include_embeddings, moe_parameters, gamma_w, reference_bits)
    missing = [name for name in law_form.required_features if name not in features]
    if missing:
        raise InputError(
            f"form {law_form.name!r} needs architecture columns layers and hidden (for "
            f"{missing[0]}); {data.origin} has: {', '.join(data.columns)}"
        )
    keep = _kept_rows(data.loss, drop_highest_loss)
    features = {name: values[keep] for name, values in features.items()}
    loss, rows = data.loss[keep], data.row_numbers[keep]
    all_groups, group_labels = data.run_groups()
    groups = all_groups[keep]

    fixed = dict(law_form.fixed_parameters(features))
    free = np.array([i for i in range(law_form.size) if i not in fixed], dtype=np.int64)
    if len(loss) < len(free) + 1:
        raise InputError(
            f"{data.origin}: {len(loss)} runs cannot fit {len(free)} parameters; need at least "
            f"{len(free) + 1}"
        )
    points = np.unique(np.column_stack(list(features.values())), axis=0).shape[0]
    if points < len(free) + 1:  # e.g. ten identical runs: any A, alpha fit; not "converged"
        raise InputError(
            f"{data.origin}: the runs used have {points} distinct point(s) of "
            f"{', '.join(features)}; fitting {len(free)} parameters needs at least {len(free) + 1}"
        )
    if isinstance(folds_option, int) and folds_option > len(loss):
        raise InputError(
            f"cross_validation must be at most the number of rows used ({len(loss)}) for "
            f"k-fold, got {folds_option}; 'loo' holds out one row at a time"
        )
    starts = _start_grid(law_form, grid, fixed)
    template = starts[0].copy()
    objective = HuberObjective(law_form, features, np.log(loss), float(huber_delta), free, template)
    order = np.argsort(objective.values_at(starts), kind="stable")
    chosen = starts[order if n_starts is None else order[:n_starts]]
    fold_sets = None
    if folds_option is not None:
        fold_sets = fold_indices(len(loss), folds_option, np.random.default_rng([seed, 1]), groups)
    total_runs = len(chosen) + (bootstrap + len(fold_sets or [])) * MAX_RESTART_MINIMA
    with (
        threadpool_limits(limits=1, user_api="blas"),
        tqdm(
            total=total_runs, desc=f"fit {law_form.name}", file=sys.stderr, disable=not progress
        ) as bar,
    ):
        runs = []
        for start in chosen:
            runs.append(local_minimum(objective, start[free], method, maxiter))
            bar.update()
        finite = [(run, ok) for run, ok in runs if np.isfinite(run.fun)]
        if not finite:
            raise InputError(f"fit failed: no start gave a finite objective on {data.origin}")
        best, best_converged = min(finite, key=lambda pair: pair[0].fun)
        refitter = Refitter(objective, distinct_minima(finite, best), method, maxiter, bar)
        samples, failures = refitter.bootstrap(
            bootstrap,
            np.random.default_rng([seed, 0]),
            groups if bootstrap_unit == "architecture" else None,
        )
        report = None
        if fold_sets is not None:
            kind = _CV_KINDS.get(str(folds_option), "k-fold")
            labels = None
            if folds_option == "architecture":
                labels = [group_labels[int(groups[fold[0]])] for fold in fold_sets]
            report = cross_validate(loss, fold_sets, refitter.predict_held_out, kind, labels)

    theta = objective.full(best.x)
    status, message = _status(law_form, best, best_converged, theta, method)
    nfev = int(sum(run.nfev for run, _ in runs))
    predicted = np.exp(law_form.log_loss(theta, features))
    residuals = residual_report(loss, predicted, rows)
    conventions = (include_embeddings, moe_parameters, gamma_w, reference_bits)
    stated = {name: values[keep] for name, values in data.stated_dimensions().items()}
    domain = domain_of(features, stated)
    law = _build_law(
        law_form,
        theta,
        samples,
        fixed,
        confidence,
        conventions,
        domain=domain,
        metadata={
            "data": {
                "origin": data.origin,
                "sha256": data.sha256,
                "rows": len(data),
                "rows_used": int(keep.sum()),
                "drop_highest_loss": drop_highest_loss,
                "row_label": data.row_label,
            },
            "fit": {
                "method": method,
                "success": status == 0,
                "status": status,
                "message": message,
                "objective": float(best.fun),
                "huber_delta": float(huber_delta),
                "grid_points": len(starts),
                "starts": len(chosen),
                "nfev": nfev,
                "seed": seed,
                "bootstrap_requested": bootstrap,
                "bootstrap_unit": bootstrap_unit,
                "bootstrap_replicates": len(samples),
                "bootstrap_failures": failures,
            },
            "dimensions": dimension_report(domain, stated),
            "residuals": residuals.to_dict(),
            "cross_validation": None if report is None else report.to_dict(),
        },
    )
    logger.info("fit %s by %s: %s (objective %.6g)", law_form.name, method, message, best.fun)
    return FitResult(
        success=status == 0,
        status=status,
        message=message,
        method=method,
        law=law,
        objective=float(best.fun),
        nfev=nfev,
        starts=len(chosen),
        points=int(keep.sum()),
        excluded=int((~keep).sum()),
        bootstrap_replicates=len(samples),
        bootstrap_failures=failures,
        residuals=residuals,
        cross_validation=report,
    )


def _count(field: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InputError(f"{field} must be an integer >= {minimum}, got {value!r}")
    return int(value)


_CV_KINDS = {"loo": "leave-one-out", "architecture": "leave-one-architecture-out"}


def _folds(option: int | str | None) -> int | str | None:
    if option is None or option == 0:
        return None
    if option in _CV_KINDS:
        return str(option)
    if isinstance(option, bool) or not isinstance(option, int | np.integer) or option < 2:
        raise InputError(
            "cross_validation must be an integer >= 2, 'loo', 'architecture' or 0/None, "
            f"got {option!r}"
        )
    return int(option)


def _kept_rows(loss: Array, drop_highest_loss: int) -> NDArray[np.bool_]:
    if drop_highest_loss == 0:
        return np.ones(len(loss), dtype=bool)
    if drop_highest_loss >= len(loss):
        raise InputError(
            f"drop_highest_loss must be < the number of runs ({len(loss)}), got {drop_highest_loss}"
        )
    threshold = np.sort(loss)[-drop_highest_loss]
    return loss < threshold


def _start_grid(form: LawForm, grid: ArrayLike | None, fixed: dict[int, float]) -> Array:
    starts = form.initial_grid if grid is None else np.asarray(grid, dtype=float)
    if starts.ndim != 2 or starts.shape[1] != form.size or len(starts) == 0:
        raise InputError(f"grid must have shape (g, {form.size}), got {starts.shape}")
    if not np.all(np.isfinite(starts)):
        raise InputError("grid must hold finite numbers")
    starts = starts.copy()
    for index, value in fixed.items():
        starts[:, index] = value
    return np.unique(starts, axis=0) if fixed else starts


def _status(
    form: LawForm, best: Any, converged: bool, theta: Array, method: str
) -> tuple[int, str]:
    if not within_bounds(form, theta):
        return 2, f"{method} estimate lies outside the form's bounds {form.bounds}"
    if not converged:
        return 1, f"{method} did not converge from the best start: {best.message}"
    return 0, f"converged ({best.message})" if best.success else "converged (stable under restart)"


def _build_law(
    form: LawForm,
    theta: Array,
    samples: list[Array],
    fixed: dict[int, float],
    confidence: float,
    conventions: tuple[bool, str, float, float],
    domain: dict[str, tuple[float, float]],
    metadata: dict[str, Any],
) -> ScalingLaw:
    include_embeddings, moe_parameters, gamma_w, reference_bits = conventions
    values = form.public_values(theta)
    fixed_names = tuple(form.public_names[i] for i in sorted(fixed))
    public = form.to_public(np.array(samples)) if samples else np.empty((0, form.size))
    intervals: dict[str, tuple[float, float] | None] = {}
    errors: dict[str, float | None] = {}
    tail = (1 - confidence) / 2 * 100
    for index, name in enumerate(form.public_names):
        if name in fixed_names or len(public) < 2:
            intervals[name], errors[name] = None, None
            continue
        low, high = np.percentile(public[:, index], [tail, 100 - tail])
        intervals[name] = (float(low), float(high))
        errors[name] = float(np.std(public[:, index], ddof=1))
    return ScalingLaw(
        form=form.name,
        params=values,
        intervals=intervals,
        standard_errors=errors,
        fixed=fixed_names,
        confidence=float(confidence),
        bootstrap_params=tuple(tuple(float(v) for v in row) for row in public),
        include_embeddings=include_embeddings,
        moe_parameters=moe_parameters,
        gamma_w=float(gamma_w),
        reference_bits=float(reference_bits),
        metadata=metadata,
        domain=domain,
    )
