"""Compare page: any number of designs side by side, platforms x models x use cases.

Every design takes the sidebar's precision, parallelism, batch and serving stack; the
sidebar's own platform keeps its scale factors (or is the custom platform typed
there), the others are as shipped. The page shows one table row per design (in the
CLI's units), a warning and the minimum devices for designs that do not fit, a
TTFT-against-decode-throughput scatter with the "better" corner marked, and prefill
and decode throughput against the batch.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.charts import comparison_figure, log_axis, series_color, two_panel_layout
from app.dashboard.common import (
    checked,
    current_selection,
    page_intro,
    show_chart,
    show_commands,
    tokens_per_s,
)
from app.dashboard.state import (
    CUSTOM_HW_FILE,
    UPLOADED_CONFIG_NAME,
    Selection,
    predict_command,
    prediction,
    sweep,
    use_cases,
    with_preset_model,
    with_preset_platform,
)
from app.formatting import human_bytes, human_seconds
from genz import Prediction, list_models
from roofline import InputError, list_platforms

#: The use-case entry that keeps the sidebar's prompt and output lengths.
SIDEBAR_SCENARIO = "sidebar scenario"
#: Most designs the page evaluates at once (the cross product is cut there, with a note).
MAX_DESIGNS = 48
#: Most designs drawn as throughput-against-batch curves (the table lists them all).
MAX_CURVES = 12
#: Batch sizes of the throughput curves.
BATCHES = tuple(float(2**k) for k in range(0, 9))
#: Tensor-parallel degrees tried for "minimum devices" (powers of two).
MAX_TP = 64
DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
MARKERS = ("circle", "diamond", "square", "triangle-up", "star", "cross", "pentagon")


@dataclass(frozen=True)
class Design:
    """One compared design: its labels and the `Selection` that predicts it."""

    platform: str
    model: str
    use_case: str
    selection: Selection

    @property
    def label(self) -> str:
        return f"{self.model} / {self.platform} / {self.use_case}"


def designs(
    selection: Selection, platforms: list[str], models: list[str], cases: list[str]
) -> list[Design]:
    """The cross product platforms x models x use cases, each a `Selection` from the
    sidebar's: other platforms as shipped, other models as presets, use cases' lengths."""
    lengths = use_cases()
    result = []
    for platform, model, case in itertools.product(platforms, models, cases):
        if platform == CUSTOM_HW_FILE and selection.hw != CUSTOM_HW_FILE:
            continue  # no custom hardware typed in the sidebar now
        chosen = (
            selection if platform == selection.hw else with_preset_platform(selection, platform)
        )
        if model != model_name(selection):
            chosen = with_preset_model(chosen, model)
        if case != SIDEBAR_SCENARIO:
            chosen = dataclasses.replace(
                chosen,
                input_tokens=lengths[case].input_tokens,
                output_tokens=lengths[case].output_tokens,
            )
        name = platform + (" (scaled)" if platform == selection.hw and selection.is_scaled else "")
        result.append(Design(name, model, case, chosen))
    return result


def model_name(selection: Selection) -> str:
    """The sidebar model's name in the page's lists (the uploaded file's name for an upload)."""
    return UPLOADED_CONFIG_NAME if selection.model_json is not None else selection.model


def fits_cell(result: Prediction) -> str:
    """``'yes'``, or ``'no: 141 GB > 80 GB'`` (per device, decimal)."""
    if result.fits:
        return "yes"
    return (
        f"no: {human_bytes(result.footprint.total_bytes)} > "
        f"{human_bytes(result.capacity.capacity_bytes)}"
    )


def summary_rows(items: list[tuple[Design, Prediction]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per design: readable (the CLI's units, words not booleans) and SI (CSV)."""
    readable, si = [], []
    for design, result in items:
        values = result.to_dict()
        readable.append(
            {
                "model": design.model,
                "platform": design.platform,
                "use case": design.use_case,
                "fits": fits_cell(result),
                "TTFT": human_seconds(result.ttft_s),
                "TPOT": human_seconds(result.tpot_s),
                "decode throughput": tokens_per_s(result.decode_tokens_per_s),
                "throughput": tokens_per_s(result.throughput_tokens_per_s),
                "per device": tokens_per_s(result.throughput_tokens_per_s_per_device),
                "memory per device": human_bytes(result.footprint.total_bytes),
                "capacity per device": human_bytes(result.capacity.capacity_bytes),
                "prefill bound by": result.prefill.bound.value,
                "decode bound by": result.decode.bound.value,
            }
        )
        si.append(
            {
                "model": design.model,
                "platform": design.platform,
                "use_case": design.use_case,
                **{
                    key: values[key]
                    for key in (
                        "fits",
                        "ttft_s",
                        "tpot_s",
                        "decode_tokens_per_s",
                        "throughput_tokens_per_s",
                        "throughput_tokens_per_s_per_device",
                        "footprint_bytes_per_device",
                        "capacity_bytes_per_device",
                        "prefill_bound",
                        "decode_bound",
                    )
                },
            }
        )
    return pd.DataFrame(readable), pd.DataFrame(si)


def minimum_devices(selection: Selection) -> tuple[int, Prediction] | None:
    """The least tensor-parallel degree (a power of two above the selection's, up to
    `MAX_TP`) at which the design fits, and its prediction; None if none does. Degrees
    the model cannot be split by (an `InputError`) are skipped."""
    tp = selection.tp * 2
    while tp <= MAX_TP:
        try:
            result = prediction(dataclasses.replace(selection, tp=tp))
        except InputError:
            result = None
        if result is not None and result.fits:
            return tp, result
        tp *= 2
    return None


def minimum_chips_table(items: list[tuple[Design, Prediction]]) -> pd.DataFrame:
    """For each design that does not fit: the devices it needs (tensor parallelism)."""
    rows = []
    for design, result in items:
        if result.fits:
            continue
        found = minimum_devices(design.selection)
        sel = design.selection
        rows.append(
            {
                "model": design.model,
                "platform": design.platform,
                "use case": design.use_case,
                "memory per device now": human_bytes(result.footprint.total_bytes),
                "capacity per device": human_bytes(result.capacity.capacity_bytes),
                "minimum devices": (
                    f"more than {MAX_TP * sel.pp * sel.ep * sel.dp}"
                    if found is None
                    else str(found[0] * sel.pp * sel.ep * sel.dp)
                ),
                "as": "-"
                if found is None
                else f"tp {found[0]} x pp {sel.pp} x ep {sel.ep} x dp {sel.dp}",
                "memory per device then": "-"
                if found is None
                else human_bytes(found[1].footprint.total_bytes),
                "TPOT then": "-" if found is None else human_seconds(found[1].tpot_s),
            }
        )
    return pd.DataFrame(rows)


def scatter_figure(frame: pd.DataFrame, title: str = "") -> go.Figure:
    """TTFT (x, log) against decode throughput (y, log), one marker per design: colour
    per platform, symbol per model; designs that do not fit hollow. The top-left corner
    (sooner first token, more tokens per second) is marked "better".

    ``frame``: ``platform``, ``model``, ``use_case``, ``ttft_s``, ``decode_tokens_per_s``,
    ``fits``.
    """
    platforms = list(dict.fromkeys(frame["platform"]))
    models = list(dict.fromkeys(frame["model"]))
    traces = []
    for (platform, model), group in frame.groupby(["platform", "model"], sort=False):
        color = series_color(platforms.index(platform))
        symbol = MARKERS[models.index(model) % len(MARKERS)]
        fits = group["fits"].astype(bool)
        traces.append(
            go.Scatter(
                x=group["ttft_s"].to_numpy(),
                y=group["decode_tokens_per_s"].to_numpy(),
                mode="markers",
                name=f"{model} / {platform}",
                marker={
                    "color": [color if f else "white" for f in fits],
                    "symbol": symbol,
                    "size": 13,
                    "line": {"color": color, "width": 2},
                },
                customdata=np.stack(
                    [
                        group["use_case"].to_numpy(),
                        [human_seconds(v) for v in group["ttft_s"]],
                        [tokens_per_s(v) for v in group["decode_tokens_per_s"]],
                        ["fits" if f else "does NOT fit" for f in fits],
                    ],
                    axis=-1,
                ),
                hovertemplate="%{customdata[0]}: TTFT %{customdata[1]}, decode "
                "%{customdata[2]} (%{customdata[3]})<extra>%{fullData.name}</extra>",
            )
        )
    annotations: list[dict[str, object]] = [
        {
            "x": 0.02,
            "y": 0.98,
            "xref": "paper",
            "yref": "paper",
            "text": "\u2196 better: sooner first token, more tokens/s",
            "showarrow": False,
            "xanchor": "left",
            "yanchor": "top",
            "bgcolor": "rgba(255,255,255,0.8)",
            "font": {"color": "#2ca02c"},
            "arrowcolor": "#2ca02c",
        },
    ]
    if not frame["fits"].astype(bool).all():  # explain hollow markers only where there are some
        annotations.append(
            {
                "x": 1.0,
                "y": 0.0,
                "xref": "paper",
                "yref": "paper",
                "text": "hollow markers: designs that do not fit in memory",
                "showarrow": False,
                "xanchor": "right",
                "yanchor": "bottom",
                "font": {"color": "#555555", "size": 11},
            }
        )
    layout = {
        "title": {"text": title},
        "xaxis": log_axis(frame["ttft_s"], "TTFT (log)"),
        "yaxis": log_axis(frame["decode_tokens_per_s"], "decode throughput (log)", tokens_per_s),
        "legend": {"orientation": "h", "y": -0.25},
        "height": 460,
        "annotations": annotations,
    }
    return go.Figure(traces, layout)


def batch_curves(items: list[tuple[Design, Prediction]]) -> pd.DataFrame:
    """Prefill and decode tokens per second against the batch for each design (the
    first `MAX_CURVES`), as `genz.predict` defines them (dp x batch x input / TTFT,
    dp x batch / TPOT), with ``fits``."""
    frames = []
    for design, _ in items[:MAX_CURVES]:
        sel = design.selection
        grid = sweep(sel, "batch", BATCHES)
        frames.append(
            pd.DataFrame(
                {
                    "design": design.label,
                    "platform": design.platform,
                    "model": design.model,
                    "batch": grid["batch"],
                    "prefill_tokens_per_s": sel.dp
                    * grid["batch"]
                    * sel.input_tokens
                    / grid["ttft_s"],
                    "decode_tokens_per_s": sel.dp * grid["batch"] / grid["tpot_s"],
                    "fits": grid["fits"].astype(bool),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _count(value: float) -> str:
    return f"{value:g}"


def batch_figure(curves: pd.DataFrame, title: str = "") -> go.Figure:
    """Prefill (left) and decode (right) throughput against the batch, one line per
    design (colour per platform and dash per model, as the scatter's colours and
    symbols); batches past the capacity wall as crosses."""
    platforms = list(dict.fromkeys(curves["platform"]))
    models = list(dict.fromkeys(curves["model"]))
    traces = []
    for design, group in curves.groupby("design", sort=False):
        color = series_color(platforms.index(group["platform"].iloc[0]))
        dash = DASHES[models.index(group["model"].iloc[0]) % len(DASHES)]
        symbols = ["circle" if f else "x" for f in group["fits"]]
        for panel, column in (("", "prefill_tokens_per_s"), ("2", "decode_tokens_per_s")):
            traces.append(
                go.Scatter(
                    x=group["batch"].to_numpy(),
                    y=group[column].to_numpy(),
                    name=design,
                    legendgroup=design,
                    showlegend=panel == "",
                    mode="lines+markers",
                    line={"color": color, "dash": dash},
                    marker={"color": color, "symbol": symbols, "size": 8},
                    hovertemplate="batch %{x:g}: %{y:.4g} tokens/s<extra>" + design + "</extra>",
                    xaxis=f"x{panel}",
                    yaxis=f"y{panel}",
                )
            )
    x_title = "batch (concurrent requests; x: does not fit)"
    panels = [
        {
            "xaxis": log_axis(BATCHES, x_title, _count),
            "yaxis": log_axis(curves[column], "tokens/s (log)", tokens_per_s),
        }
        for column in ("prefill_tokens_per_s", "decode_tokens_per_s")
    ]
    layout = two_panel_layout(
        ("Prefill throughput", "Decode throughput"),
        panels[0],
        panels[1],
        title={"text": title},
        legend={"orientation": "h", "y": -0.3},
        height=460,
        margin={"t": 70},
    )
    return go.Figure(traces, layout)


def latency_bars(items: list[tuple[Design, Prediction]]) -> pd.DataFrame:
    """TTFT and TPOT of every design in milliseconds, long form for grouped bars."""
    return pd.DataFrame(
        [
            {"metric": metric, "label": design.label, "time_ms": getattr(result, key) * 1e3}
            for metric, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"))
            for design, result in items
        ]
    )


def choose(selection: Selection) -> tuple[list[str], list[str], list[str]]:
    """The three add/remove lists."""
    left, middle, right = st.columns(3)
    # The custom platform is always listed (a stored choice must stay an option); it is
    # compared only while the sidebar defines it (`designs`).
    hw_options = [*list_platforms(), CUSTOM_HW_FILE]
    second = "a100-sxm-80gb" if selection.hw != "a100-sxm-80gb" else "h100-sxm"
    platforms = left.multiselect(
        "Platforms",
        hw_options,
        default=[selection.hw, second],
        key="compare_platforms",
        help="the sidebar's platform keeps its scale factors; the others are as shipped",
    )
    model_options = list_models()
    if selection.model_json is not None:
        model_options = [UPLOADED_CONFIG_NAME, *model_options]
    models = middle.multiselect(
        "Models", model_options, default=[model_name(selection)], key="compare_models"
    )
    cases = right.multiselect(
        "Use cases",
        [SIDEBAR_SCENARIO, *sorted(use_cases())],
        default=[SIDEBAR_SCENARIO],
        key="compare_use_cases",
        help=f"{SIDEBAR_SCENARIO}: the sidebar's prompt and output lengths",
    )
    return platforms, models, cases


def render() -> None:
    """Draw the page."""
    selection = current_selection()
    st.header("Compare designs")
    page_intro(
        "Any number of designs side by side (platforms x models x use cases), with the "
        "sidebar's bits, parallelism, batch and runtime: one row each, the devices a "
        "design needs when it does not fit, TTFT against decode throughput, and "
        "throughput against the batch.",
        "compare",
    )
    platforms, models, cases = choose(selection)
    if not (platforms and models and cases):
        st.info("Pick at least one platform, one model and one use case.")
        st.stop()
    chosen = designs(selection, platforms, models, cases)
    if not chosen:
        st.info(f"{CUSTOM_HW_FILE} is compared only while the sidebar's hardware is custom.")
        st.stop()
    if len(chosen) > MAX_DESIGNS:
        st.warning(f"{len(chosen)} combinations: the first {MAX_DESIGNS} are shown.")
        chosen = chosen[:MAX_DESIGNS]
    items = [(design, checked(prediction, design.selection)) for design in chosen]
    readable, si = summary_rows(items)
    misfits = [design.label for design, result in items if not result.fits]
    if misfits:
        st.warning(
            f"{len(misfits)} of {len(items)} designs do not fit in memory (weights, KV cache "
            "and activations exceed the capacity per device): their times assume they would "
            "run, which they would not. Minimum devices below. Does not fit: " + "; ".join(misfits)
        )
    st.dataframe(readable, hide_index=True)
    st.download_button(
        "Download compare_summary.csv (SI units: seconds, tok/s, bytes)",
        si.to_csv(index=False).encode("utf-8"),
        file_name="compare_summary.csv",
        mime="text/csv",
        key="csv-compare_summary",
        on_click="ignore",
    )
    if misfits:
        st.subheader("Minimum devices required")
        st.caption(
            f"The least tensor-parallel degree (powers of two, up to {MAX_TP}) at which each "
            "design fits, other parallelism as in the sidebar (codesign predict --tp N "
            "checks it)."
        )
        st.dataframe(minimum_chips_table(items), hide_index=True)
    st.subheader("TTFT against decode throughput")
    show_chart(
        scatter_figure(si, f"TTFT against decode throughput, batch {selection.batch}"),
        si,
        "compare_scatter",
    )
    st.subheader("Throughput against the batch")
    curves = checked(batch_curves, items)
    if len(items) > MAX_CURVES:
        st.caption(f"The first {MAX_CURVES} designs of {len(items)}.")
    show_chart(
        batch_figure(curves, "Prefill and decode throughput against the batch"),
        curves,
        "compare_batch",
    )
    latency = latency_bars(items)
    show_chart(comparison_figure(latency, "time_ms", "Latency (ms)"), latency, "compare_latency")
    show_commands(
        selection,
        *(predict_command(design.selection) for design, _ in items),
        note="One line per design, in the table's order.",
    )


if __name__ == "__main__":
    render()
