"""Vectorised prediction over broadcastable arrays of scenario axes (`evaluate_grid`):
the co-design search's and the dashboard's sweep path, the same cost path as `predict`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import BOUND_ORDER, Bound, InputError, Platform

from .advice import tensor_parallel_degrees
from .axes import (
    ARCHITECTURE_AXES,
    AXES,
    DEFAULT_BATCH,
    DEFAULT_BITS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    MODE_AXES,
)
from .inputs import GridInputs
from .layer_mix import with_layer_mix
from .model import ModelConfig
from .offload import offload_arrays, require_host
from .op_terms import Array
from .params import WEIGHT_GROUPS
from .predictor import evaluate
from .result import GridResult, end_to_end_s
from .runtime import RuntimeProfile

CAPACITY_CODE = BOUND_ORDER.index(Bound.CAPACITY)
INTERCONNECT_CODE = BOUND_ORDER.index(Bound.INTERCONNECT)


#: The `MODE_AXES` keywords' defaults (one sequence, no image, nothing offloaded).
MODE_DEFAULTS = {name: float(AXES[name].default or 0.0) for name in MODE_AXES}


def evaluate_grid(
    model: ModelConfig,
    platform: Platform,
    *,
    batch: ArrayLike = DEFAULT_BATCH,
    input_tokens: ArrayLike = DEFAULT_INPUT_TOKENS,
    output_tokens: ArrayLike = DEFAULT_OUTPUT_TOKENS,
    weight_bits: ArrayLike = DEFAULT_BITS,
    activation_bits: ArrayLike = DEFAULT_BITS,
    kv_bits: ArrayLike = DEFAULT_BITS,
    tp: ArrayLike = 1,
    pp: ArrayLike = 1,
    ep: ArrayLike = 1,
    dp: ArrayLike = 1,
    prefill_chunk: ArrayLike | None = None,
    parallel_samples: ArrayLike = 1,
    beam_width: ArrayLike = 1,
    images: ArrayLike = 0,
    weight_offload: ArrayLike = 0.0,
    kv_offload: ArrayLike = 0.0,
    sliding_window: ArrayLike | None = None,
    attention_layers: ArrayLike | None = None,
    runtime: RuntimeProfile | None = None,
) -> GridResult:
    """Vectorised prediction over broadcastable arrays of scenario axes.

    Returns a `GridResult` of arrays of the axes' broadcast shape (SI units): latency,
    throughput, per-device memory, the capacity verdict, per-phase FLOP and bytes and
    integer bound codes. Uniform weight bits for every group. ``runtime``: a
    serving-stack profile applied by `evaluate` (None or ``ideal``: physics only).

    The decoding-mode axes (``parallel_samples``, ``beam_width``), ``images`` and the
    offload fractions are those of `Scenario`; ``sliding_window`` and
    ``attention_layers`` (`genz.layer_mix`; None: the model's) vary the architecture,
    evaluated once per distinct value, everything else vectorised. Each point equals
    `predict` of the same scenario, except that a host share beyond host memory makes
    the point infeasible (``fits`` False) where `predict` refuses it.
    """
    given: dict[str, ArrayLike] = {
        "batch": batch,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "weight_bits": weight_bits,
        "activation_bits": activation_bits,
        "kv_bits": kv_bits,
        "tp": tp,
        "pp": pp,
        "ep": ep,
        "dp": dp,
        "parallel_samples": parallel_samples,
        "beam_width": beam_width,
        "images": images,
        "weight_offload": weight_offload,
        "kv_offload": kv_offload,
    }
    optional = {
        "prefill_chunk": prefill_chunk,
        "sliding_window": sliding_window,
        "attention_layers": attention_layers,
    }
    given.update({name: value for name, value in optional.items() if value is not None})
    arrays = np.broadcast_arrays(*(np.asarray(value, float) for value in given.values()))
    values = dict(zip(given, (np.array(a, float) for a in arrays), strict=True))
    _check_grid(model, values)
    _check_modes(model, platform, values)
    mix = [name for name in ARCHITECTURE_AXES if name in values]
    if not mix:
        return _grid(model, platform, values, runtime)
    shape = values["batch"].shape
    flat = {name: column.ravel() for name, column in values.items()}
    variants, inverse = np.unique(
        np.stack([flat[name] for name in mix], axis=1), axis=0, return_inverse=True
    )
    parts: list[tuple[NDArray[np.bool_], GridResult]] = []
    for index, variant in enumerate(variants):
        changes = {name: int(value) for name, value in zip(mix, variant, strict=True)}
        variant_model = with_layer_mix(
            model,
            sliding_window=changes.get("sliding_window"),
            attention_layers=changes.get("attention_layers"),
        )
        select = inverse.ravel() == index
        subset = {name: column[select] for name, column in flat.items()}
        parts.append((select, _grid(variant_model, platform, subset, runtime)))
    return _scatter(parts, shape)


def _grid(
    model: ModelConfig,
    platform: Platform,
    values: Mapping[str, Array],
    runtime: RuntimeProfile | None,
) -> GridResult:
    """`evaluate_grid` of one architecture, ``values`` checked and broadcast."""
    modes = {name: _trivial(values[name], MODE_DEFAULTS[name]) for name in MODE_AXES}
    tokens = values["input_tokens"]
    if model.vision is not None and not isinstance(modes["images"], float):  # genz.vision
        tokens = tokens + modes["images"] * model.vision.tokens_per_image
    chunk = values.get("prefill_chunk", tokens)
    sequences = modes["parallel_samples"] * modes["beam_width"]
    inputs = GridInputs(
        batch=values["batch"],
        input_tokens=tokens,
        output_tokens=values["output_tokens"],
        weight_bits={group: values["weight_bits"] for group in WEIGHT_GROUPS},
        activation_bits=values["activation_bits"],
        kv_bits=values["kv_bits"],
        tp=values["tp"],
        pp=values["pp"],
        ep=values["ep"],
        dp=values["dp"],
        chunk=np.minimum(chunk, tokens),
        sequences_per_request=sequences,
        images=modes["images"],
    )
    evaluation = evaluate(model, platform, inputs, runtime)
    weights, kv = evaluation.weights_bytes, evaluation.kv_cache_bytes
    ttft, tpot = evaluation.ttft_s, evaluation.tpot_s
    prefill, decode = evaluation.prefill, evaluation.decode
    prefill_code, decode_code = prefill.phase_bound(), decode.phase_bound()
    fits = np.full(ttft.shape, True)
    if not (isinstance(modes["weight_offload"], float) and isinstance(modes["kv_offload"], float)):
        host = require_host(platform)
        offload = offload_arrays(
            model, host, inputs, values["weight_offload"], values["kv_offload"], weights, kv
        )
        weights = np.asarray(offload.device_weights_bytes, float)
        kv = np.asarray(offload.device_kv_bytes, float)
        fits = np.asarray(offload.host_bytes, float) <= host.capacity_bytes
        prefill_code = np.where(offload.prefill_link_s > ttft, INTERCONNECT_CODE, prefill_code)
        decode_code = np.where(offload.decode_link_s > tpot, INTERCONNECT_CODE, decode_code)
        ttft = np.maximum(ttft, offload.prefill_link_s)
        tpot = np.maximum(tpot, offload.decode_link_s)
    e2e = end_to_end_s(ttft, tpot, values["output_tokens"])
    footprint = weights + kv + evaluation.activation_bytes
    fits = fits & (footprint <= platform.main_memory.capacity_bytes)
    devices = values["tp"] * values["pp"] * values["ep"] * values["dp"]
    generated = (
        values["dp"] * values["batch"] * values["parallel_samples"] * values["output_tokens"]
    )
    return GridResult(
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        throughput_tokens_per_s=generated / e2e,
        throughput_tokens_per_s_per_device=generated / e2e / devices,
        weights_bytes=weights,
        kv_cache_bytes=kv,
        activation_bytes=evaluation.activation_bytes,
        footprint_bytes=footprint,
        fits=fits,
        prefill_flop=prefill.total_flop(),
        prefill_bytes=prefill.total_bytes(),
        decode_flop=decode.total_flop(),
        decode_bytes=decode.total_bytes(),
        prefill_bound_code=np.where(fits, prefill_code, CAPACITY_CODE).astype(np.int8),
        decode_bound_code=np.where(fits, decode_code, CAPACITY_CODE).astype(np.int8),
        bound_order=BOUND_ORDER,
    )


def _trivial(column: Array, default: float) -> Array | float:
    """``default`` as a float when every value is the default (the cost path then skips
    the feature, as for one scenario), else the column."""
    return default if bool(np.all(column == default)) else column


def _scatter(
    parts: list[tuple[NDArray[np.bool_], GridResult]], shape: tuple[int, ...]
) -> GridResult:
    """One `GridResult` of ``shape`` from the results of disjoint flat selections."""
    fields = {}
    for item in dataclasses.fields(GridResult):
        if item.name == "bound_order":
            continue
        first = getattr(parts[0][1], item.name)
        column = np.empty(int(np.prod(shape)), first.dtype)
        for select, result in parts:
            column[select] = getattr(result, item.name)
        fields[item.name] = column.reshape(shape)
    return GridResult(**fields, bound_order=BOUND_ORDER)


def _check_modes(model: ModelConfig, platform: Platform, values: Mapping[str, Array]) -> None:
    """Whole numbers where the axis counts, and decoding modes, images and offload the
    model and platform support."""
    for name in (*MODE_AXES, *ARCHITECTURE_AXES):
        axis = AXES.get(name) or ARCHITECTURE_AXES[name]
        if name in values and axis.integer:
            column = values[name]
            fractional = column != np.round(column)
            if np.any(fractional):
                raise InputError(
                    f"{name} must be {axis.requirement}, got {column[fractional].flat[0]:g}"
                )
    if np.any((values["parallel_samples"] > 1) & (values["beam_width"] > 1)):
        raise InputError("parallel_samples and beam_width cannot both exceed 1")
    if model.vision is None and np.any(values["images"] > 0):
        raise InputError(f"images: {model.name} has no vision encoder (vision_config)")
    if np.any(values["weight_offload"] > 0) or np.any(values["kv_offload"] > 0):
        require_host(platform)


def _check_grid(model: ModelConfig, values: Mapping[str, Array]) -> None:
    axes = {**AXES, **ARCHITECTURE_AXES}
    limits = {name: (axes[name].low, axes[name].high) for name in values}
    limits.update(tp=(1, model.num_heads), pp=(1, model.num_layers))
    limits["ep"] = (1, max(model.num_experts, 1))
    for name, (low, high) in limits.items():
        column = values[name]
        bad = ~np.isfinite(column) | (column < low) | (column > high)
        if np.any(bad):
            raise InputError(f"{name} must be in [{low:g}, {high:g}], got {column[bad].flat[0]:g}")
    degrees = np.asarray(tensor_parallel_degrees(model), dtype=float)
    fractional = ~np.isin(values["tp"], degrees)
    if np.any(fractional):
        raise InputError(
            f"tp = {values['tp'][fractional].flat[0]:g} splits {model.name} into fractional heads; "
            f"accepted: {', '.join(str(int(d)) for d in degrees)}"
        )
