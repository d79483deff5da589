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
import json
from typing import Any

import streamlit as st

from genz import (
    ARCHITECTURE_AXES,
    AXES,
    MAX_CONFIG_BYTES,
    MODE_AXES,
    ModelConfig,
    list_models,
    list_runtimes,
    model_from_hf_config,
    tensor_parallel_degrees,
)
from roofline import HARDWARE_BOUNDS, InputError, list_platforms, load_user_upload

from ..formatting import human_bytes, human_rate
from .bounded import widget_help, widget_limits
from .state import (
    CUSTOM_HW_FILE,
    UPLOADED_CONFIG_NAME,
    Selection,
    build_platform,
    cached_model,
    custom_platform_yaml,
    use_cases,
)

UPLOAD_OPTION = "upload a config.json..."
#: Session-state key of the last accepted upload: (file name, canonical JSON text).
KEPT_UPLOAD_KEY = "kept_config_upload"
CUSTOM_USE_CASE = "custom"
#: The architecture selectboxes' first choice: the model's own window / layer pattern.
MODEL_OWN = "model's own"
SCALE_OPTIONS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 8.0, 10.0)
BATCH_OPTIONS = tuple(2**k for k in range(13))
WEIGHT_BITS_OPTIONS = (1.58, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 16.0, 32.0)
ACTIVATION_BITS_OPTIONS = (4.0, 8.0, 16.0, 32.0)
KV_BITS_OPTIONS = (2.0, 3.0, 4.0, 8.0, 16.0)
MAX_DP = 64
#: Largest TP degree offered (one 8-GPU node is the usual limit; 64 covers multi-node).
MAX_TP_OPTION = 64
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
#: Custom hardware typed in absolute numbers (drawn when the preset is `CUSTOM_HW_FILE`):
#: session key -> (label, default, hardware-file field of `roofline.HARDWARE_BOUNDS`,
#: step). The inputs' limits are the field's range (the 16-bit peak half of it: the file
#: gets 8-bit rates of twice the peak); a value the range refuses is reported with the
#: message the CLI gives for the downloaded file. Defaults: an H100 SXM's datasheet figures
#: (989 TFLOP/s bf16 dense, 3,350 GB/s, 80 GB, 450 GB/s NVLink per direction).
CUSTOM_HW_FIELDS: dict[str, tuple[str, float, str, float]] = {
    "custom_peak_tflops": ("16-bit peak, TFLOP/s (dense)", 989.0, "peak_tflops", 10.0),
    "custom_bandwidth_gb_per_s": (
        "Memory bandwidth, GB/s",
        3350.0,
        "memory.bandwidth_gb_per_s",
        50.0,
    ),
    "custom_capacity_gb": ("Memory capacity, GB (decimal)", 80.0, "memory.capacity_gb", 8.0),
    "custom_link_gb_per_s": (
        "Link bandwidth per device, GB/s",
        450.0,
        "interconnect.link_bandwidth_gb_per_s",
        25.0,
    ),
    "custom_devices_per_node": (
        "Devices per node",
        8.0,
        "interconnect.devices_per_node",
        1.0,
    ),
}
CUSTOM_EFFICIENCY_KEY = "custom_efficiency"
CUSTOM_EFFICIENCY_DEFAULT = 0.75


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
        hw_yaml = _hardware_widgets(bar, controls) if "hw" in controls else None
        model_json, model = _model_widgets(bar)
        _scenario_widgets(bar, model, controls)
        _mode_widgets(bar, model, controls)
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
            sliding_window=_own_or_int(state.sliding_window),
            attention_layers=_own_or_int(state.attention_layers),
        )
        if "hw" in controls:
            _platform_caption(bar, selection)
    except _NoModelYet as pending:
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


class _NoModelYet(Exception):
    """The user chose to upload a config but has not uploaded one yet."""


def _times(value: float) -> str:
    return f"x{value:g}"


def _hardware_label(name: str) -> str:
    return "custom: type the numbers..." if name == CUSTOM_HW_FILE else name


def _hardware_widgets(bar: Any, controls: frozenset[str]) -> str | None:
    """Preset (or custom hardware), scale factors and serving stack; returns the custom
    platform's YAML (None for a preset)."""
    bar.header("Hardware")
    bar.selectbox(
        "Hardware preset",
        [*list_platforms(), CUSTOM_HW_FILE],
        key="hw",
        format_func=_hardware_label,
    )
    hw_yaml = _custom_hardware_widgets(bar) if st.session_state.hw == CUSTOM_HW_FILE else None
    scales = [
        (key, label)
        for key, label in (
            ("compute_scale", "Peak FLOP/s"),
            ("bw_scale", "Memory bandwidth"),
            ("capacity_scale", "Memory capacity"),
            ("link_bw_scale", "Link bandwidth"),
        )
        if key in controls
    ]
    if scales:
        bar.caption("What-if scale factors (multiply the preset's value):")
    for key, label in scales:
        bar.select_slider(label, SCALE_OPTIONS, key=key, format_func=_times)
    if "runtime" in controls:
        bar.selectbox(
            "Serving stack (runtime profile)",
            list_runtimes(),
            key="runtime",
            help="ideal: physics only; a calibrated profile adds its measured efficiencies "
            "and step costs, with 80% intervals (codesign predict --runtime)",
        )
    return hw_yaml


def _custom_hardware_widgets(bar: Any) -> str:
    """Absolute numbers of a custom device and a system-efficiency slider; the platform
    as preset YAML, offered as `CUSTOM_HW_FILE` for the CLI commands the pages show."""
    bar.caption("Custom hardware, per device (absolute numbers):")
    values = {}
    for key, (label, _, field, step) in CUSTOM_HW_FIELDS.items():
        bound = HARDWARE_BOUNDS[field]
        high = bound.high / 2 if field == "peak_tflops" else None
        low, high = widget_limits(bound, high=high)
        values[key] = bar.number_input(
            label,
            min_value=low,
            max_value=high,
            step=type(low)(step),
            key=key,
            help=widget_help(bound),
        )
    efficiency_bound = HARDWARE_BOUNDS["efficiency.compute"]
    low, high = widget_limits(efficiency_bound, low=0.05)
    efficiency = bar.slider(
        "System efficiency (achievable fraction of peak, bandwidth and links)",
        low,
        high,
        step=0.05,
        key=CUSTOM_EFFICIENCY_KEY,
        help=widget_help(efficiency_bound),
    )
    text = custom_platform_yaml(
        float(values["custom_peak_tflops"]),
        float(values["custom_bandwidth_gb_per_s"]),
        float(values["custom_capacity_gb"]),
        float(values["custom_link_gb_per_s"]),
        int(values["custom_devices_per_node"]),
        float(efficiency),
    )
    bar.download_button(
        f"Download {CUSTOM_HW_FILE} (codesign ... --hw {CUSTOM_HW_FILE})",
        text,
        file_name=CUSTOM_HW_FILE,
        mime="application/x-yaml",
        key="download-custom-hw",
        on_click="ignore",
    )
    return text


def _platform_caption(bar: Any, selection: Selection) -> None:
    platform = build_platform(selection)
    memory = platform.main_memory
    dtype = platform.compute_dtype_for_bits(max(selection.weight_bits, selection.activation_bits))
    parts = [
        f"{human_rate(platform.peak(dtype), 'FLOP/s')} {dtype}",
        f"{human_rate(memory.bandwidth_bytes_per_s, 'B/s')}",
        f"{human_bytes(memory.capacity_bytes)} (decimal)",
    ]
    if platform.interconnect is not None:
        link = platform.interconnect.link_bandwidth_bytes_per_s
        parts.append(f"link {human_rate(link, 'B/s')}")
    parts.append(f"{selection.devices} device(s)")
    bar.caption("Per device: " + ", ".join(parts))


def _on_model_change() -> None:
    name = st.session_state.model
    if name != UPLOAD_OPTION:
        st.session_state.weight_bits = cached_model(name, None).default_weight_bits


def _model_widgets(bar: Any) -> tuple[str | None, ModelConfig]:
    bar.header("Model")
    bar.selectbox(
        "Model preset", [*list_models(), UPLOAD_OPTION], key="model", on_change=_on_model_change
    )
    if st.session_state.model != UPLOAD_OPTION:
        return None, cached_model(st.session_state.model, None)
    upload = bar.file_uploader(
        "Hugging Face config.json (at most 1 MB)",
        type=["json"],
        key="config_upload",
        max_upload_size=1,
    )
    if upload is None:
        # An upload is widget state too: a page without the uploader drops it, so the last
        # accepted one is kept under its own key.
        earlier = st.session_state.get(KEPT_UPLOAD_KEY)
        if earlier is None:
            raise _NoModelYet("Upload a config.json in the sidebar, or pick a model preset.")
        name, model_json = earlier
        bar.caption(f"Using {name}, uploaded earlier; upload another file to replace it.")
        return model_json, cached_model(UPLOADED_CONFIG_NAME, model_json)
    model_json = config_upload_json(upload.name, upload.getvalue())
    st.session_state[KEPT_UPLOAD_KEY] = (upload.name, model_json)
    return model_json, cached_model(UPLOADED_CONFIG_NAME, model_json)


def config_upload_json(name: str, raw: bytes) -> str:
    """Canonical JSON text of an uploaded ``config.json``, checked as the CLI checks a file
    (size, UTF-8, nesting depth, JSON, a model `model_from_hf_config` accepts)."""
    document = load_user_upload(
        raw, name, kind="config.json", max_bytes=MAX_CONFIG_BYTES, fmt="json"
    )
    model_from_hf_config(document, default_name="uploaded", origin=name)
    return json.dumps(document, sort_keys=True)


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


def _scenario_widgets(bar: Any, model: ModelConfig, controls: frozenset[str]) -> None:
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


WINDOW_OPTIONS = (0, 512, 1024, 2048, 4096, 8192, 16384, 32768)
OFFLOAD_OPTIONS = tuple(round(0.05 * k, 2) for k in range(21))


def _own_or_int(value: Any) -> int | None:
    return None if value is None or value == MODEL_OWN else int(value)


def _mode_widgets(bar: Any, model: ModelConfig, controls: frozenset[str]) -> None:
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


def _bits(value: float) -> str:
    return f"{value:g} bit"
