"""Predicted loss of co-design points: the point estimate at each design's weight bits
(post-training quantisation by default, or quantised training), the bootstrap interval,
joint law x PTQ samples, and which points lie outside the law's data.

``loss = predict_loss(law, arch, D) + ptq_loss_penalty(law, arch, D, bits)``
(`scaling_law.PTQ_FORM`); ``law: {precision_model: quantised-training}`` uses Kumar et
al.'s effective parameters instead (`scaling_law.QUANTISED_TRAINING_FORM`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from scaling_law import (
    ARCHITECTURE_DIMENSIONS,
    PtqConstants,
    ScalingLaw,
    extrapolation,
    law_inputs,
    predict_loss,
    predict_loss_interval,
    ptq_loss_penalty,
)

from .model_law import Array, law_architecture, training_tokens
from .space import LawSpec, ModelSpace

#: Domain quantities, in the order `design_extrapolation` reports them.
DOMAIN_QUANTITIES = (
    "width",
    "depth",
    "params",
    "tokens",
    "tokens_per_parameter",
    *ARCHITECTURE_DIMENSIONS,
)


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
