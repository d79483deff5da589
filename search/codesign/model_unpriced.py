"""How far a design moves from its base along what the loss law cannot price: the
dimensions the law leaves out (``law.unpriced``: GQA ratio, FFN ratio, vocabulary,
experts) and a hybrid base's attention / SSM mix."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from genz import model_from_hf_config
from scaling_law import ScalingLaw

from .model_law import Array
from .space import ModelSpace

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
