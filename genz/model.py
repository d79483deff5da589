"""LLM architectures: a frozen description of one decoder (and its optional vision tower).

Covers dense MHA/GQA/MQA, MLA (DeepSeek-style latent KV), MoE (routed + shared
experts, top-k, leading dense layers), gated (SwiGLU) or plain FFNs, tied or
untied embeddings, sliding-window and alternating local/global attention, and
Mamba / Mamba-2 state-space layers alone or interleaved with attention
(`genz.layer_kinds`), Gated DeltaNet linear-attention layers (`genz.linear_attention`),
gated (Qwen3-Next) attention output, plus batched LoRA adapters. `genz.hf_config` builds one from a
Hugging Face ``config.json``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from roofline import InputError

from .layer_kinds import FULL, LAYER_KINDS, LINEAR, MLP, PARALLEL, SHARED, SSM, WINDOW, SSMConfig
from .linear_attention import LinearAttentionConfig
from .shared_block import SharedBlockConfig
from .vision import VisionConfig


@dataclass(frozen=True)
class ModelConfig:
    """An LLM architecture. Counts are integers; ``head_dim`` is per attention head.

    MoE: ``num_experts`` > 0 routed experts of ``moe_intermediate_size`` each,
    ``experts_per_token`` chosen per token, ``num_shared_experts`` always active;
    the first ``first_dense_layers`` layers (and layers off ``moe_layer_freq``) are dense.
    MLA: ``kv_lora_rank`` > 0 caches a latent of ``kv_lora_rank + qk_rope_head_dim``
    per token per layer instead of K and V.
    Layers: ``layer_types`` names each layer's token mixer (`genz.layer_kinds.LAYER_KINDS`;
    empty: all full attention); windowed layers attend to the last ``sliding_window``
    tokens plus ``attention_sink_tokens`` kept from the start; ``ssm`` describes the
    state-space layers, ``linear_attention`` the Gated DeltaNet layers (a fixed state per
    sequence, no KV cache). ``attention_output_gate``: the attention's q projection also
    yields a per-channel sigmoid gate of its output (Qwen3-Next), doubling its width.
    ``ffn_on_mixer_layers`` False (Nemotron-H): each layer holds one sublayer, a token
    mixer or (``mlp`` layers) an FFN. ``intermediate_size`` 0 with no experts: no FFN (pure Mamba).
    ``shared_block`` (Zamba2, `genz.shared_block`): the ``shared_attention`` layers run a
    shared transformer block (attention over a 2h-wide input, ``head_dim`` 2h / heads,
    and the FFN) before their Mamba-2 mixer; its weights are stored ``num_blocks`` times,
    not once per invocation.
    """

    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    gated_ffn: bool = True
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    num_experts: int = 0
    experts_per_token: int = 0
    num_shared_experts: int = 0
    moe_intermediate_size: int = 0
    first_dense_layers: int = 0
    moe_layer_freq: int = 1
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    #: Multi-token-prediction modules (DeepSeek-V3 ``num_nextn_predict_layers``), outside
    #: the main model's layers and parameter count; `genz.mtp_draft` drafts with them.
    mtp_layers: int = 0
    max_context: int = 0
    sliding_window: int = 0
    attention_sink_tokens: int = 0
    layer_types: tuple[str, ...] = ()
    ssm: SSMConfig | None = None
    linear_attention: LinearAttentionConfig | None = None
    shared_block: SharedBlockConfig | None = None
    attention_output_gate: bool = False
    ffn_on_mixer_layers: bool = True
    moe_layer_offset: int = 0
    norms_per_layer: int = 2
    lora_rank: int = 0
    lora_adapters: int = 0
    lora_targets: tuple[str, ...] = ()
    vision: VisionConfig | None = None
    default_weight_bits: float = 16.0
    published_params: float | None = None
    published_active_params: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        for label in (
            "hidden_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "head_dim",
            "vocab_size",
        ):
            require_int(label, getattr(self, label), minimum=1)
        require_int("intermediate_size", self.intermediate_size, minimum=0)
        if self.num_heads % self.num_kv_heads:
            raise InputError(
                f"num_attention_heads ({self.num_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_kv_heads})"
            )
        for label in (
            "num_experts",
            "experts_per_token",
            "num_shared_experts",
            "moe_intermediate_size",
            "first_dense_layers",
            "kv_lora_rank",
            "q_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "v_head_dim",
            "mtp_layers",
            "max_context",
            "sliding_window",
            "attention_sink_tokens",
            "moe_layer_offset",
            "norms_per_layer",
        ):
            require_int(label, getattr(self, label), minimum=0)
        self._check_layers()
        require_int("moe_layer_freq", self.moe_layer_freq, minimum=1)
        if self.is_moe:
            if not 1 <= self.experts_per_token <= self.num_experts:
                raise InputError(
                    f"num_experts_per_tok must be in [1, {self.num_experts}], got {self.experts_per_token}"
                )
            if self.moe_intermediate_size < 1:
                raise InputError("moe_intermediate_size must be >= 1 for a MoE model")
        if self.is_mla and (self.qk_nope_head_dim < 1 or self.v_head_dim < 1):
            raise InputError("MLA needs qk_nope_head_dim >= 1 and v_head_dim >= 1")
        if not 0 < self.default_weight_bits <= 32:
            raise InputError(f"_weight_bits must be in (0, 32], got {self.default_weight_bits}")

    def _check_layers(self) -> None:
        if self.layer_types and len(self.layer_types) != self.num_layers:
            raise InputError(
                f"layer_types must name {self.num_layers} layers, got {len(self.layer_types)}"
            )
        unknown = sorted(set(self.layer_types) - set(LAYER_KINDS))
        if unknown:
            raise InputError(
                f"layer_types: unknown kind {unknown[0]!r}; accepted: {', '.join(LAYER_KINDS)}"
            )
        if self.shared_block is None and SHARED in self.layer_types:
            raise InputError(f"{SHARED} layers need a shared_block description (Zamba2)")
        if self.shared_block is not None and (
            self.ffn_on_mixer_layers
            or self.is_moe
            or self.is_mla
            or self.num_window_layers
            or self.num_heads * self.head_dim != 2 * self.hidden_size
        ):
            raise InputError(
                "a shared-block (Zamba2) model needs ffn_on_mixer_layers False, no experts, "
                "no MLA, no windowed layers and num_heads x head_dim = 2 x hidden_size"
            )
        if self.num_mlp_layers and self.ffn_on_mixer_layers:
            raise InputError(
                "mlp layers (an FFN without a token mixer) need ffn_on_mixer_layers False"
            )
        if not self.ffn_on_mixer_layers and self.is_moe:
            raise InputError(
                "MoE layers in a one-sublayer-per-layer (Nemotron-H) stack are not modelled"
            )
        if self.num_window_layers and not self.sliding_window:
            raise InputError("sliding_window must be >= 1 when some layers are sliding_attention")
        if self.num_ssm_layers and self.ssm is None:
            raise InputError("state-space layers need an SSM description (ssm)")
        if self.num_linear_layers and self.linear_attention is None:
            raise InputError(
                "linear_attention layers need their shapes (linear_num_key_heads, "
                "linear_num_value_heads, linear_key_head_dim, linear_value_head_dim, "
                "linear_conv_kernel_dim)"
            )
        if self.is_mla and self.num_window_layers:
            raise InputError("sliding-window MLA layers are not modelled")
        if self.lora_rank:
            _check_lora(self)

    def layer_kind(self, layer: int) -> str:
        """Token mixer of ``layer`` (0-based): 'full_attention', 'sliding_attention',
        'mamba', 'linear_attention', 'mlp' (none), 'hybrid' (attention and Mamba-2)."""
        return self.layer_types[layer] if self.layer_types else FULL

    @cached_property
    def num_window_layers(self) -> int:
        """Sliding-window attention layers."""
        return sum(1 for kind in self.layer_types if kind == WINDOW)

    @cached_property
    def num_ssm_layers(self) -> int:
        """Layers with a state-space (Mamba) mixer, alone or beside attention."""
        return sum(1 for kind in self.layer_types if kind in (SSM, PARALLEL, SHARED))

    @cached_property
    def num_parallel_layers(self) -> int:
        """Layers running attention and a Mamba-2 mixer side by side (Falcon-H1): they
        count as attention layers and as state-space layers."""
        return sum(1 for kind in self.layer_types if kind == PARALLEL)

    @cached_property
    def num_shared_layers(self) -> int:
        """Layers that invoke a shared transformer block before their Mamba-2 mixer
        (Zamba2): they count as attention layers (each invocation keeps its own KV
        cache), as state-space layers and as FFN layers."""
        return sum(1 for kind in self.layer_types if kind == SHARED)

    @property
    def attention_input_size(self) -> int:
        """Width of the attention blocks' input: 2h for Zamba2's shared blocks (hidden
        state and original embedding concatenated), h otherwise."""
        return 2 * self.hidden_size if self.shared_block is not None else self.hidden_size

    @cached_property
    def num_linear_layers(self) -> int:
        """Gated DeltaNet linear-attention layers."""
        return sum(1 for kind in self.layer_types if kind == LINEAR)

    @cached_property
    def num_mlp_layers(self) -> int:
        """Layers with an FFN and no token mixer (Nemotron-H's ``-``)."""
        return sum(1 for kind in self.layer_types if kind == MLP)

    @property
    def num_state_layers(self) -> int:
        """Layers that keep a fixed state per sequence (SSM and linear attention)."""
        return self.num_ssm_layers + self.num_linear_layers

    @property
    def num_attention_layers(self) -> int:
        """Layers with softmax attention, full or windowed (they keep a KV cache)."""
        ssm_only = self.num_ssm_layers - self.num_parallel_layers - self.num_shared_layers
        return self.num_layers - ssm_only - self.num_linear_layers - self.num_mlp_layers

    @property
    def num_full_attention_layers(self) -> int:
        """Layers with full (global) causal attention."""
        return self.num_attention_layers - self.num_window_layers

    @property
    def kept_window_tokens(self) -> int:
        """KV tokens a windowed layer keeps at long context: window plus sink tokens."""
        return self.sliding_window + self.attention_sink_tokens

    @property
    def has_ffn(self) -> bool:
        """False for pure state-space models (Mamba blocks have no MLP)."""
        return self.intermediate_size > 0 or self.is_moe

    @property
    def is_moe(self) -> bool:
        """True when some layers route tokens to experts."""
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        """True for multi-head latent attention (compressed KV)."""
        return self.kv_lora_rank > 0

    def is_moe_layer(self, layer: int) -> bool:
        """True when ``layer`` (0-based) has a mixture-of-experts FFN."""
        return (
            self.is_moe
            and layer >= self.first_dense_layers
            and (layer - self.moe_layer_offset) % self.moe_layer_freq == 0
        )

    @cached_property
    def num_moe_layers(self) -> int:
        """Layers whose FFN is a mixture of experts (counted once per config)."""
        return sum(1 for layer in range(self.num_layers) if self.is_moe_layer(layer))

    @property
    def num_dense_layers(self) -> int:
        """Layers with a dense FFN (0 without an FFN; only the ``mlp`` layers and the
        shared-block invocations when ``ffn_on_mixer_layers`` is False)."""
        if not self.has_ffn:
            return 0
        if self.ffn_on_mixer_layers:
            ffn_layers = self.num_layers
        else:
            ffn_layers = self.num_mlp_layers + self.num_shared_layers
        return ffn_layers - self.num_moe_layers

    @property
    def attention_type(self) -> str:
        """'MLA', 'MHA', 'MQA' or 'GQA', with '+SWA' when some layers are windowed and
        '+SSM' when some are state-space layers, '+LA' when some are linear attention;
        'SSM' or 'LA' without softmax-attention layers."""
        if not self.num_attention_layers:
            return "LA" if self.num_linear_layers and not self.num_ssm_layers else "SSM"
        if self.is_mla:
            base = "MLA"
        elif self.num_kv_heads == self.num_heads:
            base = "MHA"
        else:
            base = "MQA" if self.num_kv_heads == 1 else "GQA"
        return (
            base
            + ("+SWA" if self.num_window_layers else "")
            + ("+SSM" if self.num_ssm_layers else "")
            + ("+LA" if self.num_linear_layers else "")
        )

    @property
    def kv_elements_per_token_per_layer(self) -> int:
        """KV-cache elements stored per token per layer (K and V, or the MLA latent)."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim


#: Projections a LoRA adapter can target: the attention (or SSM) input projections, the
#: attention output projection, the dense FFN matrices.
LORA_TARGETS = ("qkv", "o", "ffn")


def _check_lora(model: ModelConfig) -> None:
    if model.lora_rank > model.hidden_size:
        raise InputError(
            f"--lora-rank must be in [1, {model.hidden_size}] (hidden size of {model.name}), "
            f"got {model.lora_rank}"
        )
    if model.lora_adapters < 1:
        raise InputError(f"--lora-adapters must be >= 1, got {model.lora_adapters}")
    unknown = sorted(set(model.lora_targets) - set(LORA_TARGETS))
    if unknown or not model.lora_targets:
        raise InputError(
            f"--lora-targets: unknown target {unknown[0] if unknown else ''!r}; accepted: "
            f"{', '.join(LORA_TARGETS)}"
        )
    if model.is_mla:
        raise InputError("--lora-rank: LoRA on MLA attention is not modelled")
    if model.shared_block is not None:
        raise InputError("--lora-rank: LoRA on shared transformer blocks (Zamba2) is not modelled")


def with_lora(
    model: ModelConfig, rank: int, adapters: int = 1, targets: tuple[str, ...] = ("qkv", "o")
) -> ModelConfig:
    """``model`` serving ``adapters`` LoRA adapters of rank ``rank`` on ``targets``
    (`LORA_TARGETS`), batched across requests (S-LoRA / Punica)."""
    if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= model.hidden_size:
        raise InputError(
            f"--lora-rank must be an integer in [1, {model.hidden_size}] (hidden size of "
            f"{model.name}), got {rank!r}"
        )
    return dataclasses.replace(
        model,
        lora_rank=rank,
        lora_adapters=adapters,
        lora_targets=tuple(targets),
        name=f"{model.name} + {adapters} LoRA r{rank}",
    )


def with_num_layers(model: ModelConfig, layers: int) -> ModelConfig:
    """``model`` with ``layers`` layers, its layer-kind pattern repeated cyclically."""
    kinds = model.layer_types
    resized = tuple(kinds[i % len(kinds)] for i in range(layers)) if kinds else ()
    return dataclasses.replace(model, num_layers=layers, layer_types=resized)


def require_int(label: str, value: Any, minimum: int) -> None:
    """Raise `InputError` unless ``value`` is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{label} must be an integer >= {minimum}, got {value!r}")
