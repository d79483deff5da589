"""The model side of a design point: architecture fields, valid meshes, the base's
fields and each design's Hugging Face config.

Vectorised over design points: `architecture_fields` turns model-axis indices into
arrays of layer count, width, heads, FFN size... and a validity mask (heads must
divide the width or the width must divide into heads of the given size, KV heads
must divide heads, top-k <= experts). The loss comes from a fitted law
(`scaling_law.predict_loss`; default the shape-aware Gemstones fit, which reads N with
embeddings, D and the aspect ratio hidden / layers from the `Architecture`): see
`search.codesign.model_law` (the law and its inputs) and `search.codesign.model_loss`.
Serving-time weight bits are post-training quantisation by default:
``loss = predict_loss(law, arch, D) + ptq_loss_penalty(law, arch, D, bits)``
(`scaling_law.PTQ_FORM`); ``law: {precision_model: quantised-training}`` uses Kumar et
al.'s effective parameters instead (`scaling_law.QUANTISED_TRAINING_FORM`). The training
time of a design is ``architecture_training_flops / (peak bf16 x devices x MFU)``, the MFU
following width and depth by default (`scaling_law.MfuModel`; `search.codesign.model_training`).
What the law cannot price is in `search.codesign.model_unpriced`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from genz import ModelConfig, model_from_hf_config, splits_whole_heads

from .model_law import (
    DEFAULT_FORMS_DIR,
    DEFAULT_LAW_FILE,
    PRECISION_MODEL_LABELS,
    Array,
    law_architecture,
    parameter_counts,
    resolve_forms,
    resolve_law,
    training_tokens,
)
from .model_loss import (
    DOMAIN_QUANTITIES,
    design_extrapolation,
    design_loss,
    design_loss_interval,
    design_loss_samples,
)
from .model_training import design_training_seconds, training_cost_usd
from .model_unpriced import (
    HELD_TOLERANCE,
    LAYER_MIX_DIMENSION,
    base_dimensions,
    design_unpriced,
    layer_mix_ratio,
)
from .space import MODEL_AXES, ModelSpace

__all__ = [
    "DEFAULT_FORMS_DIR",
    "DEFAULT_LAW_FILE",
    "DOMAIN_QUANTITIES",
    "FIELDS",
    "HELD_TOLERANCE",
    "LAYER_MIX_DIMENSION",
    "MOE_KEYS",
    "PRECISION_MODEL_LABELS",
    "Array",
    "architecture_fields",
    "base_dimensions",
    "base_fields",
    "design_extrapolation",
    "design_loss",
    "design_loss_interval",
    "design_loss_samples",
    "design_training_seconds",
    "design_unpriced",
    "hf_config",
    "law_architecture",
    "layer_mix_ratio",
    "mesh_valid",
    "model_config",
    "parameter_counts",
    "resolve_forms",
    "resolve_law",
    "training_cost_usd",
    "training_tokens",
]

FIELDS = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "intermediate_size",
    "experts",
    "top_k",
    "vocab",
    "ffn_ratio",
)
#: Keys of the base config that describe the shape and are rewritten per design.
MOE_KEYS = ("num_local_experts", "n_routed_experts", "num_experts", "num_experts_per_tok")


def architecture_fields(
    model: ModelSpace, index: NDArray[np.integer]
) -> tuple[dict[str, Array], NDArray[np.bool_]]:
    """Field arrays (`FIELDS`) of the points whose model-axis indices are ``index``
    (shape ``(n, 8)`` in `MODEL_AXES` order), and which points are valid."""
    values = {
        name: np.asarray(getattr(model, name), float)[index[:, column]]
        for column, name in enumerate(MODEL_AXES)
    }
    hidden = values["hidden"]
    if model.heads_from_head_dim:
        head_dim = values["heads"]
        heads = hidden / head_dim
    else:
        heads = values["heads"]
        head_dim = hidden / heads
    kv_heads = values["kv_heads"]
    experts, top_k = values["experts"], values["top_k"]
    multiple = model.ffn_multiple
    ffn = np.maximum(np.round(values["ffn_ratio"] * hidden / multiple), 1.0) * multiple
    valid = (
        (heads == np.round(heads))
        & (head_dim == np.round(head_dim))
        & (np.mod(heads, kv_heads) == 0)
        & (top_k <= experts)
    )
    fields = {
        "layers": values["layers"],
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": ffn,
        "experts": experts,
        "top_k": top_k,
        "vocab": values["vocab"],
        "ffn_ratio": values["ffn_ratio"],
    }
    return fields, valid


def mesh_valid(fields: Mapping[str, Array], tp: Array, pp: Array, ep: Array) -> NDArray[np.bool_]:
    """Meshes genz can split the model over: whole heads per device (`genz.splits_whole_heads`),
    pp <= layers, ep <= experts."""
    experts = np.where(fields["experts"] > 1, fields["experts"], 1.0)
    whole_heads = splits_whole_heads(tp, fields["heads"], fields["kv_heads"])
    return whole_heads & (pp <= fields["layers"]) & (ep <= experts)


def base_fields(model: ModelSpace) -> dict[str, Array]:
    """The base model's architecture fields (as `architecture_fields` gives them), one point."""
    base = model_from_hf_config(dict(model.base_config), default_name=model.base_name)
    ffn = base.moe_intermediate_size if base.is_moe else base.intermediate_size
    values = {
        "layers": base.num_layers,
        "hidden": base.hidden_size,
        "heads": base.num_heads,
        "kv_heads": base.num_kv_heads,
        "head_dim": base.head_dim,
        "intermediate_size": ffn,
        "experts": max(base.num_experts, 1),
        "top_k": max(base.experts_per_token, 1),
        "vocab": base.vocab_size,
        "ffn_ratio": ffn / base.hidden_size,
    }
    return {name: np.array([float(value)]) for name, value in values.items()}


def hf_config(
    model: ModelSpace, row: Mapping[str, float], name: str, source: str
) -> dict[str, Any]:
    """A Hugging Face ``config.json`` mapping for one design: the base config with the
    shape keys replaced. A MoE design from a dense base is written Mixtral-style
    (``num_local_experts``, ``num_experts_per_tok``); a dense design from a MoE base
    Llama-style. ``_name`` and ``_source`` are read by ``codesign predict --model``."""
    config = {k: copy.deepcopy(v) for k, v in model.base_config.items() if not k.startswith("_")}
    base_is_moe = any(config.get(key) for key in MOE_KEYS[:3])
    for key in (*MOE_KEYS, "moe_intermediate_size"):
        config.pop(key, None)
    experts, top_k = int(row["experts"]), int(row["top_k"])
    config.update(
        {
            "hidden_size": int(row["hidden"]),
            "num_hidden_layers": int(row["layers"]),
            "num_attention_heads": int(row["heads"]),
            "num_key_value_heads": int(row["kv_heads"]),
            "head_dim": int(row["head_dim"]),
            "intermediate_size": int(row["intermediate_size"]),
            "vocab_size": int(row["vocab"]),
        }
    )
    if "max_window_layers" in config:
        config["max_window_layers"] = int(row["layers"])
    if experts > 1:
        config.update(num_local_experts=experts, num_experts_per_tok=top_k)
        if not base_is_moe:
            config.update(architectures=["MixtralForCausalLM"], model_type="mixtral")
    elif base_is_moe:
        config.update(architectures=["LlamaForCausalLM"], model_type="llama")
    if "_gated_ffn" in model.base_config:
        config["_gated_ffn"] = model.base_config["_gated_ffn"]
    config["_name"] = name
    config["_source"] = source
    return config


def model_config(model: ModelSpace, row: Mapping[str, float], name: str = "design") -> ModelConfig:
    """The genz `ModelConfig` of one design."""
    return model_from_hf_config(hf_config(model, row, name, "codesign design"), default_name=name)
