"""The loss law of a co-design space and its inputs: the law file (default the shipped
shape-aware Gemstones fit) and the other validated forms, each design's
`scaling_law.Architecture`, training tokens D and parameter counts."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from roofline import InputError
from scaling_law import (
    PTQ_FORM,
    QUANTISED_TRAINING_FORM,
    Architecture,
    ScalingLaw,
    dataset_path,
    fit_law,
    load_law,
    load_scaling_csv,
    scaling_dir,
)

from .space import LawSpec, ModelSpace

Array = NDArray[np.float64]
#: The shipped shape-aware law: chinchilla-shape fitted on the Gemstones cooldown losses
#: (leave-one-architecture-out MAPE 0.57%; see data/scaling/README.md).
DEFAULT_LAW_FILE = "gemstones_law.json"
#: The other validated forms shipped with it (model-form spread), ``*.json`` in this folder.
DEFAULT_FORMS_DIR = "gemstones_forms"
#: Label of each precision model, as written beside every loss.
PRECISION_MODEL_LABELS = {"ptq": PTQ_FORM, "quantised-training": QUANTISED_TRAINING_FORM}


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
    """The Chinchilla form fitted on the shipped Chinchilla table (cached per process)."""
    data = load_scaling_csv(dataset_path("chinchilla"))
    result = fit_law(
        data, "chinchilla", drop_highest_loss=5, bootstrap=0, cross_validation=None, progress=False
    )
    if not result.success:
        raise InputError(f"fitting the default Chinchilla law failed: {result.message}")
    return result.law
