"""The priors of the transferable model (`calibration.transfer`): one normal prior per
parameter block (log scale for costs, logit scale for efficiencies), the opt-in
overrides, and the identifiability rules that tighten a prior where the training rows
cannot tell two terms apart (a device measured on one runtime, a stack measured at one
batch size).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from genz.fitting import Array

from .device_priors import CITED_DEVICE_SD
from .transfer_terms import Levels, TransferTerms

if TYPE_CHECKING:
    from .transfer import Layout


@dataclass(frozen=True)
class Prior:
    """Normal prior of one parameter block: mean and standard deviation."""

    mean: float
    sd: float


#: Priors (log or logit scale). Launch cost: a few microseconds per kernel (CUDA
#: launch latency ~3-5 us); ``log_graph``, the factor on it of a decode pass replayed as
#: a CUDA graph: about 0.7 (0.5-0.95 within one sd), from the two pull requests that
#: introduced graphs, read against this model (memory time at 80 % of peak bandwidth,
#: the rest per-step overhead): vllm-project/vllm#1440, Llama-2-7B batch 1, 12.0 -> 10.5
#: ms per token, overhead 3.6 -> 2.1 ms (0.6, if on an A100: the GPU is not named); ggml-org/llama.cpp#6766, LLaMA-2-7B Q4_0
#: tg, RTX 3090 8.6 -> 7.8 ms (0.76), RTX 4090 7.2 -> 6.8 ms (0.83). The graph removes
#: the launches, not the engine's per-step host work that ``kappa`` also carries;
#: per-sequence cost: tens of
#: microseconds per step (sampling, scheduling); per-request cost: about a millisecond
#: (tokenisation, scheduling, the first step's set-up). Wide: the data decide.
PRIORS: Mapping[str, Prior] = {
    "class": Prior(0.0, 0.5),
    "device": Prior(0.0, 0.4),
    "stack_eff_global": Prior(0.0, 1.0),
    "stack_eff_runtime": Prior(0.0, 0.6),
    "stack_eff": Prior(0.0, 0.4),
    "format": Prior(0.0, 0.6),
    "format_compute": Prior(0.0, 0.6),
    "log_kappa_global": Prior(float(np.log(4e-6)), 2.0),
    "log_kappa_runtime": Prior(0.0, 1.0),
    "log_kappa": Prior(0.0, 1.0),
    "log_sigma_global": Prior(float(np.log(2e-5)), 2.0),
    "log_sigma_runtime": Prior(0.0, 1.0),
    "log_sigma": Prior(0.0, 0.7),
    "log_rho_global": Prior(float(np.log(1e-3)), 3.0),
    "log_rho_runtime": Prior(0.0, 2.0),
    "log_rho": Prior(0.0, 3.0),
    "stack_eff_harness": Prior(0.0, 0.4),
    "log_kappa_harness": Prior(0.0, 1.0),
    "log_sigma_harness": Prior(0.0, 0.7),
    "log_rho_harness": Prior(0.0, 1.5),
    "source_eff": Prior(0.0, 0.3),
    "source_kappa": Prior(0.0, 0.5),
    "source_rho": Prior(0.0, 0.5),
    "source_scale": Prior(0.0, 0.15),
    "class_runtime_eff": Prior(0.0, 1.5),
    "class_runtime_kappa": Prior(0.0, 1.5),
    "device_one_runtime": Prior(0.0, 0.4),
    "class_one_runtime": Prior(0.0, 0.5),
    "log_graph": Prior(float(np.log(0.7)), 0.3),
    "log_tau_global": Prior(float(np.log(2e-4)), 2.0),
    "log_tau_runtime": Prior(0.0, 1.5),
    "log_tau": Prior(0.0, 1.0),
    "log_theta_global": Prior(0.0, 0.5),
    "log_theta_harness": Prior(0.0, 0.3),
    "log_theta_runtime": Prior(0.0, 0.3),
    "log_theta": Prior(0.0, 0.2),
}
#: Overrides of `PRIORS` with the per-step cost ``tau`` (opt-in,
#: `calibration.transfer_terms.with_step_cost`): a runtime's per-sequence cost is held
#: nearer the global one (sd 0.5 in log), its per-step cost is free to move (sd 1.5): the
#: work done per sequence of a step (sampling, stop checks, KV bookkeeping) is much the
#: same across engines, the host work per step (a Python scheduler or a C++ loop) is what
#: differs; so a runtime measured at batch 1 only puts its overhead in ``tau``, and the
#: split of the two is read from the stacks measured at several batch sizes.
STEP_PRIORS: Mapping[str, Prior] = {
    "log_sigma_runtime": Prior(0.0, 0.5),
}
#: With the per-step cost, the sd of the per-sequence cost ``sigma`` of a runtime or
#: stack whose training rows all have one batch size (`one_batch_levels`): such rows
#: cannot tell a cost per sequence from one per step, so ``sigma`` stays at its parent's
#: and the step cost takes what they add.
ONE_BATCH_SIGMA = Prior(0.0, 0.05)
#: With the opt-in exponent ``theta`` of the per-sequence cost
#: (`calibration.transfer_terms.with_sublinear`; ``log theta = global + runtime +
#: stack``, priors ``log_theta*`` in `PRIORS`: centred on 1, today's linear cost; the
#: global level free to move by a factor of 1.6 within one sd), the sd of the runtime
#: or stack level of a runtime or stack whose training rows have one batch size
#: (`one_batch_levels`): ``sigma x S ** theta`` at one ``S`` cannot tell ``theta`` from
#: ``sigma``, so such a level keeps its parent's exponent.
ONE_BATCH_THETA = Prior(0.0, 0.01)
#: Opt-in overrides of `PRIORS` that scope device terms to the stack: a device (class)
#: whose training rows all come from one runtime is held at sd 0.1, so that runtime's
#: effect on it goes to the device x runtime term, not to the device terms other stacks
#: get. In `PRIORS` the two equal the ordinary device and class priors (no effect).
SCOPED_PRIORS: Mapping[str, Prior] = {
    "device_one_runtime": Prior(0.0, 0.1),
    "class_one_runtime": Prior(0.0, 0.1),
}
#: Overrides of `PRIORS` under ``stacks="harness"``: the runtime level is held tighter,
#: so a stack no fit saw starts from what many stacks share (the harness level) rather
#: than what one large suite set for its runtime.
HARNESS_PRIORS: Mapping[str, Prior] = {
    "stack_eff_runtime": Prior(0.0, 0.3),
    "log_kappa_runtime": Prior(0.0, 0.5),
    "log_sigma_runtime": Prior(0.0, 0.5),
    "log_rho_runtime": Prior(0.0, 1.0),
}


def model_priors(
    stacks: str, overrides: Mapping[str, Prior] | None = None, step_cost: bool = False
) -> dict[str, Prior]:
    """The priors of a fit with stack structure ``stacks``: `PRIORS`, with
    `HARNESS_PRIORS` under ``"harness"``, `STEP_PRIORS` with the per-step cost
    (``step_cost``), then ``overrides``."""
    structure = HARNESS_PRIORS if stacks == "harness" else {}
    step = STEP_PRIORS if step_cost else {}
    return {**PRIORS, **structure, **step, **(overrides or {})}


_GLOBAL = (
    "stack_eff_global",
    "stack_eff_global",
    "log_kappa_global",
    "log_sigma_global",
    "log_rho_global",
)
_RUNTIME = (
    "stack_eff_runtime",
    "stack_eff_runtime",
    "log_kappa_runtime",
    "log_sigma_runtime",
    "log_rho_runtime",
)
_HARNESS = (
    "stack_eff_harness",
    "stack_eff_harness",
    "log_kappa_harness",
    "log_sigma_harness",
    "log_rho_harness",
)
_STACK = ("stack_eff", "stack_eff", "log_kappa", "log_sigma", "log_rho")


def prior_arrays(
    layout: Layout,
    priors: Mapping[str, Prior] = PRIORS,
    terms: TransferTerms | None = None,
    train: Array | None = None,
) -> tuple[Array, Array]:
    """Mean and standard deviation of every parameter's prior: `PRIORS` (or
    ``priors``); a device whose every row has a cited microbenchmark prior mean
    (``terms.cited_compute`` / ``cited_memory``) has the sd `CITED_DEVICE_SD`; with
    ``train``, a device or device class whose training rows all come from one runtime
    has at most the sd of ``device_one_runtime`` / ``class_one_runtime``
    (`one_runtime_levels`); with the per-step cost (``terms.step_cost``), a runtime or
    stack whose training rows have one batch size has the per-sequence cost sd of
    `ONE_BATCH_SIGMA` (`one_batch_levels`); with the exponent of the per-sequence cost
    (``terms.sublinear``), such a runtime, stack (or harness, with
    ``terms.theta_harness``) has the exponent sd of `ONE_BATCH_THETA`."""
    mean, sd = np.zeros(layout.size), np.ones(layout.size)
    simple = {
        "class_c": "class",
        "class_m": "class",
        "device_c": "device",
        "device_m": "device",
        "format": "format",
        "format_c": "format_compute",
    }
    for block, prior in simple.items():
        part = layout.blocks[block]
        mean[part], sd[part] = priors[prior].mean, priors[prior].sd
    part = layout.blocks["source"]
    count = (part.stop - part.start) // 5
    names5 = ("source_eff", "source_eff", "source_kappa", "source_rho", "source_scale")
    mean[part] = np.tile([priors[name].mean for name in names5], count)
    sd[part] = np.tile([priors[name].sd for name in names5], count)
    part = layout.blocks["class_runtime"]
    count = (part.stop - part.start) // 3
    names3 = ("class_runtime_eff", "class_runtime_eff", "class_runtime_kappa")
    mean[part] = np.tile([priors[name].mean for name in names3], count)
    sd[part] = np.tile([priors[name].sd for name in names3], count)
    part = layout.blocks["graphs"]
    mean[part], sd[part] = priors["log_graph"].mean, priors["log_graph"].sd
    for block, name in (
        ("step_glob", "log_tau_global"),
        ("step_runtime", "log_tau_runtime"),
        ("step_stack", "log_tau"),
        ("theta_glob", "log_theta_global"),
        ("theta_harness", "log_theta_harness"),
        ("theta_runtime", "log_theta_runtime"),
        ("theta_stack", "log_theta"),
    ):
        part = layout.blocks[block]
        mean[part], sd[part] = priors[name].mean, priors[name].sd
    blocks = (("glob", _GLOBAL), ("runtime", _RUNTIME), ("harness", _HARNESS), ("stack", _STACK))
    for block, names in blocks:
        part = layout.blocks[block]
        count = (part.stop - part.start) // 5
        mean[part] = np.tile([priors[name].mean for name in names], count)
        sd[part] = np.tile([priors[name].sd for name in names], count)
    if terms is not None:
        for block, cited in (("device_c", terms.cited_compute), ("device_m", terms.cited_memory)):
            if len(cited) == 0:
                continue
            share = np.bincount(
                terms.device.index, weights=cited, minlength=len(terms.device.names)
            )
            rows = np.bincount(terms.device.index, minlength=len(terms.device.names))
            start = layout.blocks[block].start
            sd[start : start + len(rows)][share == rows] = CITED_DEVICE_SD
    if terms is not None and train is not None and terms.step_cost:
        batches = np.array([item.row.batch for item in terms.stored], float)
        for block, level in (("runtime", terms.runtime), ("stack", terms.stack)):
            sigma_of = 5 * np.flatnonzero(one_batch_levels(level, batches, train)) + 3
            view = sd[layout.blocks[block]]
            view[sigma_of] = np.minimum(view[sigma_of], ONE_BATCH_SIGMA.sd)
    if terms is not None and train is not None and terms.sublinear:
        batches = np.array([item.row.batch for item in terms.stored], float)
        theta_levels = (
            ("theta_harness", terms.harness),
            ("theta_runtime", terms.runtime),
            ("theta_stack", terms.stack),
        )
        for block, level in theta_levels:
            view = sd[layout.blocks[block]]
            if view.size == 0:  # no harness level without terms.theta_harness
                continue
            single = one_batch_levels(level, batches, train)
            view[single] = np.minimum(view[single], ONE_BATCH_THETA.sd)
    if terms is not None and train is not None:
        scoped: tuple[tuple[Levels, tuple[str, str], Prior], ...] = (
            (terms.device, ("device_c", "device_m"), priors["device_one_runtime"]),
            (terms.device_class, ("class_c", "class_m"), priors["class_one_runtime"]),
        )
        for level, names_of, tight in scoped:
            single = one_runtime_levels(level, terms.runtime.index, train)
            for name in names_of:
                view = sd[layout.blocks[name]]
                view[single] = np.minimum(view[single], tight.sd)
    return mean, sd


def one_runtime_levels(level: Levels, runtime: Array, train: Array) -> Array:
    """Per level (device or device class), whether all its training rows (at least one)
    come from a single runtime."""
    out = np.zeros(len(level.names), bool)
    for k in range(len(level.names)):
        seen = np.unique(runtime[train & (level.index == k)])
        out[k] = len(seen) == 1
    return out


def one_batch_levels(level: Levels, batches: Array, train: Array) -> Array:
    """Per level (runtime or stack), whether its training rows have at most one batch
    size (no row at all: nothing to tell either)."""
    out = np.zeros(len(level.names), bool)
    for k in range(len(level.names)):
        out[k] = len(np.unique(batches[train & (level.index == k)])) <= 1
    return out


def prior_means(layout: Layout) -> Array:
    """The prior mean of every parameter (`PRIORS`, no data-dependent sd)."""
    return prior_arrays(layout)[0].copy()
