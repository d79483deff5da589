"""State-space (Mamba / Mamba-2) layer operators of one pass: projections, causal
convolution, selective scan over a fixed recurrent state, output projection.

Conventions (FLOP, bytes, per device) are those of `genz.graph`.
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

#: Scan FLOP per state element per token: Mamba-1 discretises per element (exp(dt A):
#: 2, dt B x: 2, h = a h + b: 2, y += C h: 2, plus 1 to form dt x) = 9; Mamba-2's decay is
#: one scalar per head, leaving h = a h + (dt x) B: 3 and y += C h: 2 = 5.
SCAN_FLOP_PER_STATE = {1: 9.0, 2: 5.0}
#: FLOP per channel per token outside the state: D skip (2), SiLU gate (4).
SCAN_FLOP_PER_CHANNEL = 6.0
#: Mamba-2's chunked (SSD) prefill: chunk length of its intra-chunk quadratic term.
SSD_CHUNK = 256.0


def ssm_ops(model: ModelConfig, shape: PassShape) -> list[OpTerms]:
    """Operators of the state-space (Mamba / Mamba-2) layers; tp splits d_inner.

    Scan bytes: per token x, z, dt, B and C read and y written (activation bits), plus
    the recurrent state per sequence (`genz.layer_kinds.SSMConfig.state_elements`, at
    the KV-cache bits) written, and read when the pass continues a sequence (decode, or
    a prefill chunk after the first). Mamba-2 prefill adds the chunked-scan term
    ``min(q, 256) (N + P)`` FLOP per token per head (P = d_inner / heads).
    """
    ssm = model.ssm
    if ssm is None or not model.num_ssm_layers:
        return []
    layers = float(model.num_ssm_layers)
    # A parallel (Falcon-H1) layer shares the attention's input norm and TP all-reduce.
    own = float(model.num_ssm_layers - model.num_parallel_layers)
    h = float(model.hidden_size)
    t = shape.tp
    seqs = shape.batch / shape.ep
    q = shape.query_tokens
    tokens = seqs * q
    a_bytes = shape.activation_bits / 8
    d = ssm.inner_size / t
    n = float(ssm.state_size)
    ops = [
        elementwise_terms("ssm_norm", OperatorKind.NORM, own, tokens * h, 4.0, shape),
        gemm_terms("ssm_in_proj", "attn_qkv", layers, tokens, h, ssm.in_proj_width / t, shape),
    ]
    if ssm.version == 1:
        x_n = float(ssm.dt_rank + 2 * ssm.state_size)
        ops.append(gemm_terms("ssm_x_proj", "attn_qkv", layers, tokens, d, x_n, shape))
        ops.append(
            gemm_terms("ssm_dt_proj", "attn_qkv", layers, tokens, float(ssm.dt_rank), d, shape)
        )
        per_token_io = 4.0 * d + 2.0 * n  # x, z, dt, y; B, C
    else:
        per_token_io = 3.0 * d + ssm.num_heads / t + 2.0 * ssm.groups * n  # x, z, y; dt; B, C
    ops.append(
        elementwise_terms(
            "ssm_conv",
            OperatorKind.ELEMENTWISE,
            layers,
            tokens * ssm.conv_channels / t,
            2.0 * ssm.conv_kernel + 4.0,
            shape,
        )
    )
    flop = tokens * d * (SCAN_FLOP_PER_STATE[ssm.version] * n + SCAN_FLOP_PER_CHANNEL)
    if ssm.version == 2 and shape.prefill:
        head_dim = ssm.inner_size / ssm.num_heads
        flop = flop + tokens * (ssm.num_heads / t) * np.minimum(q, SSD_CHUNK) * (n + head_dim)
    state = seqs * ssm.state_elements / t * shape.kv_bits / 8
    continues = 1.0 if not shape.prefill else (shape.context > q) * 1.0
    state_traffic = state * (1.0 + continues)
    ops.append(
        OpTerms(
            "ssm_scan",
            OperatorKind.OTHER,
            "attention",
            layers,
            flop,
            tokens * per_token_io * a_bytes + state_traffic,
            elementwise_max(shape.activation_bits, shape.kv_bits),
            kv_bytes=state_traffic,
        )
    )
    ops.append(gemm_terms("ssm_out_proj", "attn_out", layers, tokens, d, h, shape))
    ops.append(all_reduce_terms("tp_all_reduce_ssm", own, tokens, model, shape))
    return ops
