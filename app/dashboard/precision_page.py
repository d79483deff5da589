"""Precision page: ILP mixed-precision allocation (``search.quantize``) within budgets.

Shown only when ``search.bits.quantizer`` is importable. The allocation replaces the
weight bits (the sidebar hides them here); its activation and KV-cache bits are kept.
"""

from __future__ import annotations

import dataclasses
import math
import shlex

import pandas as pd
import streamlit as st
import yaml

from app.charts import bits_heatmap_figure
from app.dashboard.bounded import bounded_slider
from app.dashboard.common import checked, current_selection, page_intro, show_chart, show_commands
from app.dashboard.state import (
    Selection,
    build_model,
    build_platform,
    build_scenario,
    cached_model,
    predict_command,
    prediction,
    runtime_profile,
)
from app.formatting import human_bytes, human_seconds
from genz import ModelConfig, Precision, precision_to_dict, summarise_weight_bits
from roofline import FLAG_BOUNDS, InputError
from search.bits import QuantizationResult, QuantizeBudgets, quantize

#: Relative optimality tolerance of the ILP: fast (< 1 s) and far below the
#: resolution of any sensitivity estimate; the CLI command passes the same value.
MIP_GAP = 0.01
TIME_LIMIT_S = 20.0
BITS_FILE = "bits.yaml"


# cache_resource: the result holds read-only mappings that pickle (cache_data) rejects;
# the page never mutates it.
@st.cache_resource(show_spinner="Solving the ILP...", max_entries=128)
def allocation(
    selection: Selection, formats: str, max_memory_gb: float, max_tpot_ms: float | None
) -> QuantizationResult:
    """`search.quantize` with the proxy sensitivity and the selection's serving stack,
    as ``codesign quantize`` runs it."""
    model = build_model(selection)
    scenario = build_scenario(selection)
    # As the CLI: router, norms and embedding keep the model's own bits.
    base = Precision(
        weight_bits=model.default_weight_bits, activation_bits=selection.activation_bits
    )
    budgets = QuantizeBudgets(
        max_memory_bytes=max_memory_gb * 1e9,
        max_tpot_s=None if max_tpot_ms is None else max_tpot_ms * 1e-3,
    )
    return quantize(
        model,
        build_platform(selection),
        dataclasses.replace(scenario, precision=base),
        formats,
        budgets,
        kv_formats=f"{selection.kv_bits:g}",
        method="ilp",
        time_limit_s=TIME_LIMIT_S,
        mip_gap=MIP_GAP,
        runtime=runtime_profile(selection.runtime),
    )


def quantize_command(
    selection: Selection, formats: str, max_memory_gb: float, max_tpot_ms: float | None
) -> str:
    """The ``codesign quantize`` call that solves the same problem and writes the bits file."""
    predict = shlex.split(predict_command(selection))
    flags = predict[2 : predict.index("--batch")]  # --model, --hw and scale factors
    scenario = predict[predict.index("--batch") :]
    for flag in ("--wbits", "--kvbits"):
        index = scenario.index(flag)
        del scenario[index : index + 2]
    parts = [
        "codesign",
        "quantize",
        *flags,
        "--bits",
        formats,
        "--kv-bits",
        f"{selection.kv_bits:g}",
    ]
    parts += ["--max-memory-gb", f"{max_memory_gb:.10g}"]
    if max_tpot_ms is not None:
        parts += ["--max-tpot-ms", f"{max_tpot_ms:.10g}"]
    parts += [*scenario, "--mip-gap", f"{MIP_GAP:g}", "--out", BITS_FILE]
    return " ".join(shlex.quote(part) for part in parts)


def _clamp(key: str, low: float, high: float) -> None:
    """Keep a slider's stored value inside a range that the sidebar has just moved."""
    if key in st.session_state:
        st.session_state[key] = min(max(st.session_state[key], low), high)


def _budget_context(selection: Selection) -> tuple[object, ...]:
    """What the budgets' ranges and defaults depend on: model, hardware and its capacity,
    the mesh and the KV-cache bits. A change of any resets both budgets."""
    return (
        selection.model,
        selection.model_json,
        selection.hw,
        selection.capacity_scale,
        selection.tp,
        selection.pp,
        selection.ep,
        selection.kv_bits,
    )


def budget_widgets(selection: Selection) -> tuple[str, float, float | None]:
    """Candidate formats and the memory / TPOT budget sliders.

    The memory budget starts at 60 % of the design's footprint (where the allocation has
    work to do), again whenever the model, hardware or mesh changes (a budget sized for
    an 8B model leaves a 70B one infeasible). The TPOT budget, while unbound, follows the
    TPOT of the memory-only allocation, so that ticking "Also bound TPOT" starts at a
    budget the allocation meets.
    """
    capacity_gb = round(build_platform(selection).main_memory.capacity_bytes / 1e9, 1)
    reference_ms = checked(prediction, selection).tpot_s * 1e3
    low_ms, high_ms = round(reference_ms / 10, 3), round(reference_ms * 2, 3)
    footprint_gb = checked(prediction, selection).footprint.total_bytes / 1e9
    context = _budget_context(selection)
    if st.session_state.get("precision_context") != context:
        st.session_state["precision_context"] = context
        st.session_state["precision_memory_gb"] = round(0.6 * footprint_gb * 2) / 2
        st.session_state["precision_tpot_ms"] = round(reference_ms, 3)
    _clamp("precision_memory_gb", 0.5, capacity_gb)
    _clamp("precision_tpot_ms", low_ms, high_ms)
    formats = st.text_input(
        "Candidate weight formats (widest first; e.g. 16,8,4 or fp8,int4,mxfp4)",
        "16,8,4",
        key="precision_formats",
    )
    left, right = st.columns(2)
    max_memory_gb = bounded_slider(
        left,
        FLAG_BOUNDS["--max-memory-gb"],
        "Memory budget per device (GB, decimal)",
        command="quantize",
        low=0.5,
        high=capacity_gb,
        step=0.5,
        key="precision_memory_gb",
    )
    limit_tpot = right.checkbox("Also bound TPOT", key="precision_limit_tpot")
    if not limit_tpot:
        achievable = achievable_tpot_ms(selection, formats, max_memory_gb)
        if achievable is not None:
            st.session_state["precision_tpot_ms"] = min(max(achievable, low_ms), high_ms)
    max_tpot_ms = bounded_slider(
        right,
        FLAG_BOUNDS["--max-tpot-ms"],
        "TPOT budget (ms)",
        command="quantize",
        low=low_ms,
        high=high_ms,
        disabled=not limit_tpot,
        key="precision_tpot_ms",
        help="starts at the TPOT of the allocation within the memory budget alone "
        f"(codesign quantize --max-tpot-ms: {FLAG_BOUNDS['--max-tpot-ms'].requirement})",
    )
    return formats, max_memory_gb, (max_tpot_ms if limit_tpot else None)


def achievable_tpot_ms(selection: Selection, formats: str, max_memory_gb: float) -> float | None:
    """TPOT (ms, rounded up to 0.001) of the memory-only allocation; None when that one
    is infeasible or the formats do not parse (the page reports it below)."""
    try:
        result = allocation(selection, formats, max_memory_gb, None)
    except InputError:
        return None
    if not result.success or result.prediction is None:
        return None
    return math.ceil(result.prediction.tpot_s * 1e6) / 1e3


def mean_weight_bits(model: ModelConfig, precision: Precision) -> float:
    """Parameter-weighted mean weight bits of an allocation, every weight counted
    (`genz.summarise_weight_bits`, as ``codesign predict --bits-file`` prints it)."""
    return summarise_weight_bits(model, precision).mean


def render() -> None:
    """Draw the page."""
    sidebar = current_selection()
    model = checked(cached_model, sidebar.model, sidebar.model_json)
    # The allocation replaces the weight bits (not in the sidebar here): the reference
    # prediction behind the budget sliders uses the model's own.
    selection = dataclasses.replace(sidebar, weight_bits=model.default_weight_bits)
    st.header("Precision: mixed-precision bit allocation")
    page_intro(
        "Which weight format each layer and weight group gets when the model must fit a "
        "memory (and optionally a TPOT) budget, least total sensitivity first.",
        "precision",
    )
    st.caption(
        "Integer program (HAWQ-V3 style): one format per layer and weight group, least total "
        "sensitivity (weight-free proxy) within the budgets. Per device, decimal GB."
    )
    formats, max_memory_gb, max_tpot_ms = budget_widgets(selection)
    result = checked(allocation, selection, formats, max_memory_gb, max_tpot_ms)
    command = quantize_command(selection, formats, max_memory_gb, max_tpot_ms)
    if not result.success:
        st.error(result.result.message)
        show_commands(selection, command)
        return
    assert result.prediction is not None and result.precision is not None
    rows = pd.DataFrame(result.rows())
    mean_bits = f"{mean_weight_bits(model, result.precision):.3g}"
    row = st.columns(5)
    row[0].metric(
        "Mean weight bits",
        mean_bits,
        help="weighted by parameters over every weight, router, norms and embedding "
        "included (the figure codesign predict --bits-file prints)",
    )
    row[1].metric("Footprint", human_bytes(result.prediction.footprint.total_bytes))
    row[2].metric("TPOT", human_seconds(result.prediction.tpot_s))
    row[3].metric("TTFT", human_seconds(result.prediction.ttft_s))
    row[4].metric("Total sensitivity", f"{result.objective:.4g}")
    st.caption(f"{result.result.message}; KV cache {result.kv_format.name}.")

    per_layer = rows[rows["layer"].notna()].astype({"layer": int})
    show_chart(
        bits_heatmap_figure(per_layer),
        rows,
        "bit_allocation",
        "Weight format per layer and group",
        weights=f"mixed weights (mean {mean_bits} bits)",
    )
    model_level = rows[rows["layer"].isna()]
    if not model_level.empty:
        listed = ", ".join(f"{r.group} {r.format}" for r in model_level.itertuples())
        st.caption(f"Model-level units: {listed}.")
    st.download_button(
        f"Download {BITS_FILE} (codesign predict --bits-file)",
        yaml.safe_dump(precision_to_dict(result.precision), sort_keys=False),
        file_name=BITS_FILE,
        mime="application/x-yaml",
        key="download-bits",
        on_click="ignore",
    )
    show_commands(
        selection,
        command,
        predict_command(selection) + f" --bits-file {BITS_FILE}",
        note="The first line solves the same problem and writes the bits file; the second "
        "prints the metrics above from it (the bits file overrides --wbits/--abits/--kvbits).",
    )


if __name__ == "__main__":
    render()
