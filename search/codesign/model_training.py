"""Training time and rental cost of co-design points:
``architecture_training_flops / (peak bf16 x devices x MFU)``, the MFU fixed or
following each design's width and depth (`scaling_law.MfuModel`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scaling_law import ScalingLaw, architecture_training_flops, training_seconds

from .model_law import Array, law_architecture, training_tokens
from .space import LawSpec, ModelSpace, TrainingSpec


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
