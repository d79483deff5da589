"""The model side of a design point: architecture fields, HF config, predicted loss.

Vectorised over design points: `architecture_fields` turns model-axis indices into
arrays of layer count, width, heads, FFN size... and a validity mask (heads must
divide the width or the width must divide into heads of the given size, KV heads
must divide heads, top-k <= experts). The loss comes from a fitted law
(`scaling_law.predict_loss`; default the shape-aware Gemstones fit, which reads N with
embeddings, D and the aspect ratio hidden / layers from the `Architecture`). Serving-time
weight bits are post-training quantisation by default:
``loss = predict_loss(law, arch, D) + ptq_loss_penalty(law, arch, D, bits)``
(`scaling_law.PTQ_FORM`); ``law: {precision_model: quantised-training}`` uses Kumar et
al.'s effective parameters instead (`scaling_law.QUANTISED_TRAINING_FORM`). The training
time of a design is ``architecture_training_flops / (peak bf16 x devices x MFU)``, the MFU
following width and depth by default (`scaling_law.MfuModel`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from genz import ModelConfig, model_from_hf_config, splits_whole_heads
from roofline import InputError
from scaling_law import (
    ARCHITECTURE_DIMENSIONS,
    PTQ_FORM,
    QUANTISED_TRAINING_FORM,
    Architecture,
    PtqConstants,
    ScalingLaw,
    architecture_training_flops,
    dataset_path,
    extrapolation,
    fit_law,
    law_inputs,
    load_law,
    load_scaling_csv,
    predict_loss,
    predict_loss_interval,
    ptq_loss_penalty,
    scaling_dir,
    training_seconds,
)

from .space import MODEL_AXES, LawSpec, ModelSpace, TrainingSpec

Array = NDArray[np.float64]
#: The shipped shape-aware law: chinchilla-shape fitted on the Gemstones cooldown losses
#: (leave-one-architecture-out MAPE 0.57%; see data/scaling/README.md).
DEFAULT_LAW_FILE = "gemstones_law.json"
#: The other validated forms shipped with it (model-form spread), ``*.json`` in this folder.
DEFAULT_FORMS_DIR = "gemstones_forms"
#: Label of each precision model, as written beside every loss.
PRECISION_MODEL_LABELS = {"ptq": PTQ_FORM, "quantised-training": QUANTISED_TRAINING_FORM}
#: Domain quantities, in the order `design_extrapolation` reports them.
DOMAIN_QUANTITIES = (
    "width",
    "depth",
    "params",
    "tokens",
    "tokens_per_parameter",
    *ARCHITECTURE_DIMENSIONS,
)
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


def law_architecture(model: ModelSpace, fields: Mapping[str, Array]) -> Architecture:
    """The `scaling_law.Architecture` of the points (base's gating and tied embeddings)."""
    return Architecture(
        layers=fields["layers"],
        hidden=fields["hidden"],
        ffn=fields["intermediate_size"],
        heads=fields["heads"],
        kv_heads=fields["kv_heads"],
        head_dim=fields["head_dim"],
        vocab=fields["vocab"],
        gated_ffn=model.gated_ffn,
        experts=fields["experts"],
        top_k=fields["top_k"],
        tie_embeddings=model.tie_embeddings,
    )


def training_tokens(spec: LawSpec, law: ScalingLaw, architecture: Architecture) -> Array:
    """Training tokens D of each point: fixed, or ``tokens_per_parameter * N``
    (N counted under the law's conventions)."""
    if spec.training_tokens is not None:
        return np.broadcast_to(float(spec.training_tokens), architecture.shape)
    count = architecture.counts().select(law.include_embeddings, law.moe_parameters)
    return float(spec.tokens_per_parameter or 20.0) * count


def design_loss(
    law: ScalingLaw,
    spec: LawSpec,
    model: ModelSpace,
    fields: Mapping[str, Array],
    weight_bits: Array,
) -> Array:
    """Predicted loss (nats per token) of each point at its uniform weight precision,
    under ``spec.precision_model`` (see the module docstring)."""
    architecture = law_architecture(model, fields)
    tokens = training_tokens(spec, law, architecture)
    if spec.precision_model == "quantised-training":
        return predict_loss(law, architecture, tokens, weight_bits=weight_bits)
    return predict_loss(law, architecture, tokens) + ptq_loss_penalty(
        law, architecture, tokens, weight_bits
    )


def design_loss_interval(
    law: ScalingLaw,
    spec: LawSpec,
    model: ModelSpace,
    fields: Mapping[str, Array],
    weight_bits: Array,
) -> tuple[Array, Array]:
    """``(lower, upper)`` loss over the law's bootstrap samples (parameter noise only),
    nats per token; the PTQ term, a fixed published fit, is added unchanged. NaN when
    the law carries no bootstrap samples."""
    architecture = law_architecture(model, fields)
    tokens = training_tokens(spec, law, architecture)
    training = spec.precision_model == "quantised-training"
    prediction = predict_loss_interval(
        law, architecture, tokens, weight_bits=weight_bits if training else None
    )
    if prediction.lower is None or prediction.upper is None:
        missing = np.full(architecture.shape, np.nan)
        return missing, missing
    shift = 0.0 if training else ptq_loss_penalty(law, architecture, tokens, weight_bits)
    return prediction.lower + shift, prediction.upper + shift


def design_loss_samples(
    law: ScalingLaw,
    spec: LawSpec,
    model: ModelSpace,
    fields: Mapping[str, Array],
    weight_bits: Array,
    ptq_members: tuple[PtqConstants, ...],
) -> Array:
    """Joint samples of the predicted loss, shape ``(samples, points)``, nats per token:
    every pair (bootstrap refit of the law, PTQ constant set of ``ptq_members``), equally
    weighted; the law's point estimate alone when it carries no bootstrap samples.
    Under ``quantised-training`` there is no PTQ term and only the law is sampled."""
    architecture = law_architecture(model, fields)
    tokens = training_tokens(spec, law, architecture)
    training = spec.precision_model == "quantised-training"
    features, _ = law_inputs(
        law, architecture, tokens, weight_bits=weight_bits if training else None
    )
    form = law.law_form
    if law.bootstrap_params:
        thetas = form.from_public(np.array(law.bootstrap_params, dtype=float))
        if form.batched:
            logs = form.log_loss(thetas, features)
        else:
            logs = np.stack([form.log_loss(theta, features) for theta in thetas])
    else:
        logs = form.log_loss(law.theta(), features)[None, :]
    base = np.exp(logs).reshape(len(logs), -1)
    if training or not ptq_members:
        return base
    penalties = np.stack(
        [
            np.ravel(ptq_loss_penalty(law, architecture, tokens, weight_bits, constants=member))
            for member in ptq_members
        ]
    )
    return (base[:, None, :] + penalties[None, :, :]).reshape(-1, base.shape[1])


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


def design_extrapolation(
    law: ScalingLaw, spec: LawSpec, model: ModelSpace, fields: Mapping[str, Array]
) -> dict[str, NDArray[np.bool_]]:
    """Per domain quantity (`DOMAIN_QUANTITIES` the law records), which points lie
    outside the law's data; a point is extrapolated when any of them is True."""
    architecture = law_architecture(model, fields)
    tokens = training_tokens(spec, law, architecture)
    outside = {}
    for name in DOMAIN_QUANTITIES:
        if name in law.domain:
            single = dataclasses.replace(law, domain={name: law.domain[name]})
            flags, _ = extrapolation(single, architecture, tokens)
            outside[name] = np.broadcast_to(flags, architecture.shape)
    return outside


#: Relative tolerance within which a design holds the base's FFN ratio (the axis value,
#: before rounding to ``ffn_multiple``) or its other unpriced dimensions.
HELD_TOLERANCE = 1e-3


def base_dimensions(model: ModelSpace) -> dict[str, float]:
    """The base model's `scaling_law.ARCHITECTURE_DIMENSIONS`: query heads per KV head,
    FFN width (per expert) / width, vocabulary, routed experts (1 = dense)."""
    base = model_from_hf_config(dict(model.base_config), default_name=model.base_name)
    ffn = base.moe_intermediate_size if base.is_moe else base.intermediate_size
    return {
        "gqa_ratio": base.num_heads / base.num_kv_heads,
        "ffn_ratio": ffn / base.hidden_size,
        "vocab": float(base.vocab_size),
        "experts": float(max(base.num_experts, 1)),
    }


def design_unpriced(
    law: ScalingLaw, model: ModelSpace, fields: Mapping[str, Array]
) -> tuple[dict[str, Array], NDArray[np.bool_]]:
    """Distance from the base along every dimension the law cannot price (``law.unpriced``):
    ``{dimension: design value / base value}`` (1 = held at the base's value), and which
    points move along any of them (FFN: the ``ffn_ratio`` axis value over the base's
    ``intermediate_size / hidden``, so the rounding to ``ffn_multiple`` is not a move;
    ratios within `HELD_TOLERANCE` of 1 are reported as 1)."""
    base = base_dimensions(model)
    values = {
        "gqa_ratio": fields["heads"] / fields["kv_heads"],
        "ffn_ratio": fields["ffn_ratio"],
        "vocab": fields["vocab"],
        "experts": fields["experts"],
    }
    size = len(np.atleast_1d(fields["hidden"]))
    distance: dict[str, Array] = {}
    moved = np.zeros(size, bool)
    for name in law.unpriced:
        ratio = np.broadcast_to(np.asarray(values[name], float) / base[name], (size,))
        held = np.abs(ratio - 1.0) <= HELD_TOLERANCE
        distance[name] = np.where(held, 1.0, ratio)
        moved |= ~held
    return distance, moved


#: The unpriced dimension a hybrid's attention / SSM mix adds: no loss law has an SSM term.
LAYER_MIX_DIMENSION = "attention_layers"


def layer_mix_ratio(model: ModelSpace, attention_layers: Array) -> Array:
    """Each design's attention layer count over the base's (1 = the base's own mix; NaN
    counts, i.e. the space does not vary the mix, are the base's): the distance along
    `LAYER_MIX_DIMENSION`, which the loss law cannot price."""
    base = model_from_hf_config(dict(model.base_config), default_name=model.base_name)
    counts = np.asarray(attention_layers, float)
    own = float(base.num_attention_layers)
    return np.where(np.isnan(counts), 1.0, counts / own)


def design_training_seconds(
    law: ScalingLaw,
    spec: LawSpec,
    training: TrainingSpec,
    model: ModelSpace,
    fields: Mapping[str, Array],
) -> Array:
    """Training wall-clock seconds of each point on D tokens:
    ``architecture_training_flops(arch, D, T) / (peak_bf16 * devices * mfu)``, the MFU
    fixed or of each design's width and depth (`TrainingSpec.mfu_of`)."""
    architecture = law_architecture(model, fields)
    tokens = training_tokens(spec, law, architecture)
    flops = architecture_training_flops(architecture, tokens, training.sequence_length)
    peak = training.platform.peak("bf16") * training.devices
    mfu = training.mfu_of(fields["hidden"], fields["layers"])
    return training_seconds(flops, peak, mfu)


def training_cost_usd(training: TrainingSpec, seconds: Array) -> Array:
    """Rental cost of ``seconds`` on the training platform, USD
    (``seconds / 3600 * price_usd_per_hour * devices``; NaN without a price)."""
    price = training.platform.price_usd_per_hour
    if price is None:
        return np.full(np.shape(seconds), np.nan)
    return np.asarray(seconds, float) / 3600.0 * price * training.devices


def parameter_counts(
    law: ScalingLaw, model: ModelSpace, fields: Mapping[str, Array]
) -> tuple[Array, Array]:
    """Total and active parameters (the law's counting convention, embeddings included)."""
    counts = law_architecture(model, fields).counts()
    return counts.total, counts.active


def resolve_forms(spec: LawSpec) -> tuple[ScalingLaw, ...]:
    """The other validated law forms whose spread is reported: ``spec.forms``, else the
    shipped `DEFAULT_FORMS_DIR` files when the space uses the shipped law, else none."""
    if spec.forms is not None:
        return tuple(load_law(path) for path in spec.forms)
    folder = scaling_dir() / DEFAULT_FORMS_DIR
    if spec.path is not None or not folder.is_dir():
        return ()
    return tuple(load_law(path) for path in sorted(folder.glob("*.json")))


def resolve_law(spec: LawSpec) -> ScalingLaw:
    """The law file the space names, else the shipped Gemstones shape-aware fit; when that
    file is missing, the Chinchilla form fitted once in memory (no bootstrap, no shape)."""
    if spec.path is not None:
        return load_law(spec.path)
    shipped = scaling_dir() / DEFAULT_LAW_FILE
    if shipped.is_file():
        return load_law(shipped)
    return _fitted_default()


@functools.cache
def _fitted_default() -> ScalingLaw:
    data = load_scaling_csv(dataset_path("chinchilla"))
    result = fit_law(
        data, "chinchilla", drop_highest_loss=5, bootstrap=0, cross_validation=None, progress=False
    )
    if not result.success:
        raise InputError(f"fitting the default Chinchilla law failed: {result.message}")
    return result.law


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
