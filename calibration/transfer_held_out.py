"""Leave-one-group-out predictions through genz of the profiles the transferable model
writes (`calibration.transfer_profile`): for each group (a source), the model is fitted
without it, its generic profile and its rows' stack profiles are built from that fit, and
`genz.evaluate` predicts the group's rows with them. The numbers are the genz path's, the
one ``predict --runtime`` takes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping

import numpy as np

from genz import RuntimeProfile, load_model, runtime_from_dict
from genz.fitting import Array, evaluate
from roofline import load_platform

from .rows import row_inputs
from .transfer import METRICS, Prior, TransferFit, fit_transfer
from .transfer_profile import generic_values, profile_document, stack_values
from .transfer_terms import TransferTerms

#: The profile kinds scored: the generic one (terms that transfer) and the row's stack's.
PROFILE_KINDS = ("generic", "stack")
_COMMAND = "held-out fit (calibration.transfer_held_out)"


def held_out_profile_predictions(
    terms: TransferTerms,
    groups: Array,
    progress: Callable[[str], None] | None = None,
    min_rows: int = 2,
    only: Collection[str] | None = None,
    priors: Mapping[str, Prior] | None = None,
) -> dict[str, dict[str, Array]]:
    """Per profile kind and metric, each row's genz prediction by the profile a fit
    without its group writes (NaN for groups smaller than ``min_rows``, and for groups
    not in ``only`` when given: a share of the groups, for runs split across processes);
    ``priors`` overrides entries of the fit's priors (`calibration.transfer.fit_transfer`)."""
    out = {kind: {name: np.full(len(terms), np.nan) for name in METRICS} for kind in PROFILE_KINDS}
    for group in np.unique(groups):
        test = groups == group
        if test.sum() < min_rows or (only is not None and str(group) not in only):
            continue
        fit = fit_transfer(terms, ~test, priors=priors)
        generic = profile_of(fit, None)
        for stack in np.unique(terms.stack.index[test]):
            rows = test & (terms.stack.index == stack)
            stack_profile = profile_of(fit, terms.stack.names[stack])
            for kind, profile in (("generic", generic), ("stack", stack_profile)):
                predicted = predict_rows(terms, rows, profile)
                for name in METRICS:
                    out[kind][name][rows] = predicted[name][rows]
        if progress is not None:
            progress(str(group))
    return out


def profile_of(fit: TransferFit, stack: str | None) -> RuntimeProfile:
    """The generic profile (``stack`` None) or a stack's, as genz loads it."""
    values = generic_values(fit) if stack is None else stack_values(fit, stack)
    name = "transfer" if stack is None else "transfer-stack"
    return runtime_from_dict(profile_document(fit, values, name, _COMMAND, ""))


def predict_rows(terms: TransferTerms, rows: Array, profile: RuntimeProfile) -> dict[str, Array]:
    """TTFT, ITL and batch latency of the ``rows`` (boolean) by `genz.evaluate` with
    ``profile`` (one call per model x hardware), seconds; NaN elsewhere. Rows the model
    charges no per-request cost (``terms.request_cost_applies``: pass-timed harnesses
    under ``stacks="harness"``) are predicted with the profile's left out, as the model
    does: what such a harness reports has none."""
    out = {name: np.full(len(terms), np.nan) for name in METRICS}
    passes_only = dataclasses.replace(profile, request_overhead_s=0.0)
    chosen: dict[tuple[str, str, bool], list[int]] = {}
    for i in np.flatnonzero(rows):
        row = terms.stored[i].row
        key = (row.model, row.hw, bool(terms.request_cost_applies[i]))
        chosen.setdefault(key, []).append(int(i))
    for (model, hw, pays), indices in chosen.items():
        measured = [terms.stored[i].row for i in indices]
        costed = evaluate(
            load_model(model),
            load_platform(hw),
            row_inputs(measured),
            profile if pays else passes_only,
        )
        out["ttft_s"][indices] = costed.ttft_s
        out["itl_s"][indices] = costed.tpot_s
        out["batch_latency_s"][indices] = costed.e2e_s
    return out
