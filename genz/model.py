"""LLM architectures: a frozen description read from a Hugging Face ``config.json``.

Covers dense MHA/GQA/MQA, MLA (DeepSeek-style latent KV), MoE (routed + shared
experts, top-k, leading dense layers), gated (SwiGLU) or plain FFNs, and tied or
untied embeddings. Keys starting with ``_`` are ours (display name, source,
published parameter counts, default weight bits).
"""

from __future__ import annotations

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
    load_user_document,
    names_a_path,
    unknown_name,
)

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
}
OUR_KEYS = {
    "_name",
    "_source",
    "_published_params",
    "_published_params_source",
    "_published_active_params",
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


@dataclass(frozen=True)
class ModelConfig:
    """An LLM architecture. Counts are integers; ``head_dim`` is per attention head.

    MoE: ``num_experts`` > 0 routed experts of ``moe_intermediate_size`` each,
    ``experts_per_token`` chosen per token, ``num_shared_experts`` always active;
    the first ``first_dense_layers`` layers (and layers off ``moe_layer_freq``) are dense.
    MLA: ``kv_lora_rank`` > 0 caches a latent of ``kv_lora_rank + qk_rope_head_dim``
    per token per layer instead of K and V.
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
        ):
            _require_int(label, getattr(self, label), minimum=0)
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
        return self.is_moe and layer >= self.first_dense_layers and layer % self.moe_layer_freq == 0

    @cached_property
    def num_moe_layers(self) -> int:
        """Layers whose FFN is a mixture of experts (counted once per config)."""
        return sum(1 for layer in range(self.num_layers) if self.is_moe_layer(layer))

    @property
    def num_dense_layers(self) -> int:
        """Layers with a dense FFN."""
        return self.num_layers - self.num_moe_layers

    @property
    def attention_type(self) -> str:
        """'MLA', 'MHA', 'MQA' or 'GQA'."""
        if self.is_mla:
            return "MLA"
        if self.num_kv_heads == self.num_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"

    @property
    def kv_elements_per_token_per_layer(self) -> int:
        """KV-cache elements stored per token per layer (K and V, or the MLA latent)."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim


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
        if not path.is_file():
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
    _reject_misspellings(config, origin)
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
        if config.get(key) is None:  # absent or null
            raise InputError(f"{origin}: missing required key {key!r}")
    config = _checked(config, origin)
    heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    architectures = config.get("architectures") or []
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise InputError(
            f"{origin}: architectures must be a list of names, got {architectures!r:.60}"
        )
    architecture = " ".join(architectures)
    model_type = str(config.get("model_type", ""))
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
    intermediate = config.get("intermediate_size")
    if intermediate is None:
        raise InputError(f"{origin}: missing required key 'intermediate_size'")
    head_dim = config.get("head_dim") or hidden // heads  # absent (None): hidden / heads
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
    return _in_file(
        origin,
        ModelConfig,
        name=str(config.get("_name", default_name)),
        hidden_size=hidden,
        num_layers=config["num_hidden_layers"],
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
        moe_layer_freq=config.get("moe_layer_freq") or 1,
        kv_lora_rank=config.get("kv_lora_rank") or 0,
        q_lora_rank=config.get("q_lora_rank") or 0,
        qk_rope_head_dim=config.get("qk_rope_head_dim") or 0,
        qk_nope_head_dim=config.get("qk_nope_head_dim") or 0,
        v_head_dim=config.get("v_head_dim") or 0,
        max_context=config.get("max_position_embeddings") or 0,
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
    known = USED_KEYS | OUR_KEYS
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
