"""Architecture variants a scenario may sweep: the attention window of the windowed
layers and the attention / state-space layer mix of a hybrid.

- ``sliding_window`` (tokens) is `genz.with_sliding_window`: a windowed model keeps its
  local/global pattern with the new window, a model without windows has every attention
  layer windowed, 0 makes every layer full attention.
- ``attention_layers`` (a count in ``[1, num_layers]``) rebuilds a hybrid's pattern
  (Jamba, Bamba, Qwen3-Next) with that many full-attention layers spread evenly through
  the stack and state-space (or linear-attention) layers elsewhere: layer ``i`` is attention when
  ``floor((i + 1) a / L) > floor(i a / L)``, so ``a = L / 8`` gives Jamba's one in eight.
  Costs depend on the counts only, not on which layers hold attention.

Each raises `InputError` naming the axis when the model has no such layers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from roofline import InputError

from .layer_kinds import FULL, LINEAR, MLP, SSM
from .model import ModelConfig
from .scaled_models import with_sliding_window


def with_layer_mix(
    model: ModelConfig,
    *,
    sliding_window: int | None = None,
    attention_layers: int | None = None,
    flags: Mapping[str, str] | None = None,
) -> ModelConfig:
    """``model`` with its window size and / or attention layer count replaced (module
    doc); None keeps the model's own. Errors name the axis, or its entry in ``flags``
    (the CLI passes its option names)."""
    label = {**{name: name for name in ("sliding_window", "attention_layers")}, **(flags or {})}
    if sliding_window is not None:
        model = with_sliding_window(model, sliding_window, flag=label["sliding_window"])
    if attention_layers is not None:
        model = _with_attention_layers(model, attention_layers, label["attention_layers"])
    return model


def _with_attention_layers(model: ModelConfig, count: int, label: str) -> ModelConfig:
    # Nemotron-H's MLP-only layers stay where they are: the mix is over the mixer layers.
    mixers = [i for i in range(model.num_layers) if model.layer_kind(i) != MLP]
    layers = len(mixers)
    if model.shared_block is not None:
        raise InputError(
            f"{label}: {model.name} invokes shared transformer blocks between its Mamba-2 "
            "layers (Zamba2): their placement is the published layers_block_type, not a mix"
        )
    if model.num_parallel_layers:
        raise InputError(
            f"{label}: {model.name} runs attention and Mamba-2 side by side in every layer "
            "(a parallel hybrid): there is no attention / state-space layer mix to vary"
        )
    if (model.ssm is None) == (model.linear_attention is None) or not model.num_attention_layers:
        raise InputError(
            f"{label}: {model.name} is not an attention / state-space hybrid (needs "
            "attention layers and SSM or linear-attention layers, e.g. jamba-v0.1, bamba-9b, "
            "qwen3-next-80b-a3b)"
        )
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= layers:
        raise InputError(
            f"{label} must be an integer in [1, {layers}] (token-mixer layers of {model.name}), "
            f"got {count!r}"
        )
    if count == model.num_attention_layers:
        return model
    other = SSM if model.ssm is not None else LINEAR
    kind = [model.layer_kind(i) for i in range(model.num_layers)]
    for i, layer in enumerate(mixers):
        kind[layer] = FULL if (i + 1) * count // layers > i * count // layers else other
    kinds = tuple(kind)
    return dataclasses.replace(
        model,
        layer_types=kinds,
        ssm=model.ssm if SSM in kinds else None,
        linear_attention=model.linear_attention if LINEAR in kinds else None,
        name=f"{model.name} {count} attention layers",
    )
