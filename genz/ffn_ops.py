"""FFN-block operators of one pass: dense gated FFN, and MoE (router, EP all-to-alls,
routed experts by the expected distinct experts touched, shared experts).

Conventions (FLOP, bytes, per device) are those of `genz.graph`.
"""

from __future__ import annotations

from roofline import OperatorKind

from .model import ModelConfig
from .op_terms import (
    Array,
    OpTerms,
    PassShape,
    all_reduce_terms,
    collective_terms,
    elementwise_max,
    elementwise_terms,
    gemm_terms,
    lora_terms,
)
from .params import ffn_matrices


def dense_ffn_ops(model: ModelConfig, shape: PassShape) -> list[OpTerms]:
    """Operators of the dense FFN blocks (layers without experts)."""
    layers = float(model.num_dense_layers)
    if layers == 0:
        return []
    h = float(model.hidden_size)
    tokens = shape.batch / shape.ep * shape.query_tokens
    width = model.intermediate_size / shape.tp
    up_n = (ffn_matrices(model) - 1) * width
    ops = [
        elementwise_terms("ffn_norm", OperatorKind.NORM, layers, tokens * h, 4.0, shape),
        gemm_terms("ffn_up_gate", "ffn_up_gate", layers, tokens, h, up_n, shape),
        elementwise_terms(
            "ffn_activation", OperatorKind.ELEMENTWISE, layers, tokens * width, 5.0, shape
        ),
        gemm_terms("ffn_down", "ffn_down", layers, tokens, width, h, shape),
    ]
    shared = model.shared_block
    if shared is not None and shared.mlp_adapters:  # Zamba2: one per invocation
        r = float(shared.adapter_rank)
        ops.append(gemm_terms("ffn_adapter_down", "ffn_up_gate", layers, tokens, h, r, shape))
        ops.append(gemm_terms("ffn_adapter_up", "ffn_up_gate", layers, tokens, r, up_n, shape))
    if "ffn" in model.lora_targets:  # one adapter pair per FFN matrix
        widths = (ffn_matrices(model) - 1) * (h + width) + (width + h)
        ops.append(lora_terms("lora_ffn", "ffn_up_gate", layers, tokens, widths, model, shape))
    ops.append(all_reduce_terms("tp_all_reduce_ffn", layers, tokens, model, shape))
    return ops


def expected_experts_touched(
    num_experts: Array | float,
    top_k: Array | float,
    tokens: Array,
    independence: Array | float = 1.0,
) -> Array:
    """Expected distinct experts hit by ``tokens`` tokens routed uniformly top-k of E, of
    which ``1 + independence (tokens - 1)`` choose independently (1: every token)."""
    independent = 1.0 + independence * (tokens - 1.0)
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** independent)


def moe_ffn_ops(model: ModelConfig, shape: PassShape) -> list[OpTerms]:
    """Operators of the MoE blocks: router, EP all-to-alls, routed and shared experts."""
    layers = float(model.num_moe_layers)
    if layers == 0:
        return []
    h = float(model.hidden_size)
    e, t = shape.ep, shape.tp
    tokens = shape.batch / e * shape.query_tokens
    all_tokens = shape.batch * shape.query_tokens
    k_top = float(model.experts_per_token)
    m = model.moe_intermediate_size
    matrices = ffn_matrices(model)
    a_bytes = shape.activation_bits / 8
    expert_bits = shape.weight_bits["experts"]
    touched = (
        expected_experts_touched(model.num_experts, k_top, all_tokens, shape.routing_independence)
        / e
    )
    expert_weights = matrices * h * m / t
    routed_tokens = all_tokens * k_top / e
    ops = [
        elementwise_terms("ffn_norm", OperatorKind.NORM, layers, tokens * h, 4.0, shape),
        gemm_terms(
            "router",
            "router",
            layers,
            tokens,
            h,
            float(model.num_experts),
            shape,
        ),
    ]
    dispatch = tokens * k_top * h * a_bytes
    for name in ("ep_dispatch", "ep_combine"):
        ops.append(collective_terms(name, "all_to_all", layers, dispatch, e, shape))
    ops.append(
        OpTerms(
            "routed_experts",
            OperatorKind.GEMM,
            "experts",
            layers,
            2.0 * routed_tokens * expert_weights,
            touched * expert_weights * expert_bits / 8
            + routed_tokens * (2 * h + (matrices - 1) * m / t) * a_bytes,
            elementwise_max(expert_bits, shape.activation_bits),
        )
    )
    if model.num_shared_experts:
        width = model.num_shared_experts * m / t
        shared_weights = matrices * h * width
        shared_bits = shape.weight_bits["shared_experts"]
        ops.append(
            OpTerms(
                "shared_experts",
                OperatorKind.GEMM,
                "shared_experts",
                layers,
                2.0 * tokens * shared_weights,
                shared_weights * shared_bits / 8
                + tokens * (2 * h + (matrices - 1) * width) * a_bytes,
                elementwise_max(shared_bits, shape.activation_bits),
            )
        )
    ops.append(all_reduce_terms("tp_all_reduce_moe", layers, tokens, model, shape))
    return ops
