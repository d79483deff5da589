"""LLM architectures: a frozen description read from a Hugging Face ``config.json``.

Covers dense MHA/GQA/MQA, MLA (DeepSeek-style latent KV), MoE (routed + shared
experts, top-k, leading dense layers), gated (SwiGLU) or plain FFNs, tied or
untied embeddings, sliding-window and alternating local/global attention, and
Mamba / Mamba-2 state-space layers alone or interleaved with attention
(`genz.layer_kinds`). Keys starting with ``_`` are ours (display name, source,
published parameter counts, default weight bits).
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from roofline import (
    CONFIG_BOUNDS,
    InputError,
    data_dir,
    is_preset_file,
    load_user_document,
    names_a_path,
    unknown_name,
)

from .layer_kinds import (
    FULL,
    PURE_SSM_TYPES,
    SSM,
    WINDOW,
    SSMConfig,
    layer_kinds_from_config,
    ssm_from_config,
    window_from_config,
)
from .vision import VisionConfig, vision_from_config

logger = logging.getLogger(__name__)

MAX_CONFIG_BYTES = 1_000_000

#: Hugging Face keys this loader reads.
USED_KEYS = {
    "architectures",
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "tie_word_embeddings",
    "hidden_act",
    "max_position_embeddings",
    "attention_bias",
    "num_local_experts",
    "n_routed_experts",
    "num_experts",
    "num_experts_per_tok",
    "n_shared_experts",
    "moe_intermediate_size",
    "first_k_dense_replace",
    "moe_layer_freq",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "sliding_window",
    "layer_types",
}
#: Keys of windows and state-space layers (`genz.layer_kinds`), read but not used to
#: spot misspellings (several are short, generic names: ``expand``, ``num_heads``).
LAYER_KIND_KEYS = {
    "sliding_window",
    "use_sliding_window",
    "layer_types",
    "sliding_window_pattern",
    "attention_sink_tokens",
    # state-space layers (Mamba / Mamba-2) and hybrids
    "state_size",
    "expand",
    "conv_kernel",
    "time_step_rank",
    "n_groups",
    "num_heads",
    "head_dim",
    "mamba_d_state",
    "mamba_d_conv",
    "mamba_expand",
    "mamba_dt_rank",
    "mamba_n_heads",
    "mamba_d_head",
    "mamba_n_groups",
    "attn_layer_period",
    "attn_layer_offset",
    "attn_layer_indices",
    "expert_layer_period",
    "expert_layer_offset",
}
OUR_KEYS = {
    "_name",
    "_source",
    "_published_params",
    "_published_params_source",
    "_published_active_params",
    "_published_params_rounding",
    "_weight_bits",
    "_gated_ffn",
    "_notes",
}
#: Architectures whose FFN is gated (SwiGLU-style: gate, up and down matrices).
GATED_ARCHITECTURES = (
    "Llama",
    "Mistral",
    "Mixtral",
    "Qwen2",
    "Qwen3",
    "Deepseek",
    "BitNet",
    "Gemma",
    "Phi3",
)
#: Architectures with a bias on the q, k and v projections.
QKV_BIAS_MODEL_TYPES = ("qwen2",)
#: Norm weight vectors per layer where not 2 (pre-attention and pre-FFN): Gemma-2/3
#: add post-attention and post-FFN norms.
NORMS_PER_LAYER = {"gemma2": 4, "gemma3": 4, "gemma3_text": 4}


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
    state-space layers. ``intermediate_size`` 0 with no experts: no FFN (pure Mamba).
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
    max_context: int = 0
    sliding_window: int = 0
    attention_sink_tokens: int = 0
    layer_types: tuple[str, ...] = ()
    ssm: SSMConfig | None = None
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
            _require_int(label, getattr(self, label), minimum=1)
        _require_int("intermediate_size", self.intermediate_size, minimum=0)
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
            "max_context",
            "sliding_window",
            "attention_sink_tokens",
            "moe_layer_offset",
            "norms_per_layer",
        ):
            _require_int(label, getattr(self, label), minimum=0)
        self._check_layers()
        _require_int("moe_layer_freq", self.moe_layer_freq, minimum=1)
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
        unknown = sorted(set(self.layer_types) - {FULL, WINDOW, SSM})
        if unknown:
            raise InputError(
                f"layer_types: unknown kind {unknown[0]!r}; accepted: {FULL}, {WINDOW}, {SSM}"
            )
        if self.num_window_layers and not self.sliding_window:
            raise InputError("sliding_window must be >= 1 when some layers are sliding_attention")
        if self.num_ssm_layers and self.ssm is None:
            raise InputError("state-space layers need an SSM description (ssm)")
        if self.is_mla and self.num_window_layers:
            raise InputError("sliding-window MLA layers are not modelled")
        if self.lora_rank:
            _check_lora(self)

    def layer_kind(self, layer: int) -> str:
        """Token mixer of ``layer`` (0-based): 'full_attention', 'sliding_attention', 'mamba'."""
        return self.layer_types[layer] if self.layer_types else FULL

    @cached_property
    def num_window_layers(self) -> int:
        """Sliding-window attention layers."""
        return sum(1 for kind in self.layer_types if kind == WINDOW)

    @cached_property
    def num_ssm_layers(self) -> int:
        """State-space (Mamba) layers."""
        return sum(1 for kind in self.layer_types if kind == SSM)

    @property
    def num_attention_layers(self) -> int:
        """Layers with attention, full or windowed."""
        return self.num_layers - self.num_ssm_layers

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
        """Layers with a dense FFN (0 without an FFN)."""
        return self.num_layers - self.num_moe_layers if self.has_ffn else 0

    @property
    def attention_type(self) -> str:
        """'MLA', 'MHA', 'MQA' or 'GQA', with '+SWA' when some layers are windowed and
        '+SSM' when some are state-space layers; 'SSM' without attention layers."""
        if not self.num_attention_layers:
            return "SSM"
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


def _require_int(label: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{label} must be an integer >= {minimum}, got {value!r}")


def models_dir() -> Path:
    """Folder of the shipped model presets."""
    return data_dir() / "models"


def list_models() -> list[str]:
    """Names of the shipped model presets, sorted."""
    return sorted(path.stem for path in models_dir().glob("*.json"))


def load_model(name_or_path: str | Path) -> ModelConfig:
    """Load a preset by name (``'llama-3.1-8b'``) or a ``config.json`` by path."""
    path = Path(name_or_path)
    if not names_a_path(name_or_path, (".json",)):
        path = models_dir() / f"{str(name_or_path).lower()}.json"
        if not is_preset_file(path):
            raise unknown_name(
                "model", str(name_or_path), list_models(), "or a path to a config.json"
            )
    document = load_user_document(path, kind="config.json", max_bytes=MAX_CONFIG_BYTES, fmt="json")
    return model_from_hf_config(document, default_name=path.stem, origin=str(path))


def model_from_hf_config(
    config: Any, default_name: str = "custom", origin: str = "<config>"
) -> ModelConfig:
    """Build a `ModelConfig` from a Hugging Face ``config.json`` mapping.

    Keys this loader does not use are ignored (HF configs carry many), except
    keys that look like a misspelling of a used key, which are rejected by name.
    """
    if not isinstance(config, dict):
        raise InputError(f"{origin}: expected a JSON object at top level")
    vision = None
    if isinstance(config.get("text_config"), dict) and "vision_config" in config:
        # LLaVA-style VLM: the decoder under text_config (our keys stay at the top).
        ours = {key: value for key, value in config.items() if key.startswith("_")}
        text = config["text_config"]
        if "hidden_size" not in text:
            raise InputError(f"{origin}: text_config is missing 'hidden_size'")
        vision = vision_from_config(config, text["hidden_size"], origin)
        config = {**text, **ours}
    _reject_misspellings(config, origin)
    config = _checked(config, origin)
    architectures = config.get("architectures") or []
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise InputError(
            f"{origin}: architectures must be a list of names, got {architectures!r:.60}"
        )
    model_type = str(config.get("model_type", ""))
    architecture = " ".join(config.get("architectures") or [])
    pure_ssm = model_type in PURE_SSM_TYPES
    required = ["hidden_size", "num_hidden_layers", "vocab_size"]
    if not pure_ssm:
        required[2:2] = ["num_attention_heads", "intermediate_size"]
    missing = [key for key in required if config.get(key) is None]  # absent or null
    if missing:
        kind = f" ({architecture or model_type})" if architecture or model_type else ""
        raise InputError(
            f"{origin}{kind}: missing required key{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(key) for key in missing)}"
        )
    hidden = config["hidden_size"]
    if pure_ssm:  # one placeholder head: no attention layer uses it
        config = {**config, "num_attention_heads": 1, "num_key_value_heads": 1}
        config.update(head_dim=hidden, intermediate_size=0)
    heads = config["num_attention_heads"]
    gated = config.get("_gated_ffn")
    if gated is None:
        gated = any(tag in architecture for tag in GATED_ARCHITECTURES) or config.get(
            "hidden_act"
        ) in ("silu", "swiglu")
    num_experts = (
        config.get("num_local_experts")
        or config.get("n_routed_experts")
        or config.get("num_experts")
        or 0
    )
    intermediate = config["intermediate_size"]
    try:
        head_dim = config.get("head_dim") or hidden // heads  # absent (None): hidden / heads
    except TypeError:
        raise InputError(
            f"{origin}: hidden_size and num_attention_heads must be integers"
        ) from None
    if num_experts == 0 and config.get("num_experts_per_tok"):
        raise InputError(
            f"{origin}: num_experts_per_tok is {config['num_experts_per_tok']} but the config "
            "has no routed experts (num_local_experts / n_routed_experts / num_experts >= 1)"
        )
    if hidden // heads < 1 and config.get("head_dim") is None:
        raise InputError(
            f"{origin}: hidden_size ({hidden}) must be >= num_attention_heads ({heads}) "
            "unless head_dim is given"
        )
    num_layers = config["num_hidden_layers"]
    _require_int("num_layers", num_layers, minimum=1)
    _require_int("hidden_size", hidden, minimum=1)
    window = window_from_config(config, origin)
    ssm = ssm_from_config(config, origin)
    kinds = layer_kinds_from_config(config, num_layers, window, ssm, origin)
    if WINDOW not in kinds:
        window = 0
    if SSM not in kinds:
        ssm = None
    norms = 1 if pure_ssm else NORMS_PER_LAYER.get(model_type, 2)
    return _in_file(
        origin,
        ModelConfig,
        name=str(config.get("_name", default_name)),
        hidden_size=hidden,
        num_layers=num_layers,
        num_heads=heads,
        num_kv_heads=config.get("num_key_value_heads") or heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=config["vocab_size"],
        gated_ffn=bool(gated),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
        qkv_bias=bool(config.get("attention_bias", model_type in QKV_BIAS_MODEL_TYPES)),
        num_experts=num_experts,
        experts_per_token=config.get("num_experts_per_tok") or 0 if num_experts else 0,
        num_shared_experts=config.get("n_shared_experts") or 0,
        moe_intermediate_size=(config.get("moe_intermediate_size") or intermediate)
        if num_experts
        else 0,
        first_dense_layers=config.get("first_k_dense_replace") or 0,
        moe_layer_freq=config.get("moe_layer_freq") or config.get("expert_layer_period") or 1,
        moe_layer_offset=config.get("expert_layer_offset") or 0,
        kv_lora_rank=config.get("kv_lora_rank") or 0,
        q_lora_rank=config.get("q_lora_rank") or 0,
        qk_rope_head_dim=config.get("qk_rope_head_dim") or 0,
        qk_nope_head_dim=config.get("qk_nope_head_dim") or 0,
        v_head_dim=config.get("v_head_dim") or 0,
        max_context=config.get("max_position_embeddings") or 0,
        sliding_window=window,
        attention_sink_tokens=config.get("attention_sink_tokens") or 0 if window else 0,
        layer_types=kinds,
        ssm=ssm,
        norms_per_layer=norms,
        vision=vision,
        default_weight_bits=float(config.get("_weight_bits", 16.0)),
        published_params=config.get("_published_params"),
        published_active_params=config.get("_published_active_params"),
        source=str(config.get("_source", origin)),
    )


def _checked(config: dict[str, Any], origin: str) -> dict[str, Any]:
    """``config`` with every key of `roofline.CONFIG_BOUNDS` in range (``None`` = absent).

    Integral floats (``1e3``) become ints; a key that is present must lie in its range,
    so ``num_key_value_heads: 0`` or ``head_dim: 0`` is refused, not replaced by the
    default. Errors name the file and the key.
    """
    checked = dict(config)
    for key, bound in CONFIG_BOUNDS.items():
        value = config.get(key)
        if value is None:
            continue
        bound.check(value, label=f"{origin}: {key}")
        if bound.integer:
            checked[key] = int(value)
    return checked


def _in_file(origin: str, build: Any, /, **fields: Any) -> Any:
    """``build(**fields)`` with its `InputError` prefixed by the file name."""
    try:
        return build(**fields)
    except InputError as error:
        if str(error).startswith(f"{origin}:"):
            raise
        raise InputError(f"{origin}: {error}") from None


def _reject_misspellings(config: dict[str, Any], origin: str) -> None:
    known = USED_KEYS | LAYER_KIND_KEYS | OUR_KEYS
    for key in config:
        if key in known:
            continue
        if key.startswith("_"):
            raise InputError(
                f"{origin}: unknown key {key!r}; accepted: {', '.join(sorted(OUR_KEYS))}"
            )
        close = difflib.get_close_matches(key, USED_KEYS, n=1, cutoff=0.88)
        if close:
            raise InputError(f"{origin}: unknown key {key!r} (did you mean {close[0]!r}?)")
        logger.debug("%s: ignoring key %r", origin, key)
