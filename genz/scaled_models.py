"""Models that do not exist yet: scale a preset ("project forward") or swap its attention.

- `scale_model` grows width and depth together so total parameters move by
  ``params_scale`` (at the original expert count), and multiplies the routed
  expert count by ``experts_scale``. Context is a property of the workload (the
  use case's tokens), not of the model.
- `with_gqa` / `with_mla` build the twin of a model with the other attention
  (same width, depth, heads, FFN and experts), so GQA and MLA compare at nearly
  the same parameter count.
- `model_from_spec` reads ``"name"``, ``"name+gqa"`` or ``"name+mla"`` (CLI and notebook).
"""

from __future__ import annotations

import dataclasses
import math

from roofline import InputError, require_positive

from .hf_config import load_model
from .layer_kinds import FULL, WINDOW
from .model import ModelConfig, with_num_layers
from .params import parameter_count

#: Widths (hidden, FFN) are rounded to multiples of this many elements.
WIDTH_QUANTUM = 256
#: Default MLA twin: DeepSeek-V2/V3 latent and decoupled-RoPE widths.
MLA_KV_LORA_RANK = 512
MLA_ROPE_HEAD_DIM = 64
#: Default GQA twin: KV heads of Llama 3 70B/405B.
GQA_KV_HEADS = 8
VARIANTS = ("gqa", "mla")


def _round_to(value: float, quantum: int) -> int:
    return max(quantum, round(value / quantum) * quantum)


def scale_model(
    model: ModelConfig,
    params_scale: float = 1.0,
    experts_scale: float = 1.0,
    name: str | None = None,
) -> ModelConfig:
    """A consistent `ModelConfig` with about ``params_scale`` x the parameters.

    Width is scaled by ``params_scale ** (1/3)`` (attention heads by the same
    factor, rounded to a multiple of the KV heads so GQA groups still divide, or
    of 8 for MHA and MLA; head width kept), FFN and expert widths by the same factor (rounded to
    `WIDTH_QUANTUM`), and then the layer count is chosen to bring total
    parameters (at the original expert count) closest to ``params_scale`` x the
    original. The MLA latent rank and RoPE width are kept (they set the KV
    cache, a design choice); the MLA query rank scales with width. ``experts_scale``
    then multiplies the routed experts (top-k kept, at least top-k experts).
    Vocabulary and leading dense layers are kept.

    Parameters
    ----------
    params_scale
        Target ratio of total parameters at the original expert count, > 0.
    experts_scale
        Ratio of routed experts (MoE models only), > 0.
    """
    require_positive("params_scale", params_scale)
    require_positive("experts_scale", experts_scale)
    if experts_scale != 1.0 and not model.is_moe:
        raise InputError(f"experts_scale needs a MoE model; {model.name} is dense")
    width = params_scale ** (1 / 3)
    shared_kv = model.num_kv_heads == model.num_heads  # MHA, or MLA (one latent per token)
    group = math.gcd(model.num_heads, 8) if shared_kv else model.num_kv_heads
    heads = max(group, round(model.num_heads * width / group) * group)
    head_ratio = heads / model.num_heads
    if model.shared_block is not None:  # Zamba2: heads x head width = 2h, width kept
        hidden = heads * model.head_dim // 2
    elif model.hidden_size == model.num_heads * model.head_dim:
        hidden = heads * model.head_dim
    else:
        hidden = _round_to(model.hidden_size * head_ratio, WIDTH_QUANTUM)
    factor = hidden / model.hidden_size
    widened = dataclasses.replace(
        model,
        name=name or _scaled_name(model, params_scale, experts_scale),
        hidden_size=hidden,
        num_heads=heads,
        num_kv_heads=heads if shared_kv else model.num_kv_heads,
        intermediate_size=_round_to(model.intermediate_size * factor, WIDTH_QUANTUM)
        if model.intermediate_size
        else 0,
        moe_intermediate_size=_round_to(model.moe_intermediate_size * factor, WIDTH_QUANTUM)
        if model.is_moe
        else 0,
        q_lora_rank=_round_to(model.q_lora_rank * factor, 64) if model.q_lora_rank else 0,
        published_params=None,
        published_active_params=None,
        source=f"scale_model({model.name}, params_scale={params_scale:g}, "
        f"experts_scale={experts_scale:g})",
    )
    target = params_scale * parameter_count(model).total
    layers = _layers_for(widened, target)
    scaled = with_num_layers(widened, layers)
    if model.is_moe and experts_scale != 1.0:
        experts = max(model.experts_per_token, round(model.num_experts * experts_scale))
        scaled = dataclasses.replace(scaled, num_experts=experts)
    return scaled


def _layers_for(model: ModelConfig, target_params: float) -> int:
    """Layer count (>= dense prefix + 1) whose total parameters are closest to the target."""
    low = model.first_dense_layers + 1
    base = parameter_count(with_num_layers(model, low)).total
    step = parameter_count(with_num_layers(model, low + 1)).total - base
    layers = low + max(0, round((target_params - base) / step))
    return int(layers)


def _scaled_name(model: ModelConfig, params_scale: float, experts_scale: float) -> str:
    parts = [model.name]
    if params_scale != 1.0:
        parts.append(f"x{params_scale:g} params")
    if experts_scale != 1.0:
        parts.append(f"x{experts_scale:g} experts")
    return " ".join(parts)


def with_gqa(model: ModelConfig, num_kv_heads: int = GQA_KV_HEADS) -> ModelConfig:
    """The GQA twin of ``model``: same heads, ``num_kv_heads`` K/V heads, no latent.

    From MLA the head width is the value head width (DeepSeek-V3: 128), the
    query is full rank. A GQA model is returned with its KV heads changed.
    """
    kv_heads = math.gcd(model.num_heads, num_kv_heads)
    head_dim = model.v_head_dim if model.is_mla else model.head_dim
    return dataclasses.replace(
        model,
        name=f"{model.name} (GQA {kv_heads} KV heads)",
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        kv_lora_rank=0,
        q_lora_rank=0,
        qk_rope_head_dim=0,
        qk_nope_head_dim=0,
        v_head_dim=0,
        published_params=None,
        published_active_params=None,
        source=f"with_gqa({model.name}, num_kv_heads={kv_heads})",
    )


def with_mla(
    model: ModelConfig,
    kv_lora_rank: int = MLA_KV_LORA_RANK,
    rope_head_dim: int = MLA_ROPE_HEAD_DIM,
) -> ModelConfig:
    """The MLA twin of ``model``: a ``kv_lora_rank + rope_head_dim`` latent per token.

    Query and value heads keep the model's head width (the no-RoPE part of the
    query-key width); the query is full rank. Attention gets slightly more
    parameters than GQA (Llama 3.1 70B: +3 %).
    """
    if model.is_mla:
        return model
    return dataclasses.replace(
        model,
        name=f"{model.name} (MLA rank {kv_lora_rank})",
        num_kv_heads=model.num_heads,
        kv_lora_rank=kv_lora_rank,
        q_lora_rank=0,
        qk_rope_head_dim=rope_head_dim,
        qk_nope_head_dim=model.head_dim,
        v_head_dim=model.head_dim,
        published_params=None,
        published_active_params=None,
        source=f"with_mla({model.name}, kv_lora_rank={kv_lora_rank})",
    )


def with_sliding_window(
    model: ModelConfig, window: int, *, flag: str = "sliding_window"
) -> ModelConfig:
    """``model`` with attention window ``window`` tokens: its windowed layers take the new
    window; a model without one has every attention layer windowed (Mistral-style).
    0 makes every attention layer full. A window longer than the model's context
    (``max_position_embeddings``) is rejected, naming ``flag``."""
    limit = model.max_context or 100_000_000
    if isinstance(window, bool) or not isinstance(window, int) or not 0 <= window <= limit:
        raise InputError(
            f"{flag} must be an integer in [0, {limit}] (0: full attention; at most the "
            f"{model.name} context length), got {window!r}"
        )
    if not model.num_attention_layers:
        raise InputError(f"{flag}: {model.name} has no attention layers to window")
    if model.shared_block is not None:
        raise InputError(
            f"{flag}: windowed attention in shared transformer blocks (Zamba2) is not modelled"
        )
    kinds = model.layer_types or (FULL,) * model.num_layers
    if window == 0:
        kinds = tuple(FULL if kind == WINDOW else kind for kind in kinds)
    elif WINDOW not in kinds:
        kinds = tuple(WINDOW if kind == FULL else kind for kind in kinds)
    return dataclasses.replace(
        model,
        sliding_window=window,
        layer_types=kinds if set(kinds) != {FULL} else (),
        attention_sink_tokens=model.attention_sink_tokens if window else 0,
        name=f"{model.name} (window {window})" if window else f"{model.name} (full attention)",
    )


def model_from_spec(spec: str) -> ModelConfig:
    """Load ``"name"``, ``"name+gqa"`` or ``"name+mla"`` (preset or config.json path)."""
    base, _, variant = spec.partition("+")
    model = load_model(base)
    if not variant:
        return model
    if variant == "gqa":
        return with_gqa(model)
    if variant == "mla":
        return with_mla(model)
    raise InputError(
        f"unknown model variant {variant!r} in {spec!r}; accepted: {', '.join(VARIANTS)}"
    )
