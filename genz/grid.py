"""Vectorised prediction over broadcastable arrays of scenario axes (`evaluate_grid`):
the co-design search's and the dashboard's sweep path, the same cost path as `predict`."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from roofline import BOUND_ORDER, Bound, InputError, Platform

from .advice import tensor_parallel_degrees
from .axes import (
    AXES,
    DEFAULT_BATCH,
    DEFAULT_BITS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    GRID_AXES,
)
from .inputs import GridInputs
from .model import ModelConfig
from .op_terms import Array
from .params import WEIGHT_GROUPS
from .predictor import evaluate
from .result import GridResult
from .runtime import RuntimeProfile

CAPACITY_CODE = BOUND_ORDER.index(Bound.CAPACITY)


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
    runtime: RuntimeProfile | None = None,
) -> GridResult:
    """Vectorised prediction over broadcastable arrays of scenario axes.

    Returns a `GridResult` of arrays of the axes' broadcast shape (SI units): latency,
    throughput, per-device memory, the capacity verdict, per-phase FLOP and bytes and
    integer bound codes. Uniform weight bits for every group. ``runtime``: a
    serving-stack profile applied by `evaluate` (None or ``ideal``: physics only).
    """
    arrays = np.broadcast_arrays(
        *(
            np.asarray(v, float)
            for v in (
                batch,
                input_tokens,
                output_tokens,
                weight_bits,
                activation_bits,
                kv_bits,
                tp,
                pp,
                ep,
                dp,
            )
        )
    )
    values = dict(zip(GRID_AXES, (np.array(a, float) for a in arrays), strict=True))
    _check_grid(model, values)
    chunk = (
        values["input_tokens"]
        if prefill_chunk is None
        else np.broadcast_to(np.asarray(prefill_chunk, float), values["batch"].shape)
    )
    inputs = GridInputs(
        batch=values["batch"],
        input_tokens=values["input_tokens"],
        output_tokens=values["output_tokens"],
        weight_bits={group: values["weight_bits"] for group in WEIGHT_GROUPS},
        activation_bits=values["activation_bits"],
        kv_bits=values["kv_bits"],
        tp=values["tp"],
        pp=values["pp"],
        ep=values["ep"],
        dp=values["dp"],
        chunk=np.minimum(chunk, values["input_tokens"]),
    )
    evaluation = evaluate(model, platform, inputs, runtime)
    footprint = evaluation.weights_bytes + evaluation.kv_cache_bytes + evaluation.activation_bytes
    fits = footprint <= platform.main_memory.capacity_bytes
    devices = values["tp"] * values["pp"] * values["ep"] * values["dp"]
    generated = values["dp"] * values["batch"] * values["output_tokens"]
    prefill, decode = evaluation.prefill, evaluation.decode
    return GridResult(
        ttft_s=evaluation.ttft_s,
        tpot_s=evaluation.tpot_s,
        e2e_s=evaluation.e2e_s,
        throughput_tokens_per_s=generated / evaluation.e2e_s,
        throughput_tokens_per_s_per_device=generated / evaluation.e2e_s / devices,
        weights_bytes=evaluation.weights_bytes,
        kv_cache_bytes=evaluation.kv_cache_bytes,
        activation_bytes=evaluation.activation_bytes,
        footprint_bytes=footprint,
        fits=fits,
        prefill_flop=prefill.total_flop(),
        prefill_bytes=prefill.total_bytes(),
        decode_flop=decode.total_flop(),
        decode_bytes=decode.total_bytes(),
        prefill_bound_code=np.where(fits, prefill.phase_bound(), CAPACITY_CODE).astype(np.int8),
        decode_bound_code=np.where(fits, decode.phase_bound(), CAPACITY_CODE).astype(np.int8),
        bound_order=BOUND_ORDER,
    )


def _check_grid(model: ModelConfig, values: Mapping[str, Array]) -> None:
    limits = {name: (AXES[name].low, AXES[name].high) for name in values}
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
