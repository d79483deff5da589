"""Sidebar scenario controls: use case, batch, token counts, weight / activation / KV bits
and the TP, PP, EP and DP degrees the model allows."""

from __future__ import annotations

from typing import Any

import streamlit as st

from genz import AXES, ModelConfig, tensor_parallel_degrees

from .state import use_cases

CUSTOM_USE_CASE = "custom"
BATCH_OPTIONS = tuple(2**k for k in range(13))
WEIGHT_BITS_OPTIONS = (1.58, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 16.0, 32.0)
ACTIVATION_BITS_OPTIONS = (4.0, 8.0, 16.0, 32.0)
KV_BITS_OPTIONS = (2.0, 3.0, 4.0, 8.0, 16.0)
MAX_DP = 64
#: Largest TP degree offered (one 8-GPU node is the usual limit; 64 covers multi-node).
MAX_TP_OPTION = 64


def _on_use_case_change() -> None:
    name = st.session_state.use_case
    if name != CUSTOM_USE_CASE:
        case = use_cases()[name]
        st.session_state.input_tokens = case.input_tokens
        st.session_state.output_tokens = case.output_tokens


def _powers_of_two(limit: int) -> tuple[int, ...]:
    return tuple(2**k for k in range(13) if 2**k <= max(limit, 1))


def _keep_valid(key: str, options: tuple[float, ...], fallback: float) -> None:
    """Reset a widget's stored value that a new model no longer allows."""
    if st.session_state[key] not in options:
        st.session_state[key] = fallback


def scenario_widgets(bar: Any, model: ModelConfig, controls: frozenset[str]) -> None:
    """The scenario controls named in ``controls``; stored values the model no longer
    allows (weight bits, parallel degrees) are reset, drawn or not."""
    bar.header("Scenario")
    if "use_case" in controls:
        bar.selectbox(
            "Use case (sets the token counts)",
            [CUSTOM_USE_CASE, *sorted(use_cases())],
            key="use_case",
            on_change=_on_use_case_change,
        )
    if "batch" in controls:
        bar.select_slider("Batch (concurrent requests)", BATCH_OPTIONS, key="batch")
    for name, label, step in (
        ("input_tokens", "Input tokens", 256),
        ("output_tokens", "Output tokens", 64),
    ):
        if name in controls:
            axis = AXES[name]
            bar.number_input(
                label, min_value=int(axis.low), max_value=int(axis.high), step=step, key=name
            )
    weight_options = tuple(sorted({*WEIGHT_BITS_OPTIONS, model.default_weight_bits}))
    _keep_valid("weight_bits", weight_options, model.default_weight_bits)
    if "weight_bits" in controls:
        bar.select_slider("Weight bits", weight_options, key="weight_bits", format_func=_bits)
    if "activation_bits" in controls:
        bar.select_slider(
            "Activation bits", ACTIVATION_BITS_OPTIONS, key="activation_bits", format_func=_bits
        )
    if "kv_bits" in controls:
        bar.select_slider("KV-cache bits", KV_BITS_OPTIONS, key="kv_bits", format_func=_bits)
    limits = {
        "tp": ("Tensor parallel (TP)", model.num_heads),
        "pp": ("Pipeline parallel (PP)", model.num_layers),
        "ep": ("Expert parallel (EP)", model.num_experts),
        "dp": ("Data parallel (DP)", MAX_DP),
    }
    for key, (label, limit) in limits.items():
        # TP must split the heads evenly (genz.tensor_parallel_degrees); the others halve.
        options = (
            tuple(d for d in tensor_parallel_degrees(model) if d <= MAX_TP_OPTION)
            if key == "tp"
            else _powers_of_two(limit)
        )
        _keep_valid(key, options, 1)
        if key not in controls:
            continue
        if len(options) == 1:
            bar.caption(f"{label}: 1 (this model cannot be split further)")
            continue
        bar.select_slider(label, options, key=key)


def _bits(value: float) -> str:
    return f"{value:g} bit"
