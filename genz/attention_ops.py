"""Attention-block operators of one pass: norm, QKV (or MLA's low-rank) projections,
attention over full or windowed context, output projection, LoRA, TP all-reduce.

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
    elementwise_max,
    elementwise_terms,
    gemm_terms,
    lora_terms,
)
from .windows import window_keys, window_pairs


def attention_ops(model: ModelConfig, shape: PassShape) -> list[OpTerms]:
    """Operators of the attention blocks (full and windowed layers)."""
    if not model.num_attention_layers:
        return []
    layers = float(model.num_attention_layers)
    h = model.hidden_size
    t = shape.tp
    seqs = shape.batch / shape.ep
    q = shape.query_tokens
    tokens = seqs * q
    heads = model.num_heads / t
    pairs = q * shape.context - q * (q - 1) / 2
    a_bytes = shape.activation_bits / 8
    kv_bytes = shape.kv_bits / 8
    width = model.attention_input_size  # 2h into a Zamba2 shared block
    ops = [elementwise_terms("attn_norm", OperatorKind.NORM, layers, tokens * width, 4.0, shape)]
    attention_bits = elementwise_max(shape.activation_bits, shape.kv_bits)
    if model.is_mla:
        qk_head = model.qk_nope_head_dim + model.qk_rope_head_dim
        latent = model.kv_lora_rank + model.qk_rope_head_dim
        q_rank = model.q_lora_rank
        q_weights = (h * q_rank + q_rank * heads * qk_head) if q_rank else h * heads * qk_head
        qkv_weights = q_weights + h * latent
        ops.append(
            OpTerms(
                "qkv_proj",
                OperatorKind.GEMM,
                "attn_qkv",
                layers,
                2.0 * tokens * qkv_weights,
                qkv_weights * shape.weight_bits["attn_qkv"] / 8
                + tokens * (h + q_rank + heads * qk_head + latent) * a_bytes,
                elementwise_max(shape.weight_bits["attn_qkv"], shape.activation_bits),
            )
        )
        up_weights = model.kv_lora_rank * heads * (model.qk_nope_head_dim + model.v_head_dim)
        if shape.prefill:
            decompressed = seqs * shape.context
            up_flop = 2.0 * decompressed * up_weights
            up_kv = decompressed * latent * kv_bytes
            up_bytes = up_weights * shape.weight_bits["attn_kv_up"] / 8 + decompressed * (
                latent * kv_bytes + heads * (model.qk_nope_head_dim + model.v_head_dim) * a_bytes
            )
            attn_flop = (
                2.0 * seqs * heads * pairs * (qk_head + model.v_head_dim)
                + 5.0 * seqs * heads * pairs
            )
            attn_kv = tokens * latent * kv_bytes
            attn_bytes = (
                tokens * heads * (qk_head + model.v_head_dim) * a_bytes
                + decompressed * heads * (qk_head + model.v_head_dim) * a_bytes
                + attn_kv
            )
        else:
            up_flop = 2.0 * tokens * up_weights
            up_kv = 0.0 * tokens
            up_bytes = (
                up_weights * shape.weight_bits["attn_kv_up"] / 8
                + tokens
                * heads
                * (model.qk_nope_head_dim + model.kv_lora_rank + model.v_head_dim)
                * a_bytes
            )
            attn_flop = (
                2.0 * seqs * heads * pairs * (latent + model.kv_lora_rank)
                + 5.0 * seqs * heads * pairs
            )
            attn_bytes = (
                tokens * heads * (latent + model.kv_lora_rank) * a_bytes
                + seqs * shape.context * latent * kv_bytes
                + tokens * latent * kv_bytes
            )
            attn_kv = seqs * shape.context * latent * kv_bytes + tokens * latent * kv_bytes
        ops.append(
            OpTerms(
                "mla_kv_up",
                OperatorKind.GEMM,
                "attn_kv_up",
                layers,
                up_flop,
                up_bytes,
                elementwise_max(shape.weight_bits["attn_kv_up"], shape.activation_bits),
                kv_bytes=up_kv,
            )
        )
        out_k = heads * model.v_head_dim
    else:
        d = model.head_dim
        kv_heads = elementwise_max(model.num_kv_heads / t, 1.0)
        gate_heads = heads if model.attention_output_gate else 0.0
        qkv_n = (heads + gate_heads + 2 * kv_heads) * d
        ops.append(gemm_terms("qkv_proj", "attn_qkv", layers, tokens, float(width), qkv_n, shape))
        if model.shared_block is not None:
            ops.extend(shared_attention_ops(model, shape, layers, tokens))
        if "qkv" in model.lora_targets:
            ops.append(lora_terms("lora_qkv", "attn_qkv", layers, tokens, h + qkv_n, model, shape))
        kv_elements = 2 * kv_heads * d

        def attend(name: str, count: float, pairs: Array | float, keys: Array | float) -> OpTerms:
            kv = seqs * keys * kv_elements * kv_bytes + tokens * kv_elements * kv_bytes
            return OpTerms(
                name,
                OperatorKind.ATTENTION,
                "attention",
                count,
                4.0 * seqs * heads * d * pairs + 5.0 * seqs * heads * pairs,
                2.0 * tokens * heads * d * a_bytes + kv,
                attention_bits,
                kv_bytes=kv,
            )

        if model.num_full_attention_layers:
            ops.append(
                attend("attention", float(model.num_full_attention_layers), pairs, shape.context)
            )
        if model.num_window_layers:
            w = float(model.kept_window_tokens)
            w_pairs = shape.window_pairs
            w_keys = shape.window_keys
            ops.append(
                attend(
                    "attention_window",
                    float(model.num_window_layers),
                    window_pairs(q, shape.context, w) if w_pairs is None else w_pairs,
                    window_keys(q, shape.context, w) if w_keys is None else w_keys,
                )
            )
        out_k = heads * d
        ops.append(gemm_terms("out_proj", "attn_out", layers, tokens, out_k, float(h), shape))
        if "o" in model.lora_targets:
            ops.append(lora_terms("lora_o", "attn_out", layers, tokens, out_k + h, model, shape))
        ops.append(all_reduce_terms("tp_all_reduce_attn", layers, tokens, model, shape))
        return ops
    ops.append(
        OpTerms(
            "attention",
            OperatorKind.ATTENTION,
            "attention",
            layers,
            attn_flop,
            attn_bytes,
            attention_bits,
            kv_bytes=attn_kv,
        )
    )
    ops.append(gemm_terms("out_proj", "attn_out", layers, tokens, out_k, float(h), shape))
    ops.append(all_reduce_terms("tp_all_reduce_attn", layers, tokens, model, shape))
    return ops


def shared_attention_ops(
    model: ModelConfig, shape: PassShape, layers: float, tokens: Array
) -> list[OpTerms]:
    """Per-invocation weights of Zamba2's shared blocks on the attention side: the q, k
    and v adapters (when enabled; 3 down-projections 2h -> r, 3 up-projections r -> 2h,
    the up-projections' output split over tp) and the linear h -> h that feeds the
    block's output into the Mamba-2 layer (output split over tp)."""
    shared = model.shared_block
    assert shared is not None
    h, width = float(model.hidden_size), float(model.attention_input_size)
    r = float(shared.adapter_rank)
    ops = []
    if shared.attention_adapters:
        ops.append(gemm_terms("qkv_adapter_down", "attn_qkv", 3 * layers, tokens, width, r, shape))
        ops.append(
            gemm_terms("qkv_adapter_up", "attn_qkv", 3 * layers, tokens, r, width / shape.tp, shape)
        )
    ops.append(gemm_terms("shared_linear", "attn_out", layers, tokens, h, h / shape.tp, shape))
    return ops
