"""Per-layer weight bits (``Precision.layer_bits``) as a few distinct patterns, each
with the share of every block's layers that uses it: `genz.predict` costs each pattern
once and weights every operator by its block's share."""

from __future__ import annotations

from .model import ModelConfig
from .op_terms import BLOCKS
from .params import WEIGHT_GROUPS
from .scenario import Precision

#: Weight groups that exist once per model: their bits never vary by layer.
MODEL_LEVEL_GROUPS = ("embedding", "lm_head")


def layer_bit_patterns(
    model: ModelConfig, precision: Precision
) -> list[tuple[dict[str, float], dict[str, float]]]:
    """Distinct per-layer weight-bit patterns and, for each, the share of the layers
    of every block (`genz.op_terms.BLOCKS`) that use it.

    A pattern used by 3 of DeepSeek-V3's 3 dense layers and none of its 58 MoE
    layers has shares ``{"attention": 3/61, "dense_ffn": 1.0, "moe_ffn": 0.0}``.
    Embedding and LM head take ``precision.bits_for(group)`` (no layer).
    """
    model_bits = {group: precision.bits_for(group) for group in MODEL_LEVEL_GROUPS}
    if not precision.layer_bits:
        bits = {group: precision.bits_for(group) for group in WEIGHT_GROUPS}
        return [(bits, dict.fromkeys(BLOCKS, 1.0))]
    counts: dict[tuple[float, ...], dict[str, int]] = {}
    for layer in range(model.num_layers):
        key = tuple(
            model_bits[group] if group in model_bits else precision.bits_for(group, layer)
            for group in WEIGHT_GROUPS
        )
        tally = counts.setdefault(key, dict.fromkeys(BLOCKS, 0))
        tally["attention"] += 1
        tally["moe_ffn" if model.is_moe_layer(layer) else "dense_ffn"] += 1
    totals = {
        "attention": model.num_layers,
        "dense_ffn": model.num_dense_layers,
        "moe_ffn": model.num_moe_layers,
    }
    return [
        (
            dict(zip(WEIGHT_GROUPS, key, strict=True)),
            {
                **{
                    block: tally[block] / totals[block] if totals[block] else 0.0
                    for block in totals
                },
                "model": 1.0,
            },
        )
        for key, tally in counts.items()
    ]


#: The block whose layers hold each weight group's parameters.
GROUP_BLOCK = {
    "attn_qkv": "attention",
    "attn_kv_up": "attention",
    "attn_out": "attention",
    "norms": "attention",
    "ffn_up_gate": "dense_ffn",
    "ffn_down": "dense_ffn",
    "experts": "moe_ffn",
    "shared_experts": "moe_ffn",
    "router": "moe_ffn",
    "embedding": "model",
    "lm_head": "model",
}


def effective_group_bits(
    patterns: list[tuple[dict[str, float], dict[str, float]]],
) -> dict[str, float]:
    """Per group, the bits averaged over the layers that hold the group: weight bytes
    are linear in bits, so these give the exact total weight bytes. Model-level
    groups are the same in every pattern."""
    return {
        group: patterns[0][0][group]
        if GROUP_BLOCK[group] == "model"
        else sum(bits[group] * shares[GROUP_BLOCK[group]] for bits, shares in patterns)
        for group in WEIGHT_GROUPS
    }
