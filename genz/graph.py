"""Per-layer operator graphs of prefill and decode, vectorised over scenarios.

Every quantity is a numpy array broadcast over scenarios (batch, tokens, context,
bit widths, tensor/expert parallel degree), or a plain float for one scenario, so
the same code costs one scenario (fast: no numpy call per operator) or a grid of 10^4. Work is per device. Conventions (B = sequences per replica,
q = query tokens per sequence in this pass, c = context attended at the end of
the pass, t = tp, e = ep, T = B/e * q tokens per device):

- GEMM ``[T, k] x [k, n]``: FLOP ``2 T k n``; bytes: weights ``k n bits_w/8``
  plus input and output activations ``T (k + n) bits_a/8`` (each crosses memory once).
- Attention (fused, flash-style): FLOP ``4 (B/e) (heads/t) d pairs`` with causal
  ``pairs = q c - q (q - 1) / 2``, plus 5 FLOP per score for softmax; bytes:
  Q read and O written, the attended KV read once, the new KV written.
- MLA prefill decompresses K and V for the attended context; MLA decode uses the
  absorbed form that attends over the latent directly.
- Sliding-window layers (``attention_window``): pairs and keys of `genz.windows`
  (window plus sink tokens), or the shape's precomputed means over chunks / steps.
- State-space layers (Mamba, Mamba-2): in_proj, (Mamba-1: x_proj, dt_proj), causal
  convolution, selective scan over a fixed state per sequence, out_proj (`ssm_ops`).
- Linear-attention layers (Gated DeltaNet): in_proj_qkvz/ba, short convolution, the
  gated delta rule over a fixed d_k x d_v state per value head, out_proj
  (`linear_attention_ops`); no KV cache.
- MoE: routed-expert FLOP ``2 T_all k_top (matrices h m) / (e t)``; weight bytes
  of the experts touched: ``E (1 - (1 - k_top/E)^T_all)`` expected distinct experts
  per layer for T_all tokens (uniform routing), split over e devices; a runtime
  profile's ``routing_independence`` s counts ``1 + s (T_all - 1)`` of them as
  independent (default 1).
- Collectives: TP all-reduce of ``T h bits_a/8`` bytes after attention and after
  the FFN; EP all-to-all dispatch and combine of ``T k_top h bits_a/8`` bytes.
"""

from __future__ import annotations

from roofline import OperatorKind

from .attention_ops import attention_ops
from .ffn_ops import dense_ffn_ops, moe_ffn_ops
from .linear_attention_ops import linear_attention_ops
from .model import ModelConfig
from .op_terms import (
    BLOCKS,
    OpTerms,
    PassOps,
    PassShape,
    collective_terms,
    elementwise_terms,
    gemm_terms,
)
from .ssm_ops import ssm_ops


def model_level_ops(model: ModelConfig, shape: PassShape) -> list[OpTerms]:
    """Embedding lookup, final norm, LM head (last position of each sequence only,
    run in ``head_share`` of the passes), and the ``pp - 1`` pipeline hand-offs."""
    h = float(model.hidden_size)
    seqs = shape.batch / shape.ep
    tokens = seqs * shape.query_tokens
    a_bytes = shape.activation_bits / 8
    # Prefill needs logits of the last position only; a decode-style pass of q tokens
    # (speculative verification) needs all q.
    head_tokens = seqs if shape.prefill else tokens
    embed_bytes = tokens * h * (shape.weight_bits["embedding"] / 8 + a_bytes)
    ops = [
        OpTerms(
            "embedding",
            OperatorKind.EMBEDDING,
            "embedding",
            1.0,
            0.0 * embed_bytes,
            embed_bytes,
            shape.activation_bits,
        ),
        elementwise_terms(
            "final_norm", OperatorKind.NORM, shape.head_share, head_tokens * h, 4.0, shape
        ),
        gemm_terms(
            "lm_head",
            "lm_head",
            shape.head_share,
            head_tokens,
            h,
            model.vocab_size / shape.tp,
            shape,
        ),
    ]
    ops.append(collective_terms("pp_send", "p2p", 1.0, tokens * h * a_bytes, shape.pp, shape))
    return ops


def pass_ops(model: ModelConfig, shape: PassShape) -> PassOps:
    """All operators of one forward pass of the replica, each with its `BLOCKS` name."""
    builders = (
        attention_ops,
        ssm_ops,
        linear_attention_ops,
        dense_ffn_ops,
        moe_ffn_ops,
        model_level_ops,
    )
    ops: list[OpTerms] = []
    blocks: list[str] = []
    # State-space and linear-attention layers are token mixers like attention: one
    # "attention" block.
    for block, build in zip(("attention", "attention", *BLOCKS), builders, strict=True):
        built = build(model, shape)
        ops.extend(built)
        blocks.extend([block] * len(built))
    return PassOps(tuple(ops), tuple(blocks))
