"""Scenario axes as numpy arrays: the common input of costing and memory sizing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np

from .op_terms import Array, PassShape
from .params import WEIGHT_GROUPS
from .scenario import Scenario


@dataclass(frozen=True)
class GridInputs:
    """Scenario axes as broadcastable arrays (see `evaluate_grid`).

    Fields are named after the axes of `genz.axes.AXES` and hold values in their units
    and ranges; ``chunk`` is ``prefill_chunk`` resolved (the prompt length when unset)
    and ``weight_bits`` maps each weight group to its bits. ``sequences_per_request``
    (parallel samples times beams) multiplies the decode batch; the prompt's prefill
    and KV are shared by a request's sequences.
    """

    batch: Array
    input_tokens: Array
    output_tokens: Array
    weight_bits: Mapping[str, Array]
    activation_bits: Array
    kv_bits: Array
    tp: Array
    pp: Array
    ep: Array
    dp: Array
    chunk: Array
    sequences_per_request: Array | float = 1.0
    images: Array | float = 0.0


def scenario_inputs(
    scenario: Scenario, group_bits: Mapping[str, float] | None = None, *, scalars: bool = False
) -> GridInputs:
    """One scenario as length-1 arrays, or with ``scalars`` as plain floats (the same
    arithmetic without numpy call overhead); ``group_bits`` defaults to the precision's."""
    precision, mesh = scenario.precision, scenario.parallelism
    if group_bits is None:
        group_bits = {group: precision.bits_for(group) for group in WEIGHT_GROUPS}

    def one(value: float) -> Array:
        return cast(Array, float(value)) if scalars else np.asarray([float(value)])

    return GridInputs(
        batch=one(scenario.batch),
        input_tokens=one(scenario.input_tokens),
        output_tokens=one(scenario.output_tokens),
        weight_bits={group: one(bits) for group, bits in group_bits.items()},
        activation_bits=one(precision.activation_bits),
        kv_bits=one(precision.kv_bits),
        tp=one(mesh.tp),
        pp=one(mesh.pp),
        ep=one(mesh.ep),
        dp=one(mesh.dp),
        chunk=one(scenario.prefill_chunk or scenario.input_tokens),
        images=float(scenario.images),
        sequences_per_request=float(scenario.sequences_per_request)
        if scenario.sequences_per_request == 1
        else one(scenario.sequences_per_request),
    )


def pass_shape(
    inputs: GridInputs,
    *,
    query_tokens: Array,
    context: Array,
    prefill: bool,
    head_share: Array | float = 1.0,
    routing_independence: Array | float = 1.0,
    batch: Array | None = None,
    window_pairs: Array | float | None = None,
    window_keys: Array | float | None = None,
) -> PassShape:
    """The `PassShape` of one forward pass over ``inputs``: ``query_tokens`` new tokens
    per sequence attending to ``context`` tokens (``routing_independence``: see
    `genz.ffn_ops.expected_experts_touched`; ``batch`` overrides the sequences per replica,
    ``window_*`` the windowed layers' mean pairs and keys, `genz.windows`)."""
    return PassShape(
        batch=inputs.batch if batch is None else batch,
        query_tokens=query_tokens,
        context=context,
        weight_bits=inputs.weight_bits,
        activation_bits=inputs.activation_bits,
        kv_bits=inputs.kv_bits,
        tp=inputs.tp,
        ep=inputs.ep,
        pp=inputs.pp,
        prefill=prefill,
        head_share=head_share,
        routing_independence=routing_independence,
        window_pairs=window_pairs,
        window_keys=window_keys,
    )
