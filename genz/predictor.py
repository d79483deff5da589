"""Predict TTFT, TPOT, throughput, memory and bounds; one scenario or a grid.

Prefill runs the prompt in ``ceil(input / chunk)`` equal chunks; each is costed at
the mean attended context (attention FLOP and bytes are linear in the context, so
totals are exact). Decode runs ``output - 1`` steps at contexts ``input + 1 ...
input + output - 1``; every decode operator's FLOP and bytes are constant or linear
in the context, so the mean step time equals the step time at the mean context
``input + output / 2`` whenever attention stays on one side of the ridge over the
output (it does for decode on every shipped platform; a test checks the sum).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline import (
    BOUND_ORDER,
    Bound,
    CapacityFootprint,
    InputError,
    Platform,
    check_capacity,
)

from .advice import capacity_suggestions
from .costing import PassCost
from .graph import pass_ops
from .inputs import GridInputs, pass_shape, scenario_inputs
from .layer_bits import effective_group_bits, layer_bit_patterns
from .memory import footprint_arrays, weight_bytes_per_device
from .model import ModelConfig
from .offload import offload_terms
from .op_terms import Array, PassOps, PassShape
from .params import WEIGHT_GROUPS
from .resolved import resolve
from .result import PhaseCost, Prediction, end_to_end_s
from .runtime import RuntimeProfile
from .runtime_cost import cost_passes
from .scenario import Scenario
from .scenario_checks import check_layer_bits, check_parallelism
from .vision import image_tokens
from .vision_ops import vision_ops
from .windows import decode_mean_keys, prefill_means


@dataclass(frozen=True)
class CostBreakdown:
    """Both passes of a scenario (or of a grid of scenarios) per operator, and the
    per-device memory, as arrays of the scenarios' broadcast shape (SI units).

    ``prefill`` covers the whole prompt (all chunks), ``decode`` one step at the mean
    context (see the module doc); ``e2e_s`` is `genz.result.end_to_end_s` of them.
    """

    prefill: PassCost
    decode: PassCost
    ttft_s: Array
    tpot_s: Array
    e2e_s: Array
    weights_bytes: Array
    kv_cache_bytes: Array
    activation_bytes: Array


def _shape(
    model: ModelConfig, inputs: GridInputs, prefill: bool, routing: Array | float = 1.0
) -> PassShape:
    window: dict[str, Array | float | None] = {}
    w = float(model.kept_window_tokens)
    if prefill:
        chunks = np.ceil(inputs.input_tokens / inputs.chunk)
        query = inputs.input_tokens / chunks
        context = query * (chunks + 1) / 2
        head_share: Array | float = 1.0 / chunks
        batch = inputs.batch
        if model.num_window_layers:  # exact means over the chunks (genz.windows)
            pairs, keys = prefill_means(inputs.input_tokens, chunks, w)
            window = {"window_pairs": pairs, "window_keys": keys}
    else:
        query = 1.0 + 0.0 * inputs.input_tokens  # ones of its shape (a float for one scenario)
        context = inputs.input_tokens + inputs.output_tokens / 2
        head_share = 1.0
        batch = inputs.batch * inputs.sequences_per_request
        if model.num_window_layers:  # exact mean of min(c, w) over the decode steps
            keys = decode_mean_keys(inputs.input_tokens, inputs.output_tokens, w)
            window = {"window_pairs": keys, "window_keys": keys}
    return pass_shape(
        inputs,
        query_tokens=query,
        context=context,
        prefill=prefill,
        head_share=head_share,
        routing_independence=routing,
        batch=batch,
        **window,
    )


def evaluate(
    model: ModelConfig,
    platform: Platform,
    inputs: GridInputs,
    runtime: RuntimeProfile | None = None,
) -> CostBreakdown:
    """Cost prefill and decode and size the footprint for every scenario in ``inputs``.

    ``runtime`` (a serving-stack profile) is resolved once with the platform and the
    scenarios' formats (`genz.resolved.resolve`: stored weight bits, per-phase fractions
    of peak, step costs and expert routing, KV-format memory factors, all-reduce
    latency); the cost path is one pass over that description (`genz.runtime_cost.
    cost_passes`). None or ``ideal``: physics only.
    """
    resolved = resolve(platform, runtime, inputs)
    inputs = resolved.stored(inputs)
    chunks = np.ceil(inputs.input_tokens / inputs.chunk)
    phases = resolved.phases
    prefill_shape = _shape(model, inputs, True, phases["prefill"].routing_independence)
    prefill_terms = pass_ops(model, prefill_shape)
    if model.vision is not None and np.any(np.asarray(inputs.images) > 0):  # genz.vision
        images = dataclasses.replace(prefill_shape, batch=inputs.batch * inputs.images)
        runs = prefill_shape.head_share
        if not isinstance(inputs.images, float):  # a grid: the tower runs where images > 0
            runs = np.where(np.asarray(inputs.images) > 0, runs, 0.0)
        tower = vision_ops(model.vision, images, runs)
        prefill_terms = prefill_terms + PassOps(tuple(tower), ("model",) * len(tower))
    decode_terms = pass_ops(
        model, _shape(model, inputs, False, phases["decode"].routing_independence)
    )
    prefill, decode = cost_passes(resolved, prefill_terms, decode_terms, chunks, inputs.batch)
    ttft, tpot = prefill.total_s(), decode.total_s()
    footprint = footprint_arrays(model, inputs)
    shapes = {_shape_of(value) for value in (ttft, *footprint.values())}
    shape = shapes.pop() if len(shapes) == 1 else np.broadcast_shapes(*shapes)
    return CostBreakdown(
        prefill=prefill,
        decode=decode,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=end_to_end_s(ttft, tpot, inputs.output_tokens),
        **{
            name: value if _shape_of(value) == shape else np.broadcast_to(value, shape)
            for name, value in footprint.items()
        },
    )


def _shape_of(value: Array | float) -> tuple[int, ...]:
    """Shape of an array; () for a float (numpy scalars included), without np.shape's
    conversion."""
    return () if isinstance(value, float) else value.shape


#: Scenario axes `cost_breakdown` accepts as arrays (weight bits go per group).
BREAKDOWN_AXES = tuple(
    field.name for field in dataclasses.fields(GridInputs) if field.name != "weight_bits"
)


def cost_breakdown(
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    *,
    group_bits: Mapping[str, ArrayLike] | None = None,
    runtime: RuntimeProfile | None = None,
    **axes: ArrayLike,
) -> CostBreakdown:
    """Per-operator costs of both passes and per-device memory of ``scenario``, with
    any of its axes replaced by broadcastable arrays.

    ``group_bits`` maps weight groups (`genz.WEIGHT_GROUPS`) to weight bits (arrays
    allowed); groups it leaves out take ``scenario.precision.bits_for(group)``. Per-layer
    overrides (``Precision.layer_bits``) are not applied: `predict` blends those.
    ``axes`` are any of `BREAKDOWN_AXES` (``batch``, ``kv_bits``, ``chunk``...); the
    values are not range-checked here (`evaluate_grid` checks its axes). ``runtime``: a
    serving-stack profile applied by `evaluate` (None or ``ideal``: physics only).
    """
    check_parallelism(model, scenario.parallelism)
    unknown = sorted(set(axes) - set(BREAKDOWN_AXES))
    if unknown:
        raise InputError(
            f"unknown scenario axis {unknown[0]!r}; accepted: {', '.join(BREAKDOWN_AXES)}"
        )
    inputs = scenario_inputs(scenario)
    weight_bits = dict(inputs.weight_bits)
    for group, bits in (group_bits or {}).items():
        if group not in weight_bits:
            raise InputError(
                f"unknown weight group {group!r}; accepted: {', '.join(WEIGHT_GROUPS)}"
            )
        weight_bits[group] = np.asarray(bits, float)
    overrides = {name: np.asarray(value, float) for name, value in axes.items()}
    return evaluate(
        model,
        platform,
        dataclasses.replace(inputs, weight_bits=weight_bits, **overrides),
        runtime,
    )


def predict(
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    runtime: RuntimeProfile | None = None,
) -> Prediction:
    """Predict one scenario with the full per-operator breakdown.

    ``runtime``: a serving-stack profile (`genz.load_runtime`) applied by `evaluate`.

    Per-layer bit widths (``Precision.layer_bits``) are costed by evaluating each
    distinct pattern once and weighting each operator by the share of its block's
    layers (attention, dense FFN, MoE FFN) that use the pattern.
    """
    check_parallelism(model, scenario.parallelism)
    check_layer_bits(model, scenario.precision)
    if scenario.images:  # image tokens join the prompt (genz.vision)
        scenario = dataclasses.replace(
            scenario, input_tokens=scenario.input_tokens + image_tokens(model, scenario.images)
        )
    patterns = layer_bit_patterns(model, scenario.precision)
    evaluations = [
        (
            evaluate(model, platform, scenario_inputs(scenario, bits, scalars=True), runtime),
            shares,
        )
        for bits, shares in patterns
    ]
    # KV cache and activations do not depend on weight bits: any pattern's are the whole's.
    whole = evaluations[0][0]
    if len(evaluations) == 1:
        prefill, decode = whole.prefill, whole.decode
        weights = float(whole.weights_bytes)
    else:
        prefill = _blend([(e.prefill, shares) for e, shares in evaluations])
        decode = _blend([(e.decode, shares) for e, shares in evaluations])
        inputs = scenario_inputs(scenario, effective_group_bits(patterns))
        inputs = resolve(platform, runtime, inputs).stored(inputs)
        weights = float(
            weight_bytes_per_device(model, inputs.weight_bits, inputs.tp, inputs.ep, inputs.pp)[0]
        )
    return _prediction(model, platform, scenario, prefill, decode, whole, weights)


def _blend(weighted: list[tuple[PassCost, dict[str, float]]]) -> PassCost:
    """Each operator's times summed over patterns, weighted by its block's layer share;
    per-model operators are the same in every pattern and taken from the first (its
    weight is 1 in the first pattern and 0 in the others). Layers, FLOP and bytes are
    the first pattern's."""
    first = weighted[0][0]
    rows = (-1,) + (1,) * (first.time_s.ndim - 1)
    weights = [
        np.array(
            [float(index == 0) if block == "model" else shares[block] for block in first.blocks]
        ).reshape(rows)
        for index, (_, shares) in enumerate(weighted)
    ]

    def blended(term: str) -> Array:
        return np.asarray(
            sum(
                getattr(cost, term) * weight
                for (cost, _), weight in zip(weighted, weights, strict=True)
            ),
            float,
        )

    return dataclasses.replace(
        first,
        compute_s=blended("compute_s"),
        memory_s=blended("memory_s"),
        interconnect_s=blended("interconnect_s"),
        overhead_s=blended("overhead_s"),
    )


def _phase(name: str, cost: PassCost, fits: bool) -> PhaseCost:
    flop, moved, time = map(cost.first_scenario, (cost.flop, cost.bytes, cost.time_s))
    taking_time = [index for index, seconds in enumerate(time) if seconds > 0]
    return PhaseCost(
        phase=name,
        time_s=cost.total_s().item(),
        flop=sum(flop[index] for index in taking_time),
        bytes=sum(moved[index] for index in taking_time),
        bound=BOUND_ORDER[int(cost.phase_bound())] if fits else Bound.CAPACITY,
        pass_cost=cost,
    )


def _over_host_link(phase: PhaseCost, link_s: float) -> PhaseCost:
    """The phase taking ``max(device time, host-link time)`` (`genz.offload`)."""
    if link_s <= phase.time_s:
        return phase
    bound = phase.bound if phase.bound == Bound.CAPACITY else Bound.INTERCONNECT
    return dataclasses.replace(phase, time_s=link_s, bound=bound)


def _prediction(
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    prefill_cost: PassCost,
    decode_cost: PassCost,
    whole: CostBreakdown,
    weights_bytes: float,
) -> Prediction:
    kv_bytes = float(whole.kv_cache_bytes)
    offload = None
    if scenario.weight_offload or scenario.kv_offload:  # genz.offload: host-resident share
        offload = offload_terms(model, platform, scenario, weights_bytes, kv_bytes)
        weights_bytes = float(offload.device_weights_bytes)
        kv_bytes = float(offload.device_kv_bytes)
    footprint = CapacityFootprint(
        weights_bytes=weights_bytes,
        kv_cache_bytes=kv_bytes,
        activation_bytes=float(whole.activation_bytes),
    )
    verdict = check_capacity(footprint, platform.main_memory.capacity_bytes)
    prefill = _phase("prefill", prefill_cost, verdict.fits)
    decode = _phase("decode", decode_cost, verdict.fits)
    if offload is not None:
        prefill = _over_host_link(prefill, float(offload.prefill_link_s))
        decode = _over_host_link(decode, float(offload.decode_link_s))
    mesh = scenario.parallelism
    ttft, tpot = prefill.time_s, decode.time_s
    e2e = end_to_end_s(ttft, tpot, scenario.output_tokens)
    generated = mesh.dp * scenario.batch * scenario.returned_sequences * scenario.output_tokens
    sequences = mesh.dp * scenario.batch * scenario.sequences_per_request
    return Prediction(
        model=model.name,
        platform=platform.name,
        scenario=scenario,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        throughput_tokens_per_s=generated / e2e,
        throughput_tokens_per_s_per_device=generated / e2e / mesh.devices,
        request_tokens_per_s=scenario.output_tokens / e2e,
        decode_tokens_per_s=sequences / tpot,
        prefill_tokens_per_s=mesh.dp * scenario.batch * scenario.input_tokens / ttft,
        footprint=footprint,
        capacity=verdict,
        prefill=prefill,
        decode=decode,
        suggestions=() if verdict.fits else capacity_suggestions(model, platform, scenario),
    )
