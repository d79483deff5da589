"""Sidebar hardware controls: the preset (or a custom device typed in absolute numbers),
the what-if scale factors, the serving stack and the per-device caption."""

from __future__ import annotations

from typing import Any

import streamlit as st

from genz import list_runtimes
from roofline import HARDWARE_BOUNDS, list_platforms

from ..formatting import human_bytes, human_rate
from .bounded import widget_help, widget_limits
from .state import CUSTOM_HW_FILE, Selection, build_platform, custom_platform_yaml

SCALE_OPTIONS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 8.0, 10.0)
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


def _times(value: float) -> str:
    return f"x{value:g}"


def _hardware_label(name: str) -> str:
    return "custom: type the numbers..." if name == CUSTOM_HW_FILE else name


def hardware_widgets(bar: Any, controls: frozenset[str]) -> str | None:
    """Preset (or custom hardware), scale factors and serving stack; returns the custom
    platform's YAML (None for a preset)."""
    bar.header("Hardware")
    bar.selectbox(
        "Hardware preset",
        [*list_platforms(), CUSTOM_HW_FILE],
        key="hw",
        format_func=_hardware_label,
    )
    hw_yaml = custom_hardware_widgets(bar) if st.session_state.hw == CUSTOM_HW_FILE else None
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


def custom_hardware_widgets(bar: Any) -> str:
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


def platform_caption(bar: Any, selection: Selection) -> None:
    """One caption line: the selected device's peak, bandwidth, capacity, link and count."""
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
