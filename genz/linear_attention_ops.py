"""Gated DeltaNet linear-attention operators of one pass (`genz.linear_attention`):
norm, input projections, short causal convolution, the gated delta rule over a fixed
state per sequence, output projection, TP all-reduce.

Conventions (FLOP, bytes, per device) are those of `genz.graph`; the derivation of each
count is in docs/model.md ("Linear-attention layers").
"""

from __future__ import annotations

import numpy as np

from roofline import OperatorKind

from .model import ModelConfig
from .op_terms import (
    OpTerms,
    PassShape,
    all_reduce_terms,
    elementwise_max,
    elementwise_terms,
    gemm_terms,
)

#: Recurrent (decode) form, FLOP per state element per token: decay ``g S`` (1),
#: ``S^T k`` (2), rank-1 update ``S + k delta^T`` (2), read-out ``S^T q`` (2).
DELTA_DECODE_FLOP_PER_STATE = 7.0
#: Chunked (prefill) form, per state element per token: ``W S`` for the correction
#: ``v'`` (2), ``q S`` across chunks (2), the chunk's state update ``K^T V`` (2); the
#: decay is applied once per chunk.
DELTA_PREFILL_FLOP_PER_STATE = 6.0
#: Chunk length of the chunked gated delta rule (flash-linear-attention, transformers).
DELTA_CHUNK = 64.0
#: FLOP per value channel per token outside the state: ``(v - S^T k) beta`` (2) and the
#: gated RMSNorm ``norm(o) silu(z)`` (8); per key channel: L2 norm of q and of k (3 each).
FLOP_PER_VALUE_CHANNEL = 10.0
FLOP_PER_KEY_CHANNEL = 6.0


def linear_attention_ops(model: ModelConfig, shape: PassShape) -> list[OpTerms]:
    """Operators of the linear-attention layers; tp splits the heads.

    Delta-rule FLOP per token per value head (``c = min(q, 64)`` in prefill):
    decode ``7 d_k d_v``; prefill ``6 d_k d_v + c (3 d_k + 2 d_v) + c^2 / 3`` (the
    intra-chunk products ``q k^T``, ``k_beta k^T``, ``A (k_beta e^g)`` of width d_k,
    ``A v_beta`` and ``A v_new`` of width d_v, and the chunk's triangular solve), plus
    `FLOP_PER_VALUE_CHANNEL` and `FLOP_PER_KEY_CHANNEL` terms. Bytes: per token q, k, v,
    z, b, a read and o written (activation bits), plus the state per sequence
    (`genz.linear_attention.LinearAttentionConfig.state_elements`, at the KV-cache bits)
    written, and read when the pass continues a sequence (decode, or a prefill chunk
    after the first). Nothing grows with the context.
    """
    la = model.linear_attention
    if la is None or not model.num_linear_layers:
        return []
    layers = float(model.num_linear_layers)
    h = float(model.hidden_size)
    t = shape.tp
    seqs = shape.batch / shape.ep
    q = shape.query_tokens
    tokens = seqs * q
    a_bytes = shape.activation_bits / 8
    v_heads = la.num_value_heads / t
    d_k, d_v = float(la.key_head_dim), float(la.value_head_dim)
    state_per_head = d_k * d_v
    if shape.prefill:
        chunk = np.minimum(q, DELTA_CHUNK)
        per_head = (
            DELTA_PREFILL_FLOP_PER_STATE * state_per_head
            + chunk * (3.0 * d_k + 2.0 * d_v)
            + chunk * chunk / 3.0
        )
    else:
        per_head = DELTA_DECODE_FLOP_PER_STATE * state_per_head + 0.0 * q
    flop = tokens * (
        v_heads * per_head
        + FLOP_PER_VALUE_CHANNEL * la.value_width / t
        + FLOP_PER_KEY_CHANNEL * la.key_width / t
    )
    per_token_io = (2.0 * la.key_width + 3.0 * la.value_width + 2.0 * la.num_value_heads) / t
    state = seqs * la.state_elements / t * shape.kv_bits / 8
    continues = 1.0 if not shape.prefill else (shape.context > q) * 1.0
    state_traffic = state * (1.0 + continues)
    return [
        elementwise_terms("linear_attn_norm", OperatorKind.NORM, layers, tokens * h, 4.0, shape),
        gemm_terms(
            "linear_attn_in_proj", "attn_qkv", layers, tokens, h, la.in_proj_width / t, shape
        ),
        elementwise_terms(
            "linear_attn_conv",
            OperatorKind.ELEMENTWISE,
            layers,
            tokens * la.conv_channels / t,
            2.0 * la.conv_kernel + 4.0,
            shape,
        ),
        OpTerms(
            "linear_attn_delta_rule",
            OperatorKind.OTHER,
            "attention",
            layers,
            flop,
            tokens * per_token_io * a_bytes + state_traffic,
            elementwise_max(shape.activation_bits, shape.kv_bits),
            kv_bytes=state_traffic,
        ),
        gemm_terms(
            "linear_attn_out_proj", "attn_out", layers, tokens, la.value_width / t, h, shape
        ),
        all_reduce_terms("tp_all_reduce_linear_attn", layers, tokens, model, shape),
    ]
