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

``loss_joint_low``, ``loss_joint_high``
    percentile interval over *joint* samples of the law's bootstrap refits and the PTQ
    constant sets of ``data/scaling/ptq/ptq_ensemble.json`` (Kumar et al.'s, the refit to
    the published llama.cpp rows, and one refit leaving each model out): every pair,
    equally weighted. At 18T tokens the PTQ term, not the law, dominates this band.
``ratio_vs_base``, ``ratio_vs_base_low``, ``ratio_vs_base_high``, ``better_than_base``
    the design's perplexity over the space's base model's (same weight bits, same token
    rule), paired sample by sample over the same joint samples; ``better_than_base`` only
    when the whole band lies below 1. The serving side of the comparison (runtime profile,
    kernel overhead) does not change a loss; `benchmarks/codesign_orin.py` samples it with
    these jointly when it picks the best design at the base's speed.

All use the design's precision model (the PTQ term of each law's own N convention, or
effective parameters) and its training tokens. A loss depends on the architecture and
the weight bits only (not the hardware, mesh or workload), so the intervals are computed
once per distinct ``(architecture, weight_bits)`` of the frame, vectorised, and filled
into every row: every feasible design carries them (``--out``), not only the frontier.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scaling_law import load_ptq_ensemble

from .evaluate import Plan
from .frame import row_fields
from .model import base_fields, design_loss, design_loss_interval, design_loss_samples

INTERVAL_COLUMNS = (
    "loss_param_low",
    "loss_param_high",
    "loss_form_min",
    "loss_form_max",
    "loss_joint_low",
    "loss_joint_high",
    "ratio_vs_base",
    "ratio_vs_base_low",
    "ratio_vs_base_high",
)


def add_intervals(plan: Plan, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the `INTERVAL_COLUMNS` (nats per token) filled for every row."""
    table = frame.copy()
    if table.empty:
        for name in INTERVAL_COLUMNS:
            table[name] = pd.Series(dtype=float)
        table["better_than_base"] = pd.Series(dtype=bool)
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
    members = load_ptq_ensemble()
    samples = design_loss_samples(plan.law, space.law, space.model, fields, bits, members)
    tail = (1 - plan.law.confidence) / 2 * 100
    joint_low, joint_high = np.percentile(samples, [tail, 100 - tail], axis=0)
    table["loss_joint_low"] = joint_low[index]
    table["loss_joint_high"] = joint_high[index]
    base = base_fields(space.model)
    distinct_bits = np.unique(bits)
    base_samples = np.column_stack(
        [
            design_loss_samples(plan.law, space.law, space.model, base, np.array([value]), members)[
                :, 0
            ]
            for value in distinct_bits
        ]
    )
    paired = base_samples[:, np.searchsorted(distinct_bits, bits)]
    ratios = np.exp(samples - paired)
    point = np.exp(losses[0] - _base_point(plan, distinct_bits, bits))
    ratio_low, ratio_high = np.percentile(ratios, [tail, 100 - tail], axis=0)
    table["ratio_vs_base"] = point[index]
    table["ratio_vs_base_low"] = ratio_low[index]
    table["ratio_vs_base_high"] = ratio_high[index]
    table["better_than_base"] = (ratio_high < 1.0)[index]
    return table


def _base_point(plan: Plan, distinct_bits: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """The base model's point-estimate loss at each point's weight bits."""
    space = plan.space
    base = base_fields(space.model)
    values = np.array(
        [
            float(design_loss(plan.law, space.law, space.model, base, np.array([value]))[0])
            for value in distinct_bits
        ]
    )
    return values[np.searchsorted(distinct_bits, bits)]
