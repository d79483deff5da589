"""Read a Hugging Face ``config.json`` (or a shipped preset) into a `genz.model.ModelConfig`.

Keys starting with ``_`` are ours (display name, source, published parameter counts,
default weight bits). Keys this loader does not use are ignored, except those that look
like a misspelling of a used key, which are rejected by name.
"""

from __future__ import annotations

import difflib
import logging
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
    LINEAR,
    PARALLEL,
    PURE_SSM_TYPES,
    SSM,
    WINDOW,
    layer_kinds_from_config,
    ssm_from_config,
    window_from_config,
)
from .linear_attention import LINEAR_KEYS, linear_attention_from_config
from .model import ModelConfig, require_int
from .shared_block import ZAMBA2_KEYS, zamba2_fields
from .vision import vision_from_config

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
    "num_nextn_predict_layers",
    "sliding_window",
    "layer_types",
    "shared_expert_intermediate_size",
    "decoder_sparse_step",
    "mlp_only_layers",
    "attn_output_gate",
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
    "mamba_d_ssm",
    "mamba_rms_norm",
    "attn_layer_period",
    "attn_layer_offset",
    "attn_layer_indices",
    "expert_layer_period",
    "expert_layer_offset",
    # Nemotron-H
    "hybrid_override_pattern",
    "mamba_num_heads",
    "mamba_head_dim",
    "ssm_state_size",
    "use_conv_bias",
    "attention_head_dim",
    "mlp_hidden_act",
    # Gated DeltaNet linear-attention layers (Qwen3-Next)
    "full_attention_interval",
    *LINEAR_KEYS,
    # Zamba2's Mamba-2 backbone and shared transformer blocks (`genz.shared_block`)
    *ZAMBA2_KEYS,
}
OUR_KEYS = {
    "_name",
    "_source",
    "_published_params",
    "_published_params_source",
    "_published_active_params",
    "_published_params_rounding",
    "_published_params_uncited",
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
#: Model types whose layers hold one sublayer each (a mixer or an MLP) and one norm.
ONE_SUBLAYER_TYPES = ("nemotron_h",)


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
    if model_type == "zamba2":
        return _in_file(origin, ModelConfig, **_zamba2(config, default_name, origin))
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
        head_dim = (  # absent (None): hidden / heads
            config.get("head_dim") or config.get("attention_head_dim") or hidden // heads
        )
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
    require_int("num_layers", num_layers, minimum=1)
    require_int("hidden_size", hidden, minimum=1)
    window = window_from_config(config, origin)
    ssm = ssm_from_config(config, origin)
    kinds = layer_kinds_from_config(config, num_layers, window, ssm, origin)
    if WINDOW not in kinds:
        window = 0
    if SSM not in kinds and PARALLEL not in kinds:
        ssm = None
    linear = linear_attention_from_config(config, origin) if LINEAR in kinds else None
    moe_freq, moe_offset, shared = _moe_layout(config, num_experts, origin)
    one_sublayer = model_type in ONE_SUBLAYER_TYPES
    norms = 1 if pure_ssm or one_sublayer else NORMS_PER_LAYER.get(model_type, 2)
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
        num_shared_experts=shared,
        moe_intermediate_size=(config.get("moe_intermediate_size") or intermediate)
        if num_experts
        else 0,
        first_dense_layers=config.get("first_k_dense_replace") or 0,
        moe_layer_freq=moe_freq,
        moe_layer_offset=moe_offset,
        kv_lora_rank=config.get("kv_lora_rank") or 0,
        q_lora_rank=config.get("q_lora_rank") or 0,
        qk_rope_head_dim=config.get("qk_rope_head_dim") or 0,
        qk_nope_head_dim=config.get("qk_nope_head_dim") or 0,
        v_head_dim=config.get("v_head_dim") or 0,
        mtp_layers=config.get("num_nextn_predict_layers") or 0,
        max_context=config.get("max_position_embeddings") or 0,
        sliding_window=window,
        attention_sink_tokens=config.get("attention_sink_tokens") or 0 if window else 0,
        layer_types=kinds,
        ssm=ssm,
        linear_attention=linear,
        ffn_on_mixer_layers=not one_sublayer,
        attention_output_gate=bool(config.get("attn_output_gate", model_type == "qwen3_next")),
        norms_per_layer=norms,
        vision=vision,
        default_weight_bits=float(config.get("_weight_bits", 16.0)),
        published_params=config.get("_published_params"),
        published_active_params=config.get("_published_active_params"),
        source=str(config.get("_source", origin)),
    )


def _zamba2(config: dict[str, Any], default_name: str, origin: str) -> dict[str, Any]:
    """`ModelConfig` fields of a Zamba2 config (`genz.shared_block.zamba2_fields`) and ours."""
    return {
        **zamba2_fields(config, origin),
        "name": str(config.get("_name", default_name)),
        "default_weight_bits": float(config.get("_weight_bits", 16.0)),
        "published_params": config.get("_published_params"),
        "source": str(config.get("_source", origin)),
    }


def _moe_layout(config: dict[str, Any], num_experts: int, origin: str) -> tuple[int, int, int]:
    """``(moe_layer_freq, moe_layer_offset, num_shared_experts)`` of a config: DeepSeek's
    ``moe_layer_freq`` / ``n_shared_experts``, Jamba's ``expert_layer_period`` /
    ``expert_layer_offset``, Qwen-MoE's ``decoder_sparse_step`` (layer i is MoE when
    ``(i + 1) % step == 0``) and ``shared_expert_intermediate_size`` (one shared expert
    of that width, counted in routed-expert widths)."""
    step = config.get("decoder_sparse_step")
    if step is not None:
        require_int("decoder_sparse_step", step, minimum=1)
    if config.get("mlp_only_layers"):
        raise InputError(
            f"{origin}: mlp_only_layers {config['mlp_only_layers']!r:.40} is not modelled "
            "(dense layers among MoE layers): use decoder_sparse_step or first_k_dense_replace"
        )
    freq = config.get("moe_layer_freq") or config.get("expert_layer_period") or step or 1
    offset = config.get("expert_layer_offset") or ((step - 1) if step else 0)
    shared = config.get("n_shared_experts") or 0
    width = config.get("shared_expert_intermediate_size")
    if num_experts and width:
        expert = config.get("moe_intermediate_size") or config.get("intermediate_size")
        if isinstance(width, bool) or not isinstance(width, int) or not expert or width % expert:
            raise InputError(
                f"{origin}: shared_expert_intermediate_size ({width!r}) must be a positive "
                f"multiple of moe_intermediate_size ({expert!r})"
            )
        shared = width // expert
    return freq, offset, shared


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
