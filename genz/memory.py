"""Capacity footprint per device: weights, KV cache and activations, in bytes.

- weights: every weight group's parameters x bits/8; experts split over tp*ep
  devices, everything else over tp (norms and MLA down-projections are treated as
  sharded too: they are < 1% of any shipped model), all divided over pp stages.
- KV cache at the final context: ``B/ep * (input + output) * layers/pp *
  kv_elements_per_device * kv_bits/8`` with ``2 * max(kv_heads/tp, 1) * head_dim``
  elements (GQA heads are replicated once tp exceeds them) or, for MLA, the latent
  ``kv_lora_rank + rope_dim`` (not sharded by tp). Windowed layers keep
  ``min(ctx, window + sinks)`` tokens; state-space layers a fixed state per sequence
  (``SSMConfig.state_elements / tp`` at the KV bits), linear-attention layers theirs
  (``LinearAttentionConfig.state_elements / tp``). With ``n`` sequences per request
  (parallel samples, beams) the prompt's KV is stored once: ``n kept - (n - 1) shared``
  tokens per layer, ``shared = clip(kept - output, 0, input)``, and ``n`` states.
- activations: the largest per-layer working set of a prefill chunk
  ``T (2 h + widest intermediate) * bits_a/8`` plus fp32 logits ``B/ep * vocab/tp * 4``,
  and for MLA prefill the decompressed K/V of the attended context.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .inputs import GridInputs
from .model import ModelConfig
from .op_terms import Array, elementwise_max
from .params import ffn_matrices, lora_params, parameter_count

EXPERT_GROUPS = ("experts",)


def weight_bytes_per_device(
    model: ModelConfig, group_bits: Mapping[str, Array], tp: Array, ep: Array, pp: Array
) -> Array:
    """Resident weight bytes on one device (LoRA adapters included, sharded by tp)."""
    groups = parameter_count(model).by_group
    sharded = sum(
        groups[name] * group_bits[name] / 8 for name in groups if name not in EXPERT_GROUPS
    )
    for name, params in lora_params(model).items():
        sharded = sharded + params * group_bits[name] / 8
    experts = sum(groups[name] * group_bits[name] / 8 for name in EXPERT_GROUPS)
    return (sharded / tp + experts / (tp * ep)) / pp


def kv_elements_per_token_per_device(model: ModelConfig, tp: Array) -> Array:
    """KV-cache elements per token per layer held by one device."""
    if model.is_mla:
        return float(model.kv_elements_per_token_per_layer) + 0.0 * tp  # tp's shape
    return 2.0 * elementwise_max(model.num_kv_heads / tp, 1.0) * model.head_dim


def kv_cache_bytes_per_device(
    model: ModelConfig,
    batch: Array,
    context: Array,
    kv_bits: Array,
    tp: Array,
    ep: Array,
    pp: Array,
    *,
    sequences_per_request: Array | float = 1.0,
    output_tokens: Array | float = 0.0,
) -> Array:
    """KV-cache (and SSM-state) bytes on one device at ``context`` tokens per sequence
    for ``batch`` requests of ``sequences_per_request`` sequences each, which share the
    ``context - output_tokens`` prompt tokens (module doc)."""
    n = sequences_per_request
    prompt = context - output_tokens

    def stored(kept: Array) -> Array:
        if isinstance(n, float) and n == 1.0:
            return kept
        shared = np.clip(kept - output_tokens, 0.0, prompt)
        return n * kept - (n - 1.0) * shared

    tokens = model.num_full_attention_layers * stored(context)
    if model.num_window_layers:
        kept = np.minimum(context, float(model.kept_window_tokens))
        tokens = tokens + model.num_window_layers * stored(kept)
    per_token = kv_elements_per_token_per_device(model, tp) * kv_bits / 8
    total = batch / ep * tokens / pp * per_token
    if model.ssm is not None and model.num_ssm_layers:
        state = model.ssm.state_elements / tp * kv_bits / 8
        total = total + batch / ep * n * model.num_ssm_layers / pp * state
    if model.linear_attention is not None and model.num_linear_layers:
        state = model.linear_attention.state_elements / tp * kv_bits / 8
        total = total + batch / ep * n * model.num_linear_layers / pp * state
    return total


def activation_bytes_per_device(
    model: ModelConfig,
    batch: Array,
    chunk_tokens: Array,
    context: Array,
    activation_bits: Array,
    tp: Array,
    ep: Array,
) -> Array:
    """Peak activation working set of one prefill chunk on one device."""
    seqs = batch / ep
    tokens = seqs * chunk_tokens
    widths = [
        (ffn_matrices(model) - 1) * model.intermediate_size,
        (model.num_heads + 2 * model.num_kv_heads) * model.head_dim,
    ]
    if model.ssm is not None and model.num_ssm_layers:
        widths.append(model.ssm.in_proj_width)
    if model.linear_attention is not None and model.num_linear_layers:
        widths.append(model.linear_attention.in_proj_width)
    if model.is_moe:
        widths.append(
            model.experts_per_token * (ffn_matrices(model) - 1) * model.moe_intermediate_size
        )
    working = tokens * (2 * model.hidden_size + max(widths) / tp) * activation_bits / 8
    logits = seqs * model.vocab_size / tp * 4.0
    if model.is_mla:
        heads = model.num_heads / tp
        width = model.qk_nope_head_dim + model.qk_rope_head_dim + model.v_head_dim
        working = working + seqs * context * heads * width * activation_bits / 8
    return working + logits


def footprint_arrays(model: ModelConfig, inputs: GridInputs) -> dict[str, Array]:
    """Per-device ``weights_bytes``, ``kv_cache_bytes`` (at the final context) and
    ``activation_bytes`` (one prefill chunk) for every scenario in ``inputs``."""
    chunks = np.ceil(inputs.input_tokens / inputs.chunk)
    return {
        "weights_bytes": weight_bytes_per_device(
            model, inputs.weight_bits, inputs.tp, inputs.ep, inputs.pp
        ),
        "kv_cache_bytes": kv_cache_bytes_per_device(
            model,
            inputs.batch,
            inputs.input_tokens + inputs.output_tokens,
            inputs.kv_bits,
            inputs.tp,
            inputs.ep,
            inputs.pp,
            sequences_per_request=inputs.sequences_per_request,
            output_tokens=inputs.output_tokens,
        ),
        "activation_bytes": activation_bytes_per_device(
            model,
            inputs.batch,
            inputs.input_tokens / chunks,
            inputs.input_tokens,
            inputs.activation_bits,
            inputs.tp,
            inputs.ep,
        ),
    }
