"""The transferable model (`calibration.transfer`) written as genz runtime profiles.

A fit gives, per row, ``eta_c`` and ``eta_m`` (fractions of peak compute and bandwidth,
the same for every operator of both passes), ``kappa`` (s per kernel; kernels = busy
operators x layers, `genz.costing.cost_pass`), ``sigma`` (s per sequence per step) and
``rho`` (s per request, on the time to first token). A profile holds them so that genz
predicts a row exactly as the fit does (source offsets left out, as for a new lab):

- per hardware preset (``devices``): ``eta_c``, ``eta_m`` (16-bit weights) and
  ``kappa`` of that preset on the stack (its device, device-class and device x runtime
  terms on the fit's prior mean: the preset's own efficiency, or its cited
  microbenchmark fraction, `calibration.device_priors`; a preset no row measured keeps
  its class's terms), and per weight format the memory-efficiency scale that turns the
  16-bit ``eta_m`` into the format's (the model's format term is an offset on
  ``logit(eta_m)``, so the scale differs by device) and, where it is not 1, the
  compute-efficiency scale that turns ``eta_c`` into the format's: the model's compute
  format term (``stacks="harness"``) and, for 8-bit formats of runtimes other than
  llama.cpp (FP8 weights and activations), the cited FP8 GEMM fraction in place of the
  16-bit one;
- top level: ``sigma`` as ``sequence_overhead_s``, ``rho`` as ``request_overhead_s``
  (0 for a stack whose harness times the passes alone under ``stacks="harness"``,
  `calibration.transfer_terms.PASS_TIMED_HARNESSES`: the model charges it none),
  ``kappa`` as ``kernel_launch_s`` (the eager launch cost; for platforms that are no
  preset, whose phases inherit the preset's own efficiencies), ``tau`` (the opt-in
  per-step cost, else 0) as both phases' ``step_overhead_s``, ``theta`` (the opt-in
  exponent of the per-sequence cost) as both phases' ``sequence_overhead_exponent``
  (written only where it is not 1, so profiles without the term are unchanged), and
  all-reduce latency 0 (the model's wire times carry no latency term);
- with the opt-in CUDA-graph term (`calibration.transfer_graphs`), the decode pass's own
  ``kernel_launch_s`` (``kappa x gamma``) in the ``decode:`` block of every preset of a
  device class where the stack replays graphs (`stack_graph_share`), and in a
  ``device_classes`` decode override for platforms that are no preset; prefill stays
  eager. The generic profile is a stack no row measured, so it is not known to replay
  graphs or not: its decode pays ``kappa x gamma ** share``, ``share`` the fraction of
  fitted stacks that replay them on that class (the same log-scale mean as its other
  terms; 0 on classes no engine replays graphs on, Gaudi, Apple, CPUs);
- weight formats: the runtime's (``data/runtime_formats``) and every other nominal width
  its rows use, stored as given.

`stack_document` writes one stack (runtime x harness x year); `generic_document` the
terms that transfer: device terms, and per term the mean over fitted stacks of the
stack's (shrunk) values (``rho``: over the stacks that pay one), with the format offsets
averaged over runtimes and no device x runtime term: what a stack no row measured is
given. A row of a pass-timed harness is predicted with its request cost left out
(`calibration.transfer_held_out`), as the model does.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline import list_platforms

from .device_priors import device_fractions, load_microbenchmarks, preset_fractions
from .transfer import TransferFit
from .transfer_domain import domain_of, preset_terms, weight_formats
from .transfer_graphs import stack_graphs
from .transfer_terms import PASS_TIMED_HARNESSES, format_bucket

GENERIC_NAME = "transfer"
EFFICIENCY_KEYS = ("eff_c", "eff_m")
#: Phases of a profile (the model's terms are the same for both).
PHASES = ("prefill", "decode")
#: Runtimes whose 8-bit weight formats are dequantised to 16-bit GEMMs (their rows'
#: activations are 16-bit): no FP8 GEMM prior for them.
SIXTEEN_BIT_GEMM_RUNTIMES = ("llama.cpp",)


@dataclass(frozen=True)
class StackValues:
    """One stack's terms: efficiency offsets on logit scale, overheads in seconds, the
    weight-format offsets on memory and on compute efficiency (bucket -> logit offset)
    and the runtime whose device x runtime terms apply (None: none, the generic
    profile); ``tau`` the per-step cost (s, 0 without the opt-in step term), ``gamma``
    the CUDA-graph factor on a decode pass's launch cost (1 without the graph term),
    ``theta`` the exponent of the per-sequence cost (1 without the sublinear term) and
    ``graph_share`` per device class the power of ``gamma`` its decode pays (1: replays
    graphs, 0 or absent: eager; the generic profile: the share of fitted stacks that
    replay them there)."""

    eff_c: float
    eff_m: float
    kappa: float
    sigma: float
    rho: float
    format_offsets: Mapping[str, float]
    runtime: str | None
    format_compute_offsets: Mapping[str, float] = dataclasses.field(default_factory=dict)
    tau: float = 0.0
    gamma: float = 1.0
    theta: float = 1.0
    graph_share: Mapping[str, float] = dataclasses.field(default_factory=dict)


def stack_values(fit: TransferFit, stack: str) -> StackValues:
    """The fitted terms of ``stack`` (``runtime|harness|year``)."""
    values = fit.stack_terms()[stack]
    runtime = stack.split("|")[0]
    return StackValues(
        eff_c=values["eff_c"],
        eff_m=values["eff_m"],
        kappa=values["kappa"],
        sigma=values["sigma"],
        rho=values["rho"] if pays_request_cost(fit, stack) else 0.0,
        format_offsets=_format_offsets(fit, runtime),
        runtime=runtime,
        format_compute_offsets=_format_offsets(fit, runtime, block="format_c"),
        tau=values["tau"],
        theta=values["theta"],
        gamma=graph_gamma(fit),
        graph_share=stack_graph_share(fit, stack),
    )


def graph_gamma(fit: TransferFit) -> float:
    """The fitted CUDA-graph factor ``gamma`` on a decode pass's launch cost (1 without
    the graph term)."""
    part = fit.layout.blocks["graphs"]
    return float(np.exp(fit.params[part][0])) if part.stop > part.start else 1.0


def stack_graph_share(fit: TransferFit, stack: str) -> dict[str, float]:
    """Device class -> 1.0 where ``stack``'s decode replays CUDA graphs, 0.0 where not:
    the majority of the stack's training rows on that class (``terms.graphs``), or for a
    class it has none on, `calibration.transfer_graphs.stack_graphs`; empty without the
    graph term. (llama.cpp's graphs are for batch 1 only, and a year's stack may span
    the merge: its rows on the other side of the majority keep the model's own decode
    launch cost, which one profile value cannot give them; `benchmarks/transfer_profiles.py`
    scores what the profile gives.)"""
    if not np.any(fit.terms.graphs):
        return {}
    terms = fit.terms
    runtime, _, year = stack.split("|")
    rows = fit.train & (terms.stack.index == terms.stack.names.index(stack))
    kinds = np.array(terms.device_class.names, dtype=object)[terms.device_class.index]
    out = {}
    for kind in sorted({preset_terms(preset)[2] for preset in list_platforms()}):
        chosen = rows & (kinds == kind)
        if chosen.any():
            out[kind] = 1.0 if terms.graphs[chosen].mean() > 0.5 else 0.0
        else:
            out[kind] = 1.0 if stack_graphs(runtime, year, kind) else 0.0
    return out


def pays_request_cost(fit: TransferFit, stack: str) -> bool:
    """Whether the model charges ``stack``'s rows a per-request cost: every stack
    under ``stacks="runtime"``; under ``"harness"`` not those of `PASS_TIMED_HARNESSES`."""
    return fit.terms.stacks == "runtime" or stack.split("|")[1] not in PASS_TIMED_HARNESSES


def generic_values(fit: TransferFit) -> StackValues:
    """The mean over fitted stacks of each stack term (logit scale for efficiencies, log
    scale for overheads), each stack weighing the same; format offsets the mean over
    runtimes that fitted the bucket; per device class, the share of fitted stacks whose
    decode replays CUDA graphs there (`stack_graph_share`): the generic decode launch
    cost is the same log-scale mean, ``kappa x gamma ** share``; the exponent of the
    per-sequence cost likewise (log scale)."""
    fitted = fitted_stacks(fit)
    terms = fit.stack_terms()
    mean = {key: float(np.mean([terms[name][key] for name in fitted])) for key in EFFICIENCY_KEYS}
    for key in ("kappa", "sigma"):
        mean[key] = float(np.exp(np.mean([np.log(terms[name][key]) for name in fitted])))
    taus = [terms[name]["tau"] for name in fitted]
    mean["tau"] = float(np.exp(np.mean(np.log(taus)))) if min(taus) > 0 else 0.0
    thetas = [terms[name]["theta"] for name in fitted]
    mean["theta"] = float(np.exp(np.mean(np.log(thetas)))) if fit.terms.sublinear else 1.0
    shares = [stack_graph_share(fit, name) for name in fitted]
    graph_share = {kind: float(np.mean([share[kind] for share in shares])) for kind in shares[0]}
    paying = [name for name in fitted if pays_request_cost(fit, name)] or fitted
    mean["rho"] = float(np.exp(np.mean([np.log(terms[name]["rho"]) for name in paying])))
    runtimes = sorted({name.split("|")[0] for name in fitted})
    offsets = {}
    for block in ("format", "format_c"):
        per_bucket: dict[str, list[float]] = {}
        for runtime in runtimes:
            found = _format_offsets(fit, runtime, fitted_only=True, block=block)
            for bucket, offset in found.items():
                per_bucket.setdefault(bucket, []).append(offset)
        offsets[block] = {bucket: float(np.mean(values)) for bucket, values in per_bucket.items()}
    return StackValues(
        format_offsets=offsets["format"],
        runtime=None,
        format_compute_offsets=offsets["format_c"],
        gamma=graph_gamma(fit),
        graph_share=graph_share,
        **mean,
    )


def fitted_stacks(fit: TransferFit) -> list[str]:
    """Stacks with at least one training row."""
    trained = np.unique(fit.terms.stack.index[fit.train])
    return [fit.terms.stack.names[k] for k in trained]


def _format_offsets(
    fit: TransferFit, runtime: str, fitted_only: bool = False, block: str = "format"
) -> dict[str, float]:
    """Bucket -> the runtime's weight-format offset on ``logit(eta_m)`` (``block``
    ``format``) or on ``logit(eta_c)`` (``format_c``: none unless ``stacks="harness"``);
    16-bit: none."""
    part = fit.layout.blocks[block]
    if part.stop == part.start:
        return {}
    offsets = fit.params[part]
    trained = set(np.unique(fit.terms.fmt.index[fit.train]).tolist())
    out = {}
    for k, name in enumerate(fit.terms.fmt.names):
        owner, bucket = name.split("|")
        if owner == runtime and bucket != "16" and (k in trained or not fitted_only):
            out[bucket] = float(offsets[k])
    return out


def device_terms(fit: TransferFit, preset: str, runtime: str | None) -> dict[str, float]:
    """A preset's logit efficiencies (before stack terms; ``eff_c_fp8`` of FP8 GEMMs)
    and the log factor on kappa: its prior mean (`prior_means`), class and device
    terms, and its device x ``runtime`` terms."""
    terms, params, blocks = fit.terms, fit.params, fit.layout.blocks
    compute, compute_fp8, memory = prior_means(preset, terms.device_priors)
    device_class = preset_terms(preset)[2]
    out = {
        "eff_c": _logit(compute),
        "eff_c_fp8": _logit(compute_fp8),
        "eff_m": _logit(memory),
        "log_kappa": 0.0,
    }
    for level, names, suffix in (
        (device_class, terms.device_class.names, "class"),
        (preset, terms.device.names, "device"),
    ):
        if level in names:
            k = names.index(level)
            out["eff_c"] += float(params[blocks[f"{suffix}_c"]][k])
            out["eff_c_fp8"] += float(params[blocks[f"{suffix}_c"]][k])
            out["eff_m"] += float(params[blocks[f"{suffix}_m"]][k])
    key = f"{preset}|{runtime}"
    if runtime is not None and key in terms.class_runtime.names:
        k = terms.class_runtime.names.index(key)
        interaction = params[blocks["class_runtime"]].reshape(-1, 3)[k]
        out["eff_c"] += float(interaction[0])
        out["eff_c_fp8"] += float(interaction[0])
        out["eff_m"] += float(interaction[1])
        out["log_kappa"] = float(interaction[2])
    return out


def prior_means(preset: str, device_priors: str) -> tuple[float, float, float]:
    """The device terms' prior means of a preset (fractions of peak): 16-bit and FP8
    GEMM compute and memory; the preset's own efficiencies, or under
    ``device_priors="microbenchmarks"`` its cited fractions where cited
    (`calibration.device_priors.row_priors`' rule)."""
    compute, memory, _ = preset_terms(preset)
    if device_priors != "microbenchmarks":
        return compute, compute, memory
    sixteen, fp8, bandwidth = preset_fractions(preset, _cited_fractions())
    return (
        compute if sixteen is None else sixteen,
        compute if fp8 is None else fp8,
        memory if bandwidth is None else bandwidth,
    )


@functools.lru_cache(maxsize=1)
def _cited_fractions() -> dict[str, Any]:
    """The shipped microbenchmarks' fractions per device (read once per process)."""
    return device_fractions(load_microbenchmarks())


def profile_document(
    fit: TransferFit, values: StackValues, name: str, command: str, description: str
) -> dict[str, Any]:
    """The YAML mapping of a profile holding ``values`` (module docstring)."""

    def value(number: float) -> dict[str, Any]:
        return {"value": float(number), "calibrated_from": command}

    formats = weight_formats(fit, values.runtime)
    exponent = {} if values.theta == 1.0 else {"sequence_overhead_exponent": value(values.theta)}
    document: dict[str, Any] = {"name": name, "description": description}
    inherited = {"value": "platform", "calibrated_from": command}
    default_phase = {
        "compute_efficiency": inherited,
        "memory_efficiency": inherited,
        "step_overhead_s": value(values.tau),
        "sequence_overhead_s": value(values.sigma),
        **exponent,
    }
    document.update({phase: default_phase for phase in PHASES})
    classes = {
        kind: {"decode": {**default_phase, "kernel_launch_s": value(values.kappa * factor)}}
        for kind, factor in _graph_factors(values).items()
    }
    if classes:
        document["device_classes"] = classes
    document["all_reduce_latency_s"] = value(0.0)
    document["kernel_launch_s"] = value(values.kappa)
    document["request_overhead_s"] = value(values.rho)
    document["weight_formats"] = {
        fmt["name"]: {key: value(fmt[key]) for key in fmt if key != "name"} for fmt in formats
    }
    devices = {}
    for preset in list_platforms():
        own = device_terms(fit, preset, values.runtime)
        logit_c, logit_m = own["eff_c"] + values.eff_c, own["eff_m"] + values.eff_m
        eta_m = _sigmoid(logit_m)
        phase = {
            "compute_efficiency": value(_sigmoid(logit_c)),
            "memory_efficiency": value(eta_m),
            "step_overhead_s": value(values.tau),
            "sequence_overhead_s": value(values.sigma),
            **exponent,
        }
        entry: dict[str, Any] = {p: phase for p in PHASES}
        kappa = values.kappa * np.exp(own["log_kappa"])
        entry["kernel_launch_s"] = value(kappa)
        factor = _graph_factors(values).get(preset_terms(preset)[2])
        if factor is not None:
            entry["decode"] = {**phase, "kernel_launch_s": value(kappa * factor)}
        scales: dict[str, dict[str, Any]] = {}
        for fmt in formats:
            bucket = format_bucket(fmt["nominal_bits"])
            if bucket in values.format_offsets:
                scale = _sigmoid(logit_m + values.format_offsets[bucket]) / eta_m
                scales[fmt["name"]] = {"memory_efficiency_scale": value(scale)}
            compute_scale = _compute_scale(own, values, bucket, logit_c)
            if compute_scale != 1.0:
                scales.setdefault(fmt["name"], {})["compute_efficiency_scale"] = value(
                    compute_scale
                )
        if scales:
            entry["weight_formats"] = scales
        devices[preset] = entry
    document["devices"] = devices
    return document


def _graph_factors(values: StackValues) -> dict[str, float]:
    """Device class -> the factor on the decode pass's launch cost, ``gamma ** share``,
    for the classes where it is not 1."""
    return {
        kind: values.gamma**share
        for kind, share in values.graph_share.items()
        if share > 0 and values.gamma != 1.0
    }


def _compute_scale(
    own: Mapping[str, float], values: StackValues, bucket: str, logit_c: float
) -> float:
    """A format's factor on a preset's 16-bit ``eta_c`` (``sigmoid(logit_c)``): the
    FP8 GEMM prior for 8-bit formats (not `SIXTEEN_BIT_GEMM_RUNTIMES`') and the compute
    format offset; exactly 1 when neither applies."""
    fp8 = bucket == "8" and values.runtime not in SIXTEEN_BIT_GEMM_RUNTIMES
    logit = own["eff_c_fp8"] + values.eff_c if fp8 else logit_c
    logit += values.format_compute_offsets.get(bucket, 0.0)
    return 1.0 if logit == logit_c else _sigmoid(logit) / _sigmoid(logit_c)


def stack_document(fit: TransferFit, stack: str, command: str) -> dict[str, Any]:
    """The profile of one fitted stack (``runtime|harness|year``), with its domain."""
    runtime, harness, year = stack.split("|")
    document = profile_document(
        fit,
        stack_values(fit, stack),
        stack_profile_name(stack),
        command,
        f"transfer model, stack {runtime} / {harness} / {year} (device terms per preset)",
    )
    document["stack"] = {"runtime": runtime, "harness": harness, "version_family": year}
    rows = fit.train & (fit.terms.stack.index == fit.terms.stack.names.index(stack))
    document["domain"] = domain_of(fit, rows).to_dict()
    return document


def generic_document(fit: TransferFit, command: str) -> dict[str, Any]:
    """The profile of the terms that transfer (module docstring), with its domain."""
    document = profile_document(
        fit,
        generic_values(fit),
        GENERIC_NAME,
        command,
        "transfer model, terms that transfer: device terms per preset and the mean "
        "of the fitted stacks' terms (no stack's own)",
    )
    document["domain"] = domain_of(fit, fit.train).to_dict()
    return document


def stack_profile_name(stack: str) -> str:
    """File and profile name of a stack: ``transfer-<runtime>-<harness>-<year>``."""
    return "transfer-" + "-".join(stack.split("|")).replace("_", "-")


def _logit(p: float) -> float:
    return float(np.log(p) - np.log1p(-p))


def _sigmoid(x: float) -> float:
    return float(1.0 / (1.0 + np.exp(-x)))
