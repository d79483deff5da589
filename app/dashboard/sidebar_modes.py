"""Sidebar decoding-mode controls: parallel samples, beam width, images, offload fractions,
the architecture variants (attention window, a hybrid's attention layers) and multi-LoRA
adapters; a control the model refuses is disabled with its one-line reason."""

from __future__ import annotations

from typing import Any

import streamlit as st

from genz import ARCHITECTURE_AXES, AXES, MODE_AXES, ModelConfig, variant_refusal, with_lora
from roofline import InputError

#: The architecture selectboxes' first choice: the model's own window / layer pattern.
MODEL_OWN = "model's own"
WINDOW_OPTIONS = (0, 512, 1024, 2048, 4096, 8192, 16384, 32768)
OFFLOAD_OPTIONS = tuple(round(0.05 * k, 2) for k in range(21))
WINDOW_LABEL = "Attention window, tokens (0: full attention)"
MIX_LABEL = "Attention layers (the rest state-space or linear attention)"
#: Multi-LoRA controls (`genz.with_lora`), by session-state key.
LORA_CONTROLS = frozenset({"lora_rank", "lora_adapters", "lora_targets"})
LORA_TARGET_OPTIONS = ("qkv,o", "qkv", "o", "ffn", "qkv,o,ffn")
LORA_LABEL = "LoRA adapter rank (0: none)"


def own_or_int(value: Any) -> int | None:
    """None for `MODEL_OWN` (or unset), else the chosen integer."""
    return None if value is None or value == MODEL_OWN else int(value)


def mode_widgets(bar: Any, model: ModelConfig, controls: frozenset[str]) -> None:
    """Decoding mode, images, offload and architecture variants (`genz.MODE_AXES`,
    `genz.ARCHITECTURE_AXES`), in one expander; widgets the model cannot use are not
    drawn and keep their defaults."""
    shown = controls & {*MODE_AXES, *ARCHITECTURE_AXES, *LORA_CONTROLS}
    if not shown:
        return
    if model.vision is None:
        st.session_state["images"] = 0
    window_refusal = variant_refusal(model, "sliding_window")
    mix_refusal = variant_refusal(model, "attention_layers")
    # A value the model refuses or does not offer (another model's choice) resets.
    state = st.session_state
    if window_refusal or state.get("sliding_window") not in (MODEL_OWN, *_window_options(model)):
        state["sliding_window"] = MODEL_OWN
    if mix_refusal or state.get("attention_layers") not in (MODEL_OWN, *_mix_options(model)):
        state["attention_layers"] = MODEL_OWN
    lora_refusal = _lora_refusal(model, str(state.get("lora_targets", "qkv,o")))
    if lora_refusal or not 0 <= int(state.get("lora_rank", 0)) <= model.hidden_size:
        state["lora_rank"] = 0
    box = bar.expander("Decoding, offload, architecture, LoRA")
    for name in ("parallel_samples", "beam_width", "images"):
        axis = AXES[name]
        if name in shown and (name != "images" or model.vision is not None):
            box.number_input(
                axis.help.split(" (")[0].split(";")[0],
                min_value=int(axis.low),
                max_value=int(axis.high),
                step=1,
                key=name,
                help=axis.help,
            )
    for name in ("weight_offload", "kv_offload"):
        if name in shown:
            box.select_slider(AXES[name].help.split(",")[0], OFFLOAD_OPTIONS, key=name)
    # Window and layer-mix controls: drawn for models with attention (the mix only for
    # those with state-space or linear-attention layers too), disabled with the model's
    # one-line refusal when it takes no value (Zamba2's shared blocks, a parallel hybrid).
    if "sliding_window" in shown and model.num_attention_layers:
        _refusable_select(
            box, WINDOW_LABEL, _window_options(model), "sliding_window", window_refusal
        )
    if "attention_layers" in shown and model.num_attention_layers and model.num_state_layers:
        _refusable_select(box, MIX_LABEL, _mix_options(model), "attention_layers", mix_refusal)
    if "lora_rank" in shown:
        _lora_widgets(box, model, lora_refusal)


def _refusable_select(
    box: Any, label: str, options: tuple[int, ...], key: str, refusal: str | None
) -> None:
    """A selectbox of the model's own value and ``options``, disabled with ``refusal``
    (the model's one-line reason, also shown as a caption) when the model takes none."""
    box.selectbox(label, [MODEL_OWN, *options], key=key, disabled=refusal is not None, help=refusal)
    if refusal:
        box.caption(f"{label}: {refusal}")


def _window_options(model: ModelConfig) -> tuple[int, ...]:
    """`WINDOW_OPTIONS` within the model's context length (`genz.with_sliding_window`)."""
    limit = model.max_context or WINDOW_OPTIONS[-1]
    return tuple(window for window in WINDOW_OPTIONS if window <= limit)


def _mix_options(model: ModelConfig) -> tuple[int, ...]:
    """Attention-layer counts of the selectbox: 1 to the model's token-mixer layers (its
    MLP-only layers stay, as `genz.with_layer_mix` keeps Nemotron-H's)."""
    return tuple(range(1, model.num_layers - model.num_mlp_layers + 1))


def _lora_widgets(box: Any, model: ModelConfig, refusal: str | None) -> None:
    """Rank (0: none, at most the width), adapters resident and targets; the rank is
    disabled with the model's one-line refusal when the targets adapt nothing."""
    box.number_input(
        LORA_LABEL,
        min_value=0,
        max_value=model.hidden_size,
        step=8,
        key="lora_rank",
        disabled=refusal is not None,
        help=refusal or "S-LoRA / Punica batching of adapters of this rank",
    )
    box.number_input("LoRA adapters resident", min_value=1, max_value=1000, key="lora_adapters")
    box.selectbox("LoRA targets", LORA_TARGET_OPTIONS, key="lora_targets")
    if refusal:
        box.caption(f"LoRA: {refusal}")


def _lora_refusal(model: ModelConfig, targets: str) -> str | None:
    """Why ``model`` takes no adapters on ``targets`` (one line), None when it does."""
    try:
        with_lora(model, 1, 1, tuple(targets.split(",")))
    except InputError as error:
        return str(error)
    return None
