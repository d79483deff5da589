"""Checks of a scenario against the model it runs: meshes the model can be split over,
per-layer bit widths for layers it has. Each raises `InputError` naming the accepted range."""

from __future__ import annotations

from roofline import InputError

from .advice import tensor_parallel_degrees
from .model import ModelConfig
from .scenario import Parallelism, Precision


def check_parallelism(model: ModelConfig, parallelism: Parallelism) -> None:
    """Reject meshes the model cannot be split over, naming the accepted range."""
    if parallelism.tp > model.num_heads:
        raise InputError(
            f"tp must be in [1, {model.num_heads}] (attention heads of {model.name}), got {parallelism.tp}"
        )
    if parallelism.pp > model.num_layers:
        raise InputError(
            f"pp must be in [1, {model.num_layers}] (layers of {model.name}), got {parallelism.pp}"
        )
    limit = max(model.num_experts, 1)
    if parallelism.ep > limit:
        raise InputError(
            f"ep must be in [1, {limit}] ({'experts' if model.is_moe else 'dense model'}: {model.name}), got {parallelism.ep}"
        )
    degrees = tensor_parallel_degrees(model)
    if parallelism.tp not in degrees:
        kv_rule = (
            ""
            if model.is_mla
            else f" and either divide its {model.num_kv_heads} KV heads or be a multiple of "
            "them (KV heads are then replicated, as vLLM does)"
        )
        raise InputError(
            f"tp = {parallelism.tp} splits {model.name} into fractional heads: tp must divide "
            f"its {model.num_heads} attention heads{kv_rule}; accepted: "
            f"{', '.join(map(str, degrees))}"
        )


def check_layer_bits(model: ModelConfig, precision: Precision) -> None:
    """Reject ``layer_bits`` entries for layers the model does not have."""
    outside = sorted(layer for layer in precision.layer_bits if layer >= model.num_layers)
    if outside:
        raise InputError(
            f"layer_bits names layer {outside[0]}, but {model.name} has {model.num_layers} "
            f"layers (indices 0 to {model.num_layers - 1})"
        )
