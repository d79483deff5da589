"""A model of device and serving stack whose terms transfer across sources.

Prediction of one pass of a measured row (seconds)::

    t = sum_ops max(C_op / eta_c, M_op / eta_m) + fixed + kernels * kappa
        + steps * (tau + batch * sigma) + [prefill] * rho

``C_op``, ``M_op`` are the operator's compute and memory times at efficiency 1
(`calibration.rows.decompose`), ``fixed`` the interconnect wire time, ``kernels`` the
kernels the pass launches (operators x layers), ``steps`` the forward steps (prefill
chunks, or 1 per decode step), ``batch`` the sequences of the step; ``tau`` (per step,
whatever the batch) is 0 unless opt-in (`calibration.transfer_terms.with_step_cost`:
blocks ``step_glob``, ``step_runtime``, ``step_stack``, log ``tau`` shrunk like
``kappa``, `STEP_PRIORS`): without it, a stack whose rows are all at batch 1 can only
read its per-step host cost as a per-sequence cost, which a batch of 2,000 then pays
2,000 times. Opt-in (`calibration.transfer_terms.with_sublinear`): the per-sequence
cost of a step of ``S`` sequences is ``sigma x S ** theta`` (``S`` = ``batch``),
``log theta = global + runtime + stack`` (blocks ``theta_glob``, ``theta_runtime``,
``theta_stack``, priors centred on ``theta = 1``, a runtime or stack measured at one
batch size held at its parent's: `calibration.transfer_priors.ONE_BATCH_THETA`; two
opt-in variants: a harness level, block ``theta_harness``, so a held-out source of a
known harness gets its harness's exponent, and ``theta`` capped at 1):
modern schedulers batch their per-sequence host work (sampling, stop checks, block
tables) into vectorised calls, so a step's host time grows less than linearly with
its sequences. Opt-in
(`calibration.transfer_terms.with_graphs`): a decode pass the row's engine replays as a
CUDA graph (``terms.graphs``, a stack attribute read from runtime, date, device class and
batch: `calibration.transfer_graphs`) pays ``kappa x gamma`` per kernel, ``gamma`` one
global factor (block ``graphs``, prior ``log_graph``). The terms:

- **device** (per hardware preset, shrunk towards its device class, the class towards
  a prior mean ``e_c``: the preset's own efficiency, or a cited microbenchmark's
  achieved fraction, `calibration.device_priors`; a device or class whose training rows
  all come from one runtime has the ``device_one_runtime`` / ``class_one_runtime``
  priors, the ordinary ones unless `SCOPED_PRIORS` tightens them (opt-in): its rows
  cannot tell what belongs to the device from what belongs to that runtime on it): ``eta_c = sigmoid(logit(e_c) +
  g_class + u_device + s_stack)`` and likewise ``eta_m`` (plus a weight-format factor
  of the runtime on ``eta_m``, and under ``stacks="harness"`` one on ``eta_c``);
- **stack** (per runtime x harness x year, shrunk towards a runtime level, that
  towards a global value; a stack no training row has gets the runtime's value): the
  efficiency offsets ``s_stack``, the per-kernel launch cost ``kappa``, the
  per-sequence-per-step cost ``sigma`` and the per-request fixed cost ``rho`` (added
  to the time to first token);
- **source** offsets ``b_source`` on log time (random effects, shrunk to 0) absorb what
  one lab's set-up adds to all its rows; a source not fitted on gets 0.

TTFT is the prefill pass, ITL the decode pass, batch latency ``TTFT + (output - 1) x
ITL``. Fit: every measured metric of every row gives ``log(measured / predicted)``,
weighted by ``1 / sqrt(rows of its source)`` (so one large suite does not decide every
term), under a soft-L1 loss (scale `ROBUST_SCALE`), plus quadratic penalties of the
priors (`PRIORS`, `calibration.transfer_priors`); `scipy.optimize.least_squares` with
the Jacobian's sparsity. A level
(device, class, runtime, stack, format, source) no training row has keeps its prior
mean, which is how a held-out source, device or stack is predicted.

``terms.stacks`` (`calibration.transfer_terms.STACKS`) picks the structure. The default
``runtime`` is the model above. ``harness`` (issue 20 part B, opt-in: better on batch latency,
worse on TTFT leave-one-source-out, docs/accuracy.md) adds a harness level to the stack terms (a stack shrinks
towards runtime + harness level; an unseen stack gets that sum), the weight-format
factor on ``eta_c`` (block ``format_c``), no ``rho`` on rows whose harness times the
passes alone (llama-bench: `calibration.transfer_terms.PASS_TIMED_HARNESSES`) and the
tighter runtime-level priors `HARNESS_PRIORS`. Under ``runtime`` the ``harness`` and
``format_c`` blocks have no parameters at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares
from scipy.sparse import lil_matrix

from genz.fitting import Array

from .transfer_priors import (
    HARNESS_PRIORS,
    ONE_BATCH_SIGMA,
    PRIORS,
    SCOPED_PRIORS,
    STEP_PRIORS,
    Prior,
    model_priors,
    one_batch_levels,
    one_runtime_levels,
    prior_arrays,
    prior_means,
)
from .transfer_terms import TransferTerms

__all__ = [
    "HARNESS_PRIORS",
    "METRICS",
    "ONE_BATCH_SIGMA",
    "PRIORS",
    "SCOPED_PRIORS",
    "STEP_PRIORS",
    "Layout",
    "Prior",
    "TransferFit",
    "fit_transfer",
    "graph_factor",
    "model_priors",
    "one_batch_levels",
    "one_runtime_levels",
    "predict_times",
    "prior_arrays",
    "prior_means",
    "row_terms",
    "sequence_exponents",
    "step_costs",
]

METRICS = ("batch_latency_s", "ttft_s", "itl_s")
#: Soft-L1 scale of the log residuals (a factor of about 1.2).
ROBUST_SCALE = 0.2
#: Where a fit with the exponent capped at 1 (``terms.theta_capped``) starts its global
#: log exponent: inside the cap, where the loss has a slope (``theta = 0.95``).
CAPPED_THETA_START = float(np.log(0.95))
#: A row weighs ``rows of its source ** -SOURCE_WEIGHT_POWER``.
SOURCE_WEIGHT_POWER = 0.75


@dataclass(frozen=True)
class Layout:
    """Where each parameter block sits in the parameter vector."""

    blocks: Mapping[str, slice]
    size: int

    @classmethod
    def of(cls, terms: TransferTerms) -> Layout:
        """The blocks of ``terms``; ``harness`` and ``format_c`` are empty unless
        ``terms.stacks == "harness"``, ``graphs`` unless a row replays CUDA graphs, the
        ``step_*`` blocks unless ``terms.step_cost``, the ``theta_*`` blocks unless
        ``terms.sublinear`` (``theta_harness`` unless ``terms.theta_harness``)."""
        part_b = terms.stacks == "harness"
        sizes = {
            "class_c": len(terms.device_class.names),
            "class_m": len(terms.device_class.names),
            "device_c": len(terms.device.names),
            "device_m": len(terms.device.names),
            "glob": 5,
            "runtime": 5 * len(terms.runtime.names),
            "harness": 5 * len(terms.harness.names) if part_b else 0,
            "stack": 5 * len(terms.stack.names),
            "format": len(terms.fmt.names),
            "format_c": len(terms.fmt.names) if part_b else 0,
            "class_runtime": 3 * len(terms.class_runtime.names),
            "source": 5 * len(terms.source_runtime.names),
            "graphs": 1 if np.any(terms.graphs) else 0,
            "step_glob": 1 if terms.step_cost else 0,
            "step_runtime": len(terms.runtime.names) if terms.step_cost else 0,
            "step_stack": len(terms.stack.names) if terms.step_cost else 0,
            "theta_glob": 1 if terms.sublinear else 0,
            "theta_harness": len(terms.harness.names) if terms.theta_harness else 0,
            "theta_runtime": len(terms.runtime.names) if terms.sublinear else 0,
            "theta_stack": len(terms.stack.names) if terms.sublinear else 0,
        }
        blocks, start = {}, 0
        for name, size in sizes.items():
            blocks[name] = slice(start, start + size)
            start += size
        return cls(blocks, start)


@dataclass(frozen=True)
class TransferFit:
    """A fitted parameter vector with its design; ``success`` / ``message`` as scipy's."""

    terms: TransferTerms
    layout: Layout
    params: Array
    train: Array
    success: bool
    message: str

    def predict(self, rows: Array | None = None, with_source: bool = True) -> dict[str, Array]:
        """TTFT, ITL and batch latency per row (all rows, or the boolean ``rows``), s.
        ``with_source=False`` leaves the source offsets out (a new lab's prediction)."""
        times = predict_times(self.terms, self.layout, self.params, with_source)
        if rows is None:
            return times
        return {name: values[rows] for name, values in times.items()}

    def row_terms(self, with_source: bool = False) -> dict[str, Array]:
        """Per row, the fitted terms (`row_terms`)."""
        return row_terms(self.terms, self.layout, self.params, with_source)

    def stack_terms(self) -> dict[str, dict[str, float]]:
        """Per stack (runtime|harness|year): efficiency offsets and overheads (seconds;
        ``tau`` the per-step cost, 0 without the opt-in step blocks; ``theta`` the
        exponent of the per-sequence cost, 1 without the opt-in ``theta_*`` blocks)."""
        out = {}
        for k, name in enumerate(self.terms.stack.names):
            runtime = self.terms.runtime.names.index(name.split("|")[0])
            harness = self.terms.harness.names.index(name.split("|")[1])
            values = _stack_values(
                self.layout, self.params, np.array([k]), np.array([runtime]), np.array([harness])
            )
            out[name] = {key: float(value[0]) for key, value in values.items()}
            tau = step_costs(self.layout, self.params, np.array([k]), np.array([runtime]))
            out[name]["tau"] = float(tau[0])
            theta = sequence_exponents(
                self.terms,
                self.layout,
                self.params,
                np.array([k]),
                np.array([runtime]),
                np.array([harness]),
            )
            out[name]["theta"] = float(theta[0])
        return out


def fit_transfer(
    terms: TransferTerms,
    train: Array,
    max_nfev: int = 200,
    priors: Mapping[str, Prior] | None = None,
) -> TransferFit:
    """Fit on the rows where ``train`` (boolean) is true (see the module docstring);
    ``priors`` overrides entries of `model_priors` for ``terms.stacks``."""
    layout = Layout.of(terms)
    chosen = model_priors(terms.stacks, priors, terms.step_cost)
    prior_mean, prior_sd = prior_arrays(layout, chosen, terms, train)
    start = prior_mean.copy()
    if terms.theta_capped:
        # at the cap (the prior mean, theta = 1) a forward difference sees a flat loss
        start[layout.blocks["theta_glob"]] = CAPPED_THETA_START
    weights = _row_weights(terms, train)
    observed = {name: np.flatnonzero(train & np.isfinite(terms.measured[name])) for name in METRICS}

    def residuals(params: Array) -> Array:
        times = predict_times(terms, layout, params, with_source=True)
        parts = []
        for name, rows in observed.items():
            ratio = np.log(terms.measured[name][rows]) - np.log(times[name][rows])
            parts.append(weights[rows] * _soft_l1(ratio))
        parts.append((params - prior_mean) / prior_sd)
        return np.concatenate(parts)

    sparsity = _sparsity(terms, layout, observed)
    result = least_squares(
        residuals,
        start,
        jac_sparsity=sparsity,
        method="trf",
        tr_solver="lsmr",
        max_nfev=max_nfev,
        x_scale="jac",
        ftol=1e-10,
        xtol=1e-10,
    )
    return TransferFit(terms, layout, result.x, train, bool(result.success), str(result.message))


def row_terms(
    terms: TransferTerms, layout: Layout, params: Array, with_source: bool
) -> dict[str, Array]:
    """Per row: ``eta_c``, ``eta_m`` (achieved fractions of peak compute and bandwidth),
    ``kappa`` (s per kernel), ``sigma`` (s per sequence per step), ``rho`` (s per
    request), ``scale`` (the source's factor on time; 1 without sources),
    ``kappa_decode`` (s per kernel of a decode pass: ``kappa``, times `graph_factor`)
    ``tau`` (s per step; 0 without the opt-in per-step cost) and ``theta`` (the exponent
    of the per-sequence cost: a step of ``S`` sequences pays ``sigma x S ** theta``; 1
    without the opt-in sublinear term)."""
    block = layout.blocks
    device, kind = terms.device.index, terms.device_class.index
    stack_values = _stack_values(
        layout, params, terms.stack.index, terms.runtime.index, terms.harness.index
    )
    interaction = params[block["class_runtime"]].reshape(-1, 3)[terms.class_runtime.index]
    lab = params[block["source"]].reshape(-1, 5)[terms.source_runtime.index]
    if not with_source:
        lab = np.zeros_like(lab)
    logit_c = (
        _logit(terms.prior_compute)
        + params[block["class_c"]][kind]
        + params[block["device_c"]][device]
        + stack_values["eff_c"]
        + interaction[:, 0]
        + lab[:, 0]
    )
    if _has(layout, "format_c"):
        logit_c = logit_c + _format_offsets(terms, layout, params, "format_c")
    logit_m = (
        _logit(terms.prior_memory)
        + params[block["class_m"]][kind]
        + params[block["device_m"]][device]
        + stack_values["eff_m"]
        + interaction[:, 1]
        + lab[:, 1]
        + _format_offsets(terms, layout, params, "format")
    )
    kappa = stack_values["kappa"] * np.exp(interaction[:, 2] + lab[:, 2])
    return {
        "eta_c": _sigmoid(logit_c),
        "eta_m": _sigmoid(logit_m),
        "kappa": kappa,
        "kappa_decode": kappa * graph_factor(terms, layout, params),
        "sigma": stack_values["sigma"],
        "rho": stack_values["rho"] * np.exp(lab[:, 3]) * terms.request_cost_applies,
        "scale": np.exp(lab[:, 4]),
        "tau": step_costs(layout, params, terms.stack.index, terms.runtime.index),
        "theta": sequence_exponents(
            terms, layout, params, terms.stack.index, terms.runtime.index, terms.harness.index
        ),
    }


def predict_times(
    terms: TransferTerms, layout: Layout, params: Array, with_source: bool
) -> dict[str, Array]:
    """TTFT, ITL and batch latency of every row at ``params``, seconds."""
    n = len(terms)
    values = row_terms(terms, layout, params, with_source)
    times = {"ttft_s": np.zeros(n), "itl_s": np.zeros(n)}
    for indices, rows in terms.parts:
        for name, phase, kernels, launch in (
            ("ttft_s", rows.prefill, terms.kernels_prefill, values["kappa"]),
            ("itl_s", rows.decode, terms.kernels_decode, values["kappa_decode"]),
        ):
            compute = phase.compute_s / values["eta_c"][indices]
            memory = phase.memory_s / values["eta_m"][indices]
            total = (
                np.maximum(compute, memory).sum(axis=0)
                + phase.fixed_s
                + kernels[indices] * launch[indices]
                + phase.steps
                * sequence_charge(phase.sequences, values["theta"][indices])
                * values["sigma"][indices]
            )
            if terms.step_cost:
                total = total + phase.steps * values["tau"][indices]
            if name == "ttft_s":
                total = total + values["rho"][indices]
            times[name][indices] = total
    times["batch_latency_s"] = times["ttft_s"] + (terms.output_tokens - 1) * times["itl_s"]
    return {name: t * values["scale"] for name, t in times.items()}


def graph_factor(terms: TransferTerms, layout: Layout, params: Array) -> Array:
    """Per row, the factor on ``kappa`` of its decode pass: ``gamma`` where the row
    replays CUDA graphs (``terms.graphs``), else 1."""
    if not _has(layout, "graphs"):
        return np.ones(len(terms))
    gamma = float(np.exp(params[layout.blocks["graphs"]][0]))
    return np.where(terms.graphs, gamma, 1.0)


def step_costs(layout: Layout, params: Array, stack: Array, runtime: Array) -> Array:
    """Per row, the per-step cost ``tau`` of its stack, seconds: ``exp(global + runtime +
    stack)``; 0 without the opt-in step blocks."""
    if not _has(layout, "step_glob"):
        return np.zeros(len(stack))
    blocks = layout.blocks
    log_tau = (
        params[blocks["step_glob"]][0]
        + params[blocks["step_runtime"]][runtime]
        + params[blocks["step_stack"]][stack]
    )
    return np.asarray(np.exp(log_tau), float)


def sequence_exponents(
    terms: TransferTerms,
    layout: Layout,
    params: Array,
    stack: Array,
    runtime: Array,
    harness: Array,
) -> Array:
    """Per row, the exponent ``theta`` of its stack's per-sequence cost: ``exp(global +
    [harness] + runtime + stack)`` (the harness level with ``terms.theta_harness``),
    at most 1 with ``terms.theta_capped``; 1 without the opt-in ``theta_*`` blocks."""
    if not _has(layout, "theta_glob"):
        return np.ones(len(stack))
    blocks = layout.blocks
    log_theta = (
        params[blocks["theta_glob"]][0]
        + params[blocks["theta_runtime"]][runtime]
        + params[blocks["theta_stack"]][stack]
    )
    if _has(layout, "theta_harness"):
        log_theta = log_theta + params[blocks["theta_harness"]][harness]
    if terms.theta_capped:
        log_theta = np.minimum(log_theta, 0.0)
    return np.asarray(np.exp(log_theta), float)


def sequence_charge(sequences: Array, theta: Array) -> Array:
    """``sequences ** theta`` per row (0 for no sequence), exactly ``sequences`` where
    ``theta`` is 1: `genz.runtime_phase.sequence_charge`, per row."""
    sequences = np.asarray(sequences, float)
    powered = np.where(sequences > 0, np.maximum(sequences, 1e-300) ** theta, 0.0)
    return np.where(theta == 1.0, sequences, powered)


def _stack_values(
    layout: Layout, params: Array, stack: Array, runtime: Array, harness: Array
) -> dict[str, Array]:
    """Per row: stack efficiency offsets (logit) and kappa, sigma, rho (seconds)."""
    glob = params[layout.blocks["glob"]]
    per_runtime = params[layout.blocks["runtime"]].reshape(-1, 5)[runtime]
    per_stack = params[layout.blocks["stack"]].reshape(-1, 5)[stack]
    if _has(layout, "harness"):
        per_harness = params[layout.blocks["harness"]].reshape(-1, 5)[harness]
        total = glob[None, :] + per_runtime + per_harness + per_stack
    else:
        total = glob[None, :] + per_runtime + per_stack
    return {
        "eff_c": total[:, 0],
        "eff_m": total[:, 1],
        "kappa": np.exp(total[:, 2]),
        "sigma": np.exp(total[:, 3]),
        "rho": np.exp(total[:, 4]),
    }


def _has(layout: Layout, block: str) -> bool:
    """Whether ``block`` has parameters (``harness`` / ``format_c``: only under
    ``stacks="harness"``)."""
    part = layout.blocks[block]
    return part.stop > part.start


def _format_offsets(terms: TransferTerms, layout: Layout, params: Array, block: str) -> Array:
    """Per row, the weight-format factor (logit) of ``block``: ``format`` on the memory
    efficiency, ``format_c`` on the compute efficiency (a dequantising GEMM of packed
    weights runs below the 16-bit GEMM rate); 16-bit formats have none."""
    offsets = params[layout.blocks[block]]
    sixteen = np.array([name.endswith("|16") for name in terms.fmt.names])
    return np.where(sixteen[terms.fmt.index], 0.0, offsets[terms.fmt.index])


def _row_weights(terms: TransferTerms, train: Array) -> Array:
    """``1 / sqrt(training rows of the row's source)``, scaled to mean 1 over training rows."""
    counts = np.bincount(terms.source.index[train], minlength=len(terms.source.names))
    per_row = np.maximum(counts[terms.source.index], 1) ** -SOURCE_WEIGHT_POWER
    return per_row / per_row[train].mean()


def _sparsity(
    terms: TransferTerms, layout: Layout, observed: Mapping[str, NDArray[np.intp]]
) -> lil_matrix:
    """Which parameters each residual depends on."""
    count = sum(len(rows) for rows in observed.values())
    matrix = lil_matrix((count + layout.size, layout.size), dtype=int)
    block = layout.blocks
    offset = 0
    for rows in observed.values():
        for r, i in enumerate(rows):
            line = offset + r
            for name, level in (
                ("class_c", terms.device_class.index[i]),
                ("class_m", terms.device_class.index[i]),
                ("device_c", terms.device.index[i]),
                ("device_m", terms.device.index[i]),
                ("format", terms.fmt.index[i]),
                ("format_c", terms.fmt.index[i]),
            ):
                if _has(layout, name):
                    matrix[line, block[name].start + level] = 1
            start = block["class_runtime"].start + 3 * terms.class_runtime.index[i]
            for k in range(3):
                matrix[line, start + k] = 1
            start = block["source"].start + 5 * terms.source_runtime.index[i]
            for k in range(5):
                matrix[line, start + k] = 1
            for name, level in (
                ("runtime", terms.runtime.index[i]),
                ("harness", terms.harness.index[i]),
                ("stack", terms.stack.index[i]),
            ):
                if not _has(layout, name):
                    continue
                start = block[name].start + 5 * level
                for k in range(5):
                    matrix[line, start + k] = 1
            for k in range(5):
                matrix[line, block["glob"].start + k] = 1
            if _has(layout, "graphs") and terms.graphs[i]:
                matrix[line, block["graphs"].start] = 1
            if _has(layout, "step_glob"):
                matrix[line, block["step_glob"].start] = 1
                matrix[line, block["step_runtime"].start + terms.runtime.index[i]] = 1
                matrix[line, block["step_stack"].start + terms.stack.index[i]] = 1
            if _has(layout, "theta_glob"):
                matrix[line, block["theta_glob"].start] = 1
                matrix[line, block["theta_runtime"].start + terms.runtime.index[i]] = 1
                matrix[line, block["theta_stack"].start + terms.stack.index[i]] = 1
            if _has(layout, "theta_harness"):
                matrix[line, block["theta_harness"].start + terms.harness.index[i]] = 1
        offset += len(rows)
    for k in range(layout.size):
        matrix[count + k, k] = 1
    return matrix


def _soft_l1(ratio: Array) -> Array:
    """Residual whose square is scipy's soft-L1 loss of ``ratio`` at `ROBUST_SCALE`."""
    z = (ratio / ROBUST_SCALE) ** 2
    return ROBUST_SCALE * np.sign(ratio) * np.sqrt(2.0 * (np.sqrt(1.0 + z) - 1.0))


def _logit(p: Array) -> Array:
    return np.log(p) - np.log1p(-p)


def _sigmoid(x: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-x))
