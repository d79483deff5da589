"""Loss intervals of frontier designs: parameter noise and model-form spread, side by side.

Two different uncertainties, kept apart and labelled:

``loss_param_low``, ``loss_param_high``
    percentile interval (the law's ``confidence``, 95% for the shipped fit) of the
    prediction over the law's bootstrap refits (resampled by architecture): how much
    the *fitted parameters* are pinned down by the data, for this one form.
``loss_form_min``, ``loss_form_max``
    smallest and largest prediction of the chosen law and every other validated form
    (`search.codesign.model.resolve_forms`; shipped: the four files of
    ``data/scaling/gemstones_forms/``): how much the answer depends on *which form*
    was fitted. Not a confidence interval: the envelope of a handful of point fits.

Both use the design's precision model (the PTQ term of each law's own N convention, or
effective parameters) and its training tokens. Computed for the frontier only (one
bootstrap evaluation per sample per row).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .evaluate import Plan
from .frame import row_fields
from .model import design_loss, design_loss_interval

INTERVAL_COLUMNS = ("loss_param_low", "loss_param_high", "loss_form_min", "loss_form_max")


def add_intervals(plan: Plan, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the `INTERVAL_COLUMNS` (nats per token) filled for every row."""
    table = frame.copy()
    if table.empty:
        for name in INTERVAL_COLUMNS:
            table[name] = pd.Series(dtype=float)
        return table
    records = table.to_dict("records")
    fields = {
        name: np.array([row_fields(row)[name] for row in records], float)
        for name in row_fields(records[0])
    }
    bits = table["weight_bits"].to_numpy(float)
    space = plan.space
    low, high = design_loss_interval(plan.law, space.law, space.model, fields, bits)
    losses = np.stack(
        [design_loss(law, space.law, space.model, fields, bits) for law in (plan.law, *plan.forms)]
    )
    table["loss_param_low"] = low
    table["loss_param_high"] = high
    table["loss_form_min"] = losses.min(axis=0)
    table["loss_form_max"] = losses.max(axis=0)
    return table
