"""The PTQ term scored on models (or families) that tuned nothing it uses (issue #27).

For each held-out group (one model, or one family), everything is estimated without the
group's rows: the format offsets (`scaling_law.ptq_formats.kind_offsets`, bits each format
kind is worth fewer than llama.cpp's k-quants, measured within the other models) and the
refit of the PTQ constants (`scaling_law.ptq_fit.fit_ptq`, on the other models' rows at
their effective bits). The group's rows are then placed at their effective bits with those
offsets and predicted by the refit and by fixed constants (Kumar et al.'s: out of sample
everywhere). Rows of a kind no other model measured cannot be placed and are counted, not
scored. The score per model is the median predicted / observed degradation; issue #27's
target is every model within `TARGET`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

from .ptq import KUMAR_PTQ, PtqConstants
from .ptq_data import PtqRows
from .ptq_fit import PtqFit, fit_ptq, fittable, predict_delta
from .ptq_formats import kind_offsets, with_kind_offsets

Array = NDArray[np.float64]
TARGET = (0.8, 1.25)
GROUPINGS = ("model", "family")


@dataclass(frozen=True)
class HeldOutGroup:
    """One held-out group: the refit without it, the offsets used, its placed rows (at
    effective bits) with both predictions, and how many of its rows could not be placed."""

    group: str
    fit: PtqFit
    offsets: dict[str, float]
    rows: PtqRows
    predicted_refit: Array
    predicted_fixed: Array
    unplaced: int


def _labels(rows: PtqRows, by: str) -> tuple[str, ...]:
    if by not in GROUPINGS:
        raise InputError(f"hold out by: {by!r} is not one of {', '.join(GROUPINGS)}")
    return rows.model if by == "model" else rows.family


def hold_out(
    rows: PtqRows,
    by: str = "model",
    fixed: PtqConstants = KUMAR_PTQ,
    *,
    hold: tuple[str, ...] = (),
) -> list[HeldOutGroup]:
    """Hold out each model (``by="model"``) or family (``by="family"``) in turn (see the
    module docstring); ``hold`` names exponents the refits keep at ``fixed``'s values."""
    kept = fittable(rows)
    labels = np.array(_labels(kept, by))
    groups = list(dict.fromkeys(labels))
    if len(groups) < 2:
        raise InputError(f"holding out by {by} needs rows of at least 2 {by}s")
    out = []
    for group in groups:
        mine = labels == group
        others = kept.take(~mine)
        offsets = kind_offsets(others)
        placed_others, ok_others = with_kind_offsets(others, offsets)
        fit = fit_ptq(placed_others.take(ok_others), fixed, hold=hold)
        placed, ok = with_kind_offsets(kept.take(mine), offsets)
        scored = placed.take(ok)
        out.append(
            HeldOutGroup(
                str(group),
                fit,
                offsets,
                scored,
                predict_delta(fit.constants, scored),
                predict_delta(fixed, scored),
                int((~ok).sum()),
            )
        )
    return out


def median_ratio_by_model(rows: PtqRows, predicted: Array) -> dict[str, float]:
    """Median predicted / observed degradation of each model in ``rows``."""
    ratio = np.asarray(predicted, dtype=float) / rows.delta
    model = np.array(rows.model)
    return {name: float(np.median(ratio[model == name])) for name in dict.fromkeys(rows.model)}


def held_out_medians(groups: list[HeldOutGroup], which: str = "refit") -> dict[str, float]:
    """Median predicted / observed per model over every held-out group, with the refit
    (``which="refit"``) or the fixed constants (``"fixed"``)."""
    if which not in ("refit", "fixed"):
        raise InputError(f"which: {which!r} is not 'refit' or 'fixed'")
    out: dict[str, float] = {}
    for group in groups:
        if len(group.rows) == 0:
            continue
        predicted = group.predicted_refit if which == "refit" else group.predicted_fixed
        out.update(median_ratio_by_model(group.rows, predicted))
    return out


def within_target(medians: dict[str, float]) -> int:
    """How many models' medians lie within `TARGET`."""
    return sum(TARGET[0] <= value <= TARGET[1] for value in medians.values())
