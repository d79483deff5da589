"""Sidebar widgets: hardware preset and what-if scales, model preset or upload, scenario.

Widget values live in ``st.session_state`` under the keys below (tests set them
through `streamlit.testing.v1.AppTest`). Defaults are written to session state
before the widgets are created, so callbacks may change them without warnings.

Each page names the controls it reads (`render_sidebar`'s ``controls``, keys of
`DEFAULTS`); the others are not drawn there and keep their values for the pages
that do read them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

from roofline import InputError

from .sidebar_hardware import (
    CUSTOM_EFFICIENCY_DEFAULT,
    CUSTOM_EFFICIENCY_KEY,
    CUSTOM_HW_FIELDS,
    SCALE_OPTIONS,
    hardware_widgets,
    platform_caption,
)
from .sidebar_model import (
    KEPT_UPLOAD_KEY,
    UPLOAD_OPTION,
    NoModelYet,
    config_upload_json,
    model_widgets,
)
from .sidebar_modes import MODEL_OWN, OFFLOAD_OPTIONS, WINDOW_OPTIONS, mode_widgets, own_or_int
from .sidebar_scenario import (
    ACTIVATION_BITS_OPTIONS,
    BATCH_OPTIONS,
    CUSTOM_USE_CASE,
    KV_BITS_OPTIONS,
    MAX_DP,
    MAX_TP_OPTION,
    WEIGHT_BITS_OPTIONS,
    scenario_widgets,
)
from .state import UPLOADED_CONFIG_NAME, Selection

__all__ = [
    "ACTIVATION_BITS_OPTIONS",
    "BATCH_OPTIONS",
    "CUSTOM_EFFICIENCY_DEFAULT",
    "CUSTOM_EFFICIENCY_KEY",
    "CUSTOM_HW_FIELDS",
    "CUSTOM_USE_CASE",
    "DEFAULTS",
    "EVERY_CONTROL",
    "KEPT_UPLOAD_KEY",
    "KV_BITS_OPTIONS",
    "MAX_DP",
    "MAX_TP_OPTION",
    "MODEL_OWN",
    "OFFLOAD_OPTIONS",
    "SCALE_OPTIONS",
    "UPLOAD_OPTION",
    "WEIGHT_BITS_OPTIONS",
    "WINDOW_OPTIONS",
    "config_upload_json",
    "keep_sidebar_values",
    "render_sidebar",
]

#: Widget defaults: the `Selection` defaults, which take the scenario's from `genz.AXES`.
DEFAULTS: dict[str, Any] = {
    **{
        f.name: f.default
        for f in dataclasses.fields(Selection)
        if f.name not in ("model_json", "hw_yaml")
    },
    "use_case": CUSTOM_USE_CASE,
    "sliding_window": MODEL_OWN,
    "attention_layers": MODEL_OWN,
}


#: Every sidebar control, by session-state key.
EVERY_CONTROL = frozenset(DEFAULTS)


def render_sidebar(controls: frozenset[str] = EVERY_CONTROL) -> Selection | None:
    """Draw the sidebar controls named in ``controls``; return the selection (hidden
    controls contribute their stored values), or None after showing why in one line."""
    keep_sidebar_values()
    state = st.session_state
    bar = st.sidebar
    try:
        # A page that builds its own device (Hardware designer) hides the preset.
        hw_yaml = hardware_widgets(bar, controls) if "hw" in controls else None
        model_json, model = model_widgets(bar)
        scenario_widgets(bar, model, controls)
        mode_widgets(bar, model, controls)
        selection = Selection(
            hw=state.hw,
            model=state.model if model_json is None else UPLOADED_CONFIG_NAME,
            model_json=model_json,
            compute_scale=state.compute_scale,
            bw_scale=state.bw_scale,
            capacity_scale=state.capacity_scale,
            link_bw_scale=state.link_bw_scale,
            batch=int(state.batch),
            input_tokens=int(state.input_tokens),
            output_tokens=int(state.output_tokens),
            weight_bits=float(state.weight_bits),
            activation_bits=float(state.activation_bits),
            kv_bits=float(state.kv_bits),
            tp=int(state.tp),
            pp=int(state.pp),
            ep=int(state.ep),
            dp=int(state.dp),
            # A page without the control shows the physics, whatever another page chose.
            runtime=str(state.runtime) if "runtime" in controls else "ideal",
            hw_yaml=hw_yaml,
            parallel_samples=int(state.parallel_samples),
            beam_width=int(state.beam_width),
            images=int(state.images),
            weight_offload=float(state.weight_offload),
            kv_offload=float(state.kv_offload),
            sliding_window=own_or_int(state.sliding_window),
            attention_layers=own_or_int(state.attention_layers),
        )
        if "hw" in controls:
            platform_caption(bar, selection)
    except NoModelYet as pending:
        st.info(str(pending))
        return None
    except InputError as error:
        st.error(str(error))
        return None
    return selection


def keep_sidebar_values() -> None:
    """Store every control's value (its default the first time) so that it outlives runs
    that do not draw it: Streamlit deletes the state of a widget a run leaves out, and
    re-assigning the value detaches it from the widget. Every page's run must call this,
    also one that draws no sidebar control."""
    state = st.session_state
    for key, value in DEFAULTS.items():
        state[key] = state.get(key, value)
    for key, (_, default, *_rest) in CUSTOM_HW_FIELDS.items():
        state[key] = state.get(key, default)
    state[CUSTOM_EFFICIENCY_KEY] = state.get(CUSTOM_EFFICIENCY_KEY, CUSTOM_EFFICIENCY_DEFAULT)
