"""The ``model`` section of a co-design space: architecture axes around a base model
(a preset or a ``config.json``; default a Llama-style base), the checks that the base is
one the search can vary, and the architecture variants (window, attention / SSM mix)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from genz import (
    ARCHITECTURE_AXES,
    MAX_CONFIG_BYTES,
    ModelConfig,
    model_from_hf_config,
    models_dir,
    with_layer_mix,
)
from roofline import InputError, load_user_document

from .axes import Values, axis, check_keys, ints

MODEL_AXES = ("layers", "hidden", "ffn_ratio", "heads", "kv_heads", "experts", "top_k", "vocab")
#: Architecture variants of the ``model`` section (`genz.layer_mix`; NaN: unset). The
#: window leaves parameters (and so the loss law) unchanged; ``attention_layers`` (the
#: attention / state-space mix of a hybrid base) is costed by genz but no loss law has an
#: SSM term, so a design off the base's mix is flagged unpriced (`model.layer_mix_ratio`).
VARIANT_AXES = ("sliding_window", "attention_layers")
DEFAULT_BASE = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "intermediate_size": 5632,
    "vocab_size": 32000,
    "tie_word_embeddings": False,
    "_name": "llama-style",
}


@dataclass(frozen=True)
class ModelSpace:
    """Architecture axes around ``base_config`` (a Hugging Face config mapping).

    ``heads_from_head_dim``: the ``heads`` axis holds head widths (the file gave
    ``head_dim``), so heads = hidden / value.
    """

    base_name: str
    base_config: Mapping[str, Any]
    layers: Values
    hidden: Values
    ffn_ratio: Values
    heads: Values
    heads_from_head_dim: bool
    kv_heads: Values
    experts: Values
    top_k: Values
    vocab: Values
    ffn_multiple: int = 64
    gated_ffn: bool = True
    tie_embeddings: bool = False


def _base_config(name: Any, root: Path) -> tuple[str, dict[str, Any]]:
    """Name and config mapping of ``model.base`` (None: `DEFAULT_BASE`)."""
    if name is None:
        return "llama-style", dict(DEFAULT_BASE)
    if not isinstance(name, str):
        raise InputError(
            f"model.base must be a model preset name or a config.json path, got {name!r}"
        )
    path = root / name if name.endswith(".json") else models_dir() / f"{name.lower()}.json"
    if not path.is_file():
        raise InputError(f"model.base: no model preset or config file {name!r}")
    config = load_user_document(path, kind="config.json", max_bytes=MAX_CONFIG_BYTES, fmt="json")
    if not isinstance(config, dict):
        raise InputError(f"model.base: {path} must hold a JSON object")
    return str(config.get("_name", Path(name).stem)), config


def parse_model(section: dict[str, Any], root: Path) -> ModelSpace:
    """The ``model`` section: its axes around the base (paths relative to ``root``)."""
    where = "model"
    check_keys(section, ("base", "ffn_multiple", "head_dim", *MODEL_AXES, *VARIANT_AXES), where)
    base_name, config = _base_config(section.get("base"), root)
    base = model_from_hf_config(config, default_name=base_name, origin=f"{where}.base")
    _check_base(base, base_name)
    _check_hybrid(base, section, where)
    if "heads" in section and "head_dim" in section:
        raise InputError(f"{where}: give heads or head_dim, not both")
    multiple = section.get("ffn_multiple", 64)
    if isinstance(multiple, bool) or not isinstance(multiple, int) or not 1 <= multiple <= 4096:
        raise InputError(f"{where}.ffn_multiple must be an integer in [1, 4096], got {multiple!r}")
    by_head_dim = "heads" not in section
    if by_head_dim:
        heads = axis(section, "head_dim", where, base.head_dim, 1, 4096, True)
    else:
        heads = axis(section, "heads", where, base.num_heads, 1, 4096, True)
    return ModelSpace(
        base_name=base_name,
        base_config=MappingProxyType(config),
        layers=axis(section, "layers", where, base.num_layers, 1, 1024, True),
        hidden=axis(section, "hidden", where, base.hidden_size, 1, 1 << 18, True),
        ffn_ratio=axis(
            section, "ffn_ratio", where, base_ffn_size(base) / base.hidden_size, 0.05, 64, False
        ),
        heads=heads,
        heads_from_head_dim=by_head_dim,
        kv_heads=axis(section, "kv_heads", where, base.num_kv_heads, 1, 4096, True),
        experts=axis(section, "experts", where, max(base.num_experts, 1), 1, 4096, True),
        top_k=axis(section, "top_k", where, max(base.experts_per_token, 1), 1, 4096, True),
        vocab=axis(section, "vocab", where, base.vocab_size, 1, 1 << 22, True),
        ffn_multiple=multiple,
        gated_ffn=base.gated_ffn,
        tie_embeddings=base.tie_word_embeddings,
    )


def base_ffn_size(base: ModelConfig) -> int:
    """The FFN width per expert of the base (``moe_intermediate_size`` for MoE)."""
    return base.moe_intermediate_size if base.is_moe else base.intermediate_size


def _check_base(base: ModelConfig, name: str) -> None:
    """Refuse a base whose architecture the search cannot vary, naming the feature."""
    unsupported = [
        (base.is_mla, "multi-head latent attention"),
        (base.num_shared_experts > 0, "shared experts"),
        (base.first_dense_layers > 0 or base.moe_layer_freq > 1, "mixed dense/MoE layers"),
        (_mixes_layers(base) and not base.num_attention_layers, "only state-space layers"),
        (base.num_parallel_layers > 0, "parallel attention and Mamba-2 in every layer"),
        (base.attention_output_gate, "gated attention output"),
        (base.vision is not None, "a vision tower"),
    ]
    for flag, what in unsupported:
        if flag:
            raise InputError(
                f"model.base {name!r} uses {what}, which the co-design search does not vary; "
                "use a dense or plain-MoE base (Llama, Qwen2, Mistral, Mixtral) or a "
                "sequential attention / SSM hybrid (nemotron-h-8b, bamba-9b)"
            )


def _mixes_layers(base: ModelConfig) -> bool:
    """Whether the base has state-space or linear-attention layers (a hybrid or pure SSM)."""
    return base.num_ssm_layers > 0 or base.num_linear_layers > 0


def _check_hybrid(base: ModelConfig, section: Mapping[str, Any], where: str) -> None:
    """A hybrid base (attention with SSM or linear-attention layers) keeps its shape, since
    its config's layer pattern cannot be rewritten per design: only its attention / SSM
    mix (``attention_layers``, each value checked by `genz.with_layer_mix`) and window vary.
    ``attention_layers`` on a base without that mix is refused the same way."""
    if _mixes_layers(base):
        given = [name for name in (*MODEL_AXES, "head_dim") if name in section]
        if given:
            raise InputError(
                f"{where}.{given[0]}: the hybrid base {base.name!r} keeps its shape (its "
                "layer pattern is fixed); vary model.attention_layers, its attention / SSM mix"
            )
    if "attention_layers" not in section:
        return
    spec = ARCHITECTURE_AXES["attention_layers"]
    label = f"{where}.attention_layers"
    for count in ints(section, "attention_layers", where, None, spec.low, spec.high):
        with_layer_mix(base, attention_layers=count, flags={"attention_layers": label})


def parse_variants(section: Mapping[str, Any], where: str) -> dict[str, tuple[int, ...]]:
    """The `VARIANT_AXES` the ``model`` section gives (window tokens, attention layers)."""
    found = {}
    for name in VARIANT_AXES:
        if name in section:
            spec = ARCHITECTURE_AXES[name]
            found[name] = ints(section, name, where, None, spec.low, spec.high)
    return found
