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
- MoE: routed-expert FLOP ``2 T_all k_top (matrices h m) / (e t)``; weight bytes
  of the experts touched: ``E (1 - (1 - k_top/E)^T_all)`` expected distinct experts
  per layer for T_all tokens (uniform routing), split over e devices; a runtime
  profile's ``routing_independence`` s counts ``1 + s (T_all - 1)`` of them as
  independent (default 1).
- Collectives: TP all-reduce of ``T h bits_a/8`` bytes after attention and after
  the FFN; EP all-to-all dispatch and combine of ``T k_top h bits_a/8`` bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple, cast

import numpy as np
from numpy.typing import NDArray

from roofline import OperatorKind

from .model import ModelConfig
from .params import ffn_matrices
from .windows import window_keys, window_pairs

Array = NDArray[np.float64]

#: Where an operator sits: every layer's attention, the dense-FFN layers, the MoE
#: layers, or once per model (embedding, LM head, pipeline hand-offs).
BLOCKS = ("attention", "dense_ffn", "moe_ffn", "model")


class OpTerms(NamedTuple):
    """One operator of a pass, over a vector of scenarios (an immutable value object;
    a named tuple because passes build thousands of them per second).

    ``layers`` is how many times a pass runs it: the layers of the replica that
    contain it (1 for per-model ops; a fraction for the LM head of chunked prefill).
    ``collective`` names the collective ('all_reduce', 'all_to_all', 'p2p') whose
    ``message_bytes`` cross ``group`` devices, for interconnect operators.
    ``kv_bytes`` is the part of ``bytes`` that reads or writes the KV cache (attention,
    MLA's latent up-projection; 0 elsewhere), which a runtime's KV-cache format may
    stream at its own rate (`genz.runtime_cost.kv_format_memory_s`).
    """

    name: str
    kind: OperatorKind
    group: str
    layers: Array | float
    flop: Array
    bytes: Array
    compute_bits: Array
    collective: str | None = None
    message_bytes: Array | None = None
    group_size: Array | None = None
    kv_bytes: Array | float = 0.0


@dataclass(frozen=True)
class PassOps:
    """The operators of one forward pass and the `BLOCKS` name of each, in order."""

    ops: tuple[OpTerms, ...]
    blocks: tuple[str, ...]

    def __add__(self, other: PassOps) -> PassOps:
        """Both passes' operators, this one's first (to cost them in one call)."""
        return PassOps(self.ops + other.ops, self.blocks + other.blocks)


def elementwise_max(a: Array | float, b: Array | float) -> Array:
    """Elementwise maximum; for two floats (one scenario) plain ``max``, which costs
    no numpy call (the result then is a float, as the inputs)."""
    if isinstance(a, float) and isinstance(b, float):
        return cast(Array, max(float(a), float(b)))
    return np.maximum(a, b)


@dataclass(frozen=True)
class PassShape:
    """What one forward pass processes, broadcastable numpy arrays (see module doc)."""

    batch: Array
    query_tokens: Array
    context: Array
    weight_bits: Mapping[str, Array]
    activation_bits: Array
    kv_bits: Array
    tp: Array
    ep: Array
    pp: Array
    prefill: bool
    head_share: Array | float = 1.0
    routing_independence: Array | float = 1.0
    window_pairs: Array | float | None = None
    window_keys: Array | float | None = None


def _gemm(
    name: str,
    group: str,
    layers: Array | float,
    tokens: Array,
    k: Array | float,
    n: Array | float,
    shape: PassShape,
) -> OpTerms:
    w_bits = shape.weight_bits[group]
    a_bytes = shape.activation_bits / 8
    flop = 2.0 * tokens * k * n
    moved = k * n * w_bits / 8 + tokens * (k + n) * a_bytes
    return OpTerms(
        name,
        OperatorKind.GEMM,
        group,
        layers,
        flop,
        moved,
        elementwise_max(w_bits, shape.activation_bits),
    )


def _lora(
    name: str,
    group: str,
    layers: Array | float,
    tokens: Array,
    widths: Array | float,
    model: ModelConfig,
    shape: PassShape,
) -> OpTerms:
    """Batched LoRA (Punica BGMV / S-LoRA) on projections whose input plus output widths
    per device sum to ``widths``: FLOP ``2 T r widths``; bytes: the adapters the batch
    touches, ``A (1 - (1 - 1/A)^B)`` of A (requests spread uniformly), ``r widths`` weights
    each, plus the tokens' input, output and rank-r intermediate."""
    r, adapters = float(model.lora_rank), float(model.lora_adapters)
    w_bits = shape.weight_bits[group]
    touched = adapters * (1.0 - (1.0 - 1.0 / adapters) ** shape.batch)
    moved = (
        touched * r * widths * w_bits / 8 + tokens * (widths + 2 * r) * shape.activation_bits / 8
    )
    return OpTerms(
        name,
        OperatorKind.GEMM,
        group,
        layers,
        2.0 * tokens * r * widths,
        moved,
        elementwise_max(w_bits, shape.activation_bits),
    )


def _elementwise(
    name: str,
    kind: OperatorKind,
    layers: Array | float,
    elements: Array,
    flop_per: float,
    shape: PassShape,
) -> OpTerms:
    moved = 2.0 * elements * shape.activation_bits / 8
    return OpTerms(
        name, kind, "activations", layers, flop_per * elements, moved, shape.activation_bits
    )


def _collective(
    name: str, kind: str, layers: float, message: Array, group: Array, shape: PassShape
) -> OpTerms:
    """A collective of ``message`` bytes per device over ``group`` devices (no FLOP, no
    main-memory traffic: its time comes from the interconnect model)."""
    zero = 0.0 * message
    return OpTerms(
        name,
        OperatorKind.COLLECTIVE,
        "collective",
        layers,
        zero,
        zero,
        shape.activation_bits,
        collective=kind,
        message_bytes=message,
        group_size=group,
    )


def _all_reduce(
    name: str, layers: float, tokens: Array, model: ModelConfig, shape: PassShape
) -> OpTerms:
    message = tokens * model.hidden_size * shape.activation_bits / 8
    return _collective(name, "all_reduce", layers, message, shape.tp, shape)


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
    ops = [_elementwise("attn_norm", OperatorKind.NORM, layers, tokens * h, 4.0, shape)]
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
        qkv_n = (heads + 2 * kv_heads) * d
        ops.append(_gemm("qkv_proj", "attn_qkv", layers, tokens, float(h), qkv_n, shape))
        if "qkv" in model.lora_targets:
            ops.append(_lora("lora_qkv", "attn_qkv", layers, tokens, h + qkv_n, model, shape))
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
        ops.append(_gemm("out_proj", "attn_out", layers, tokens, out_k, float(h), shape))
        if "o" in model.lora_targets:
            ops.append(_lora("lora_o", "attn_out", layers, tokens, out_k + h, model, shape))
        ops.append(_all_reduce("tp_all_reduce_attn", layers, tokens, model, shape))
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
    ops.append(_gemm("out_proj", "attn_out", layers, tokens, out_k, float(h), shape))
    ops.append(_all_reduce("tp_all_reduce_attn", layers, tokens, model, shape))
    return ops


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
    h = float(model.hidden_size)
    t = shape.tp
    seqs = shape.batch / shape.ep
    q = shape.query_tokens
    tokens = seqs * q
    a_bytes = shape.activation_bits / 8
    d = ssm.inner_size / t
    n = float(ssm.state_size)
    ops = [
        _elementwise("ssm_norm", OperatorKind.NORM, layers, tokens * h, 4.0, shape),
        _gemm("ssm_in_proj", "attn_qkv", layers, tokens, h, ssm.in_proj_width / t, shape),
    ]
    if ssm.version == 1:
        x_n = float(ssm.dt_rank + 2 * ssm.state_size)
        ops.append(_gemm("ssm_x_proj", "attn_qkv", layers, tokens, d, x_n, shape))
        ops.append(_gemm("ssm_dt_proj", "attn_qkv", layers, tokens, float(ssm.dt_rank), d, shape))
        per_token_io = 4.0 * d + 2.0 * n  # x, z, dt, y; B, C
    else:
        per_token_io = 3.0 * d + ssm.num_heads / t + 2.0 * ssm.groups * n  # x, z, y; dt; B, C
    ops.append(
        _elementwise(
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
    ops.append(_gemm("ssm_out_proj", "attn_out", layers, tokens, d, h, shape))
    ops.append(_all_reduce("tp_all_reduce_ssm", layers, tokens, model, shape))
    return ops


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
        _elementwise("ffn_norm", OperatorKind.NORM, layers, tokens * h, 4.0, shape),
        _gemm("ffn_up_gate", "ffn_up_gate", layers, tokens, h, up_n, shape),
        _elementwise(
            "ffn_activation", OperatorKind.ELEMENTWISE, layers, tokens * width, 5.0, shape
        ),
        _gemm("ffn_down", "ffn_down", layers, tokens, width, h, shape),
    ]
    if "ffn" in model.lora_targets:  # one adapter pair per FFN matrix
        widths = (ffn_matrices(model) - 1) * (h + width) + (width + h)
        ops.append(_lora("lora_ffn", "ffn_up_gate", layers, tokens, widths, model, shape))
    ops.append(_all_reduce("tp_all_reduce_ffn", layers, tokens, model, shape))
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
        _elementwise("ffn_norm", OperatorKind.NORM, layers, tokens * h, 4.0, shape),
        _gemm(
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
        ops.append(_collective(name, "all_to_all", layers, dispatch, e, shape))
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
    ops.append(_all_reduce("tp_all_reduce_moe", layers, tokens, model, shape))
    return ops


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
        _elementwise(
            "final_norm", OperatorKind.NORM, shape.head_share, head_tokens * h, 4.0, shape
        ),
        _gemm(
            "lm_head",
            "lm_head",
            shape.head_share,
            head_tokens,
            h,
            model.vocab_size / shape.tp,
            shape,
        ),
    ]
    ops.append(_collective("pp_send", "p2p", 1.0, tokens * h * a_bytes, shape.pp, shape))
    return ops


def pass_ops(model: ModelConfig, shape: PassShape) -> PassOps:
    """All operators of one forward pass of the replica, each with its `BLOCKS` name."""
    builders = (attention_ops, ssm_ops, dense_ffn_ops, moe_ffn_ops, model_level_ops)
    ops: list[OpTerms] = []
    blocks: list[str] = []
    # State-space layers are token mixers like attention: one "attention" block.
    for block, build in zip(("attention", *BLOCKS), builders, strict=True):
        built = build(model, shape)
        ops.extend(built)
        blocks.extend([block] * len(built))
    return PassOps(tuple(ops), tuple(blocks))
