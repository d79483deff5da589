"""Leave-one-group-out validation of the transferable model, shrinkage towards physics,
and split-conformal intervals grouped by source.

- `held_out_predictions`: every row predicted by a fit (`calibration.transfer`) that
  never saw its group (its source, its hardware, or its model), source offsets left out.
- `choose_shrinkage`: the weight ``lam`` in ``log t = (1 - lam) log t_ideal + lam log
  t_model`` that minimises the mean over groups of the per-group MAPE; for a group's own
  rows it is chosen on the *other* groups' held-out predictions (`nested_shrinkage`),
  so no row tunes the weight it is scored with.
- `conformal_bounds`: for each group, the 10 % and 90 % quantiles of ``log(measured /
  predicted)`` of the other groups' held-out rows, each group weighing the same
  (split conformal with groups as the exchangeable unit), as factors on the prediction.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import numpy as np

from genz.fitting import Array

from .transfer import METRICS, Prior, fit_transfer
from .transfer_terms import TransferTerms

#: Shrinkage weights tried (0: physics alone, 1: the fitted model).
SHRINKAGE_GRID = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))
#: Groups with fewer rows are not held out on their own (their rows are still fitted).
MIN_GROUP_ROWS = 2


def held_out_predictions(
    terms: TransferTerms,
    groups: Array,
    progress: Callable[[str], None] | None = None,
    min_rows: int = MIN_GROUP_ROWS,
    priors: Mapping[str, Prior] | None = None,
    on_group: Callable[[str, Array, Mapping[str, Array]], None] | None = None,
    only: Collection[str] | None = None,
) -> dict[str, Array]:
    """Per metric, each row's prediction by a fit without its group (NaN for rows of
    groups smaller than ``min_rows``, which are never held out, only fitted);
    ``priors`` overrides entries of `calibration.transfer.PRIORS`; ``on_group`` is
    called with each held-out group, its rows and their predictions as they come;
    ``only`` holds out just the groups it names (the others are only fitted)."""
    out = {name: np.full(len(terms), np.nan) for name in METRICS}
    for group in np.unique(groups):
        test = groups == group
        if test.sum() < min_rows or (only is not None and str(group) not in only):
            continue
        fit = fit_transfer(terms, ~test, priors=priors)
        predicted = fit.predict(test, with_source=False)
        for name in METRICS:
            out[name][test] = predicted[name]
        if progress is not None:
            progress(str(group))
        if on_group is not None:
            on_group(str(group), test, predicted)
    return out


def blend(ideal: Array, model: Array, lam: float | Array) -> Array:
    """Geometric blend ``ideal ** (1 - lam) * model ** lam``."""
    return np.exp((1.0 - lam) * np.log(ideal) + lam * np.log(model))


def group_mape(predicted: Array, measured: Array, groups: Array) -> float:
    """Mean over groups of each group's mean absolute percentage error (NaN rows out)."""
    ok = np.isfinite(predicted) & np.isfinite(measured)
    errors = [
        np.mean(np.abs(predicted[ok & (groups == g)] / measured[ok & (groups == g)] - 1))
        for g in np.unique(groups[ok])
    ]
    return float(np.mean(errors)) if errors else float("nan")


def choose_shrinkage(ideal: Array, model: Array, measured: Array, groups: Array) -> float:
    """The `SHRINKAGE_GRID` weight with the smallest group-averaged MAPE (ties: smaller)."""
    scores = [group_mape(blend(ideal, model, lam), measured, groups) for lam in SHRINKAGE_GRID]
    if not np.any(np.isfinite(scores)):
        return 0.0
    return float(SHRINKAGE_GRID[int(np.nanargmin(scores))])


def nested_shrinkage(
    ideal: Array, model: Array, measured: Array, groups: Array
) -> tuple[Array, dict[str, float]]:
    """Per row, the blend with the weight chosen without the row's group; and the
    weight of each group."""
    out = np.full(len(ideal), np.nan)
    weights = {}
    for group in np.unique(groups):
        own = groups == group
        lam = choose_shrinkage(ideal[~own], model[~own], measured[~own], groups[~own])
        out[own] = blend(ideal[own], model[own], lam)
        weights[str(group)] = lam
    return out, weights


def conformal_bounds(
    predicted: Array, measured: Array, groups: Array, levels: tuple[float, float] = (0.1, 0.9)
) -> tuple[Array, Array]:
    """Per row, the lower and upper factor of its 80 % interval from the other groups'
    residuals (groups weighted equally); NaN where no other group has residuals."""
    residual = np.log(measured / predicted)
    ok = np.isfinite(residual)
    low, high = np.full(len(predicted), np.nan), np.full(len(predicted), np.nan)
    for group in np.unique(groups):
        own = groups == group
        others = ok & ~own
        if not np.any(others):
            continue
        counts = _counts(groups[others])
        weights = 1.0 / np.array([counts[g] for g in groups[others]])
        lo, hi = weighted_quantiles(residual[others], weights, levels)
        low[own], high[own] = np.exp(lo), np.exp(hi)
    return low, high


def _counts(labels: Array) -> Mapping[object, int]:
    values, counts = np.unique(labels, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist(), strict=True))


def weighted_quantiles(
    values: Array, weights: Array, levels: tuple[float, ...]
) -> tuple[float, ...]:
    """The smallest values whose cumulative weight share reaches each level."""
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order]) / weights.sum()
    ranked = values[order]
    return tuple(
        float(ranked[min(int(np.searchsorted(cumulative, q)), len(ranked) - 1)]) for q in levels
    )
