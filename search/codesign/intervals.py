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
effective parameters) and its training tokens. A loss depends on the architecture and
the weight bits only (not the hardware, mesh or workload), so the intervals are computed
once per distinct ``(architecture, weight_bits)`` of the frame, vectorised, and filled
into every row: every feasible design carries them (``--out``), not only the frontier.
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
    names = [*row_fields(table.iloc[0].to_dict()), "weight_bits"]
    keys = table[names].to_numpy(float)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    fields = {name: unique[:, column] for column, name in enumerate(names[:-1])}
    bits = unique[:, -1]
    space = plan.space
    low, high = design_loss_interval(plan.law, space.law, space.model, fields, bits)
    losses = np.stack(
        [design_loss(law, space.law, space.model, fields, bits) for law in (plan.law, *plan.forms)]
    )
    index = inverse.ravel()
    table["loss_param_low"] = np.asarray(low, float)[index]
    table["loss_param_high"] = np.asarray(high, float)[index]
    table["loss_form_min"] = losses.min(axis=0)[index]
    table["loss_form_max"] = losses.max(axis=0)[index]
    return table
