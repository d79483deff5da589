"""Sidebar decoding-mode controls: parallel samples, beam width, images, offload fractions
and the architecture variants (attention window, a hybrid's attention layers)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from genz import ARCHITECTURE_AXES, AXES, MODE_AXES, ModelConfig

#: The architecture selectboxes' first choice: the model's own window / layer pattern.
MODEL_OWN = "model's own"
WINDOW_OPTIONS = (0, 512, 1024, 2048, 4096, 8192, 16384, 32768)
OFFLOAD_OPTIONS = tuple(round(0.05 * k, 2) for k in range(21))


def own_or_int(value: Any) -> int | None:
    """None for `MODEL_OWN` (or unset), else the chosen integer."""
    return None if value is None or value == MODEL_OWN else int(value)


def mode_widgets(bar: Any, model: ModelConfig, controls: frozenset[str]) -> None:
    """Decoding mode, images, offload and architecture variants (`genz.MODE_AXES`,
    `genz.ARCHITECTURE_AXES`), in one expander; widgets the model cannot use are not
    drawn and keep their defaults."""
    shown = controls & {*MODE_AXES, *ARCHITECTURE_AXES}
    if not shown:
        return
    if model.vision is None:
        st.session_state["images"] = 0
    hybrid = bool(
        model.num_state_layers and model.num_attention_layers and not model.num_parallel_layers
    )
    if not hybrid:
        st.session_state["attention_layers"] = MODEL_OWN
    box = bar.expander("Decoding, offload, architecture")
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
    if "sliding_window" in shown and model.num_attention_layers:
        box.selectbox(
            "Attention window, tokens (0: full attention)",
            [MODEL_OWN, *WINDOW_OPTIONS],
            key="sliding_window",
        )
    if "attention_layers" in shown and hybrid:
        box.selectbox(
            "Attention layers (the rest state-space or linear attention)",
            [MODEL_OWN, *range(1, model.num_layers + 1)],
            key="attention_layers",
        )
