"""Decision units of a model and each unit's cost at each format, taken from genz.

Units: every (layer, weight group) with weights in that layer (``attn_qkv``,
``attn_kv_up`` for MLA, ``attn_out``, ``ffn_up_gate`` and ``ffn_down`` in dense
layers, ``experts`` and ``shared_experts`` in MoE layers), the ``lm_head`` and
optionally the ``embedding``. Router and norms keep their scenario bits.

Separability. genz times each operator as ``max(compute, memory) + overhead``
(collectives: interconnect time) times its layer count, and each weight GEMM reads
the weights of exactly one group, so a layer's operator time depends on that one
unit's bits only. A pass then takes ``constant + sum_u time_u(bits_u)``: the
constant is every operator no unit owns (norms, attention, router, collectives,
embedding unless it is a unit); ``time_u(b)`` is the group's operator time at
uniform bits ``b`` divided by the layers that contain it. Latency is linear in the
ILP's binaries and matches `genz.predictor` on the resulting `Precision` (which costs
each distinct per-layer pattern and weights it by its share of layers) exactly for
models whose layers all hold the same groups. Weight bytes are likewise
``params x bits / 8`` per device (genz's sharding over tp, ep and pp).

The KV-cache format is fixed per call: attention reads the cache, and MLA's prefill
up-projection reads both its weights and the cached latent, so the quantizer
solves once per KV candidate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from genz import (
    WEIGHT_GROUPS,
    ModelConfig,
    PassCost,
    RuntimeProfile,
    Scenario,
    cost_breakdown,
    parameter_count,
    stored_weight_bits,
    weight_bytes_per_device,
)
from roofline import OperatorKind, Platform

from .formats import Format
from .sensitivity import KV_GROUP, Unit

#: Quantities every unit has a cost for (SI units); the budgets constrain a subset.
QUANTITIES = (
    "memory_bytes",
    "weights_bytes",
    "kv_cache_bytes",
    "tpot_s",
    "ttft_s",
    "decode_bops",
)
MODEL_LEVEL_GROUPS = ("lm_head", "embedding")


def layers_with_group(model: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Layer indices holding each per-layer weight group (groups with weights only)."""
    everything = tuple(range(model.num_layers))
    moe = tuple(
        layer
        for layer in everything
        if model.is_moe and layer >= model.first_dense_layers and layer % model.moe_layer_freq == 0
    )
    dense = tuple(layer for layer in everything if layer not in set(moe))
    groups = {"attn_qkv": everything}
    if model.is_mla:
        groups["attn_kv_up"] = everything
    groups["attn_out"] = everything
    if dense:
        groups.update(ffn_up_gate=dense, ffn_down=dense)
    if moe:
        groups["experts"] = moe
        if model.num_shared_experts:
            groups["shared_experts"] = moe
    return groups


def decision_units(model: ModelConfig, include_embedding: bool = False) -> tuple[Unit, ...]:
    """Units in layer order, then the LM head (and the embedding when asked)."""
    by_group = parameter_count(model).by_group
    units = []
    layers = layers_with_group(model)
    for layer in range(model.num_layers):
        for group, indices in layers.items():
            if layer not in indices:
                continue
            params = by_group[group] / len(indices)
            active = params
            if group == "experts":
                active = params * model.experts_per_token / model.num_experts
            units.append(Unit(layer, group, params, active))
    head = by_group["lm_head"] or by_group["embedding"]
    units.append(Unit(None, "lm_head", head, head))
    if include_embedding:
        units.append(Unit(None, "embedding", by_group["embedding"], by_group["embedding"]))
    return tuple(units)


def kv_unit(model: ModelConfig) -> Unit:
    """The KV cache as a pseudo-unit for sensitivity: the weights of the K/V (or MLA
    latent) projections whose outputs it stores."""
    width = (
        model.kv_lora_rank + model.qk_rope_head_dim
        if model.is_mla
        else 2 * model.num_kv_heads * model.head_dim
    )
    params = float(model.num_layers * model.hidden_size * width)
    return Unit(None, KV_GROUP, params, params)


def _by_group(values: dict[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
    """Per-group sums of `PassCost.by_group` as arrays of ``size`` (one per format)."""
    return {
        group: np.broadcast_to(np.asarray(total, float), (size,)) for group, total in values.items()
    }


def _gemm_macs(cost: PassCost, size: int) -> dict[str, np.ndarray]:
    """Multiply-accumulates of the GEMMs of a pass (FLOP / 2), per weight group."""
    return _by_group(cost.by_group(cost.flop / 2.0, OperatorKind.GEMM), size)


def unit_costs(
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    units: Sequence[Unit],
    formats: Sequence[Format],
    kv_bits: float,
    runtime: RuntimeProfile | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """``(costs, constants)``: per quantity in `QUANTITIES`, the ``(units, formats)``
    cost matrix and the part no unit changes, per device, SI units.

    ``runtime`` (a serving-stack profile, `genz.load_runtime`; None: the physics) times
    every column as genz does: its phase efficiencies, its all-reduce latency, its per-step
    cost (a constant: the ``runtime`` group belongs to no unit) and the bits it stores for
    each weight format (weight bytes too, `genz.stored_weight_bits`). Exact against
    `genz.predict` under the same profile for profiles without ``weight_formats``; with
    them (llama.cpp) column ``j`` stores every group in format ``j`` while `genz.predict`
    of a *mixed* allocation keys the stored bits and dequantisation scale on each layer
    pattern's attention format, so the two can differ (the prediction is what is reported).

    ``decode_bops`` is the bit-operations of one decode step (HAWQ-V3: sum over
    weight GEMMs of MACs x weight bits x activation bits; attention is excluded).
    """
    precision = scenario.precision
    m = len(formats)
    bits = np.array([fmt.bits for fmt in formats], dtype=float)
    unit_groups = {unit.group for unit in units}
    fixed_bits = {group: precision.bits_for(group) for group in WEIGHT_GROUPS}
    group_bits = {
        group: bits if group in unit_groups else np.full(m, fixed_bits[group])
        for group in WEIGHT_GROUPS
    }
    evaluation = cost_breakdown(
        model,
        platform,
        scenario,
        group_bits=group_bits,
        runtime=runtime,
        kv_bits=np.full(m, float(kv_bits)),
    )
    # bits as the runtime stores them, one per format column (weight bytes)
    stored = group_bits if runtime is None else stored_weight_bits(runtime, group_bits)
    decode, prefill = evaluation.decode, evaluation.prefill
    activation_bits = precision.activation_bits
    per_group = {
        "tpot_s": _by_group(decode.by_group(decode.time_s), m),
        "ttft_s": _by_group(prefill.by_group(prefill.time_s), m),
        "decode_bops": {
            group: macs * group_bits[group] * activation_bits
            for group, macs in _gemm_macs(decode, m).items()
            if group in group_bits
        },
    }
    mesh = scenario.parallelism
    tp, ep, pp = (np.asarray([float(degree)]) for degree in (mesh.tp, mesh.ep, mesh.pp))
    zero = {group: np.zeros(m) for group in WEIGHT_GROUPS}
    per_group["weights_bytes"] = {
        group: weight_bytes_per_device(model, {**zero, group: stored[group]}, tp, ep, pp)
        for group in unit_groups
    }
    fixed_weights = weight_bytes_per_device(
        model,
        {g: np.zeros(m) if g in unit_groups else stored[g] for g in WEIGHT_GROUPS},
        tp,
        ep,
        pp,
    )
    layer_count = {group: len(indices) for group, indices in layers_with_group(model).items()}
    costs: dict[str, np.ndarray] = {}
    constants: dict[str, float] = {}
    for quantity, groups in per_group.items():
        rows = [
            groups.get(u.group, np.zeros(m)) / (1 if u.layer is None else layer_count[u.group])
            for u in units
        ]
        costs[quantity] = np.vstack(rows)
        constants[quantity] = float(
            sum(value[0] for group, value in groups.items() if group not in unit_groups)
        )
    constants["weights_bytes"] = float(np.asarray(fixed_weights).reshape(-1)[0])
    kv_bytes = float(evaluation.kv_cache_bytes.reshape(-1)[0])
    activation_bytes = float(evaluation.activation_bytes.reshape(-1)[0])
    costs["kv_cache_bytes"] = np.zeros((len(units), m))
    constants["kv_cache_bytes"] = kv_bytes
    costs["memory_bytes"] = costs["weights_bytes"]
    constants["memory_bytes"] = constants["weights_bytes"] + kv_bytes + activation_bytes
    return {q: costs[q] for q in QUANTITIES}, {q: constants[q] for q in QUANTITIES}
