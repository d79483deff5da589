"""Plotly figures for the dashboard and notebooks, each built from a DataFrame.

Every ``*_figure`` function takes the table the dashboard also offers as CSV,
with the column names documented in its docstring, and returns a
`plotly.graph_objects.Figure`. `operator_points` and `ceiling_table` shape a
prediction and a platform into the roofline's tables (no modelling here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.formatting import human_seconds
from genz import Prediction
from roofline import Platform, attainable_flops_per_s

BOUND_COLORS = {
    "compute": "#1f77b4",
    "memory": "#d62728",
    "interconnect": "#9467bd",
    "overhead": "#7f7f7f",
    "capacity": "#000000",
}
PHASE_SYMBOLS = {"prefill": "circle", "decode": "diamond"}
FOOTPRINT_COLORS = {"weights": "#1f77b4", "KV cache": "#ff7f0e", "activations": "#2ca02c"}

# The shared chart style: one colour per runtime, per weight bit width and per series,
# the same on every page and in every exported PNG (each trace names its colour, so a
# renderer without the page's theme draws the same picture).
#: Distinct colours for series that have no fixed meaning (platforms, models, use cases).
SERIES_COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
)
#: One colour per shipped serving-stack profile (`genz.list_runtimes`), far apart in hue.
RUNTIME_COLORS = {
    "ideal": "#7f7f7f",
    "vllm": "#1f77b4",
    "tensorrt-llm": "#2ca02c",
    "deepspeed": "#d62728",
    "deepspeed-mii": "#ff7f0e",
    "llama.cpp": "#9467bd",
}
#: One colour per weight bit width, the most bits darkest blue; widths between take the
#: colour of the next width below (`bits_color`).
BITS_COLORS = {
    32: "#08306b",
    16: "#1f77b4",
    8: "#ff7f0e",
    6: "#8c564b",
    5: "#e377c2",
    4: "#2ca02c",
    3: "#9467bd",
    2: "#d62728",
    1: "#17becf",
}


def series_color(index: int) -> str:
    """The ``index``-th of `SERIES_COLORS` (cycling)."""
    return SERIES_COLORS[index % len(SERIES_COLORS)]


def runtime_color(name: str) -> str:
    """`RUNTIME_COLORS` of a runtime; an unknown (uploaded) one takes a fixed colour
    derived from its name, distinct from the shipped ones' where possible."""
    if name in RUNTIME_COLORS:
        return RUNTIME_COLORS[name]
    spare = [c for c in SERIES_COLORS if c not in RUNTIME_COLORS.values()]
    return spare[sum(map(ord, name)) % len(spare)]


def bits_color(bits: float) -> str:
    """`BITS_COLORS` of a weight width (the nearest listed width at or below it)."""
    listed = sorted(BITS_COLORS)
    below = [b for b in listed if b <= bits + 1e-9]
    return BITS_COLORS[below[-1] if below else listed[0]]


#: Mantissas of the tick grids `log_ticks` tries, coarsest first: a range too narrow for
#: two ticks on the 1-2-5 grid gets round ticks from a finer one (100, 150 for 93-178).
TICK_MANTISSAS = (
    (1, 2, 5),
    (1, 1.5, 2, 3, 5, 7),
    (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8),
    (1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2, 2.2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9),
)


def _grid(low: float, high: float, mantissas: Iterable[float]) -> list[float]:
    """Every ``mantissa x 10^k`` within ``[low, high]`` (a relative slack of 1e-4)."""
    mantissas = tuple(mantissas)
    values = []
    for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for mantissa in mantissas:
            value = float(f"{mantissa * 10.0**exponent:.12g}")
            if low / 1.0001 <= value <= high * 1.0001:
                values.append(value)
    return values


def human_count(value: float) -> str:
    """A count as a tick label: ``'512'``, ``'2k'``, ``'100k'``, ``'1.5M'``."""
    for suffix, scale in (("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def log_ticks(
    low: float, high: float, formatter: Callable[[float], str] = human_seconds
) -> dict[str, object]:
    """Tick values on a 1-2-5 grid spanning ``[low, high]`` (positive; a finer grid of
    round values, `TICK_MANTISSAS`, when that gives fewer than two) and their labels by
    ``formatter`` (default: seconds in s / ms / us), for a log axis: plotly's own labels
    on a log axis spanning less than a decade repeat or run to many digits."""
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0 or high <= 0:
        return {}
    low, high = min(low, high), max(low, high)
    values: list[float] = []
    for mantissas in TICK_MANTISSAS:  # the coarsest grid giving two ticks or more
        values = _grid(low, high, mantissas)
        if len(values) >= 2:
            break
    else:  # narrower than any grid: its ends (and middle) instead
        values = sorted({low, math.sqrt(low * high), high})
    if len(values) > 8:  # a wide range: decades only
        values = [v for v in values if f"{v:.0e}".startswith("1")] or values
    return {
        "tickmode": "array",
        "tickvals": values,
        "ticktext": [formatter(v) for v in values],
    }


def two_panel_layout(
    titles: tuple[str, str],
    left: Mapping[str, Mapping[str, object]],
    right: Mapping[str, Mapping[str, object]],
    **layout: Any,
) -> dict[str, object]:
    """A layout of two side-by-side panels (x/y and x2/y2), each with its own axes and a
    title above it: what ``make_subplots(rows=1, cols=2)`` builds, without its cost
    (about 0.3 s a figure). ``left`` / ``right``: ``xaxis`` and ``yaxis`` dicts."""
    domains = ((0.0, 0.44), (0.56, 1.0))
    result: dict[str, object] = {
        "xaxis": {**left["xaxis"], "domain": domains[0], "anchor": "y"},
        "yaxis": {**left["yaxis"], "anchor": "x"},
        "xaxis2": {**right["xaxis"], "domain": domains[1], "anchor": "y2"},
        "yaxis2": {**right["yaxis"], "anchor": "x2"},
        **layout,
    }
    annotations = list(layout.get("annotations", []))
    for title, (low, high) in zip(titles, domains, strict=True):
        annotations.append(
            {
                "text": title,
                "x": (low + high) / 2,
                "y": 1.0,
                "xref": "paper",
                "yref": "paper",
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 14},
            }
        )
    result["annotations"] = annotations
    return result


def log_axis(
    values: Iterable[float], title: str, formatter: Callable[[float], str] = human_seconds
) -> dict[str, object]:
    """A log axis over the positive finite ``values`` (10 % margin each side) with
    `log_ticks` labels; a linear axis from 0 when there is none."""
    finite = [float(v) for v in values if math.isfinite(float(v)) and float(v) > 0]
    if not finite:
        return {"title": {"text": title}, "rangemode": "nonnegative"}
    low, high = min(finite) / 1.1, max(finite) * 1.1
    return {
        "title": {"text": title},
        "type": "log",
        "range": [math.log10(low), math.log10(high)],
        **log_ticks(low, high, formatter),
    }


def operator_points(result: Prediction) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Operators that have a point on the roofline, and those that do not.

    Collectives move no main-memory bytes (infinite OI) and some operators do no
    FLOP (zero attained rate): neither has a place on a log-log plot.
    """
    frame = result.to_frame()
    frame["oi_flop_per_byte"] = frame["operational_intensity"]
    frame["achieved_tflops"] = frame["flop"] / frame["time_s"] / 1e12
    frame["time_ms"] = frame["time_s"] * 1e3
    plotted = (frame["flop"] > 0) & (frame["bytes"] > 0)
    columns = ["phase", "name", "oi_flop_per_byte", "achieved_tflops", "time_ms", "bound"]
    return frame.loc[plotted, columns].reset_index(drop=True), frame.loc[~plotted]


def ceiling_table(platform: Platform, dtype: str, points: pd.DataFrame) -> pd.DataFrame:
    """The roofline ``min(peak, OI * bw)`` and its derated twin, FLOP/B and TFLOP/s.

    The OI range spans the ``points`` (from `operator_points`) and the ridge point,
    with a factor 4 of margin on each side.
    """
    ridge = platform.ridge_point(dtype)
    intensities = [ridge, *points["oi_flop_per_byte"]]
    low, high = min(intensities) / 4, max(intensities) * 4
    oi = np.logspace(np.log10(low), np.log10(high), 200)
    return pd.DataFrame(
        {
            "oi_flop_per_byte": oi,
            "peak_tflops": attainable_flops_per_s(oi, platform, dtype) / 1e12,
            "derated_tflops": attainable_flops_per_s(oi, platform, dtype, efficient=True) / 1e12,
        }
    )


def roofline_figure(ceiling: pd.DataFrame, points: pd.DataFrame, title: str) -> go.Figure:
    """Log-log roofline with one marker per operator.

    ``ceiling``: ``oi_flop_per_byte``, ``peak_tflops`` (the roofline ``min(peak,
    OI * bw)``), ``derated_tflops`` (with the platform's efficiency factors).
    ``points``: ``phase``, ``name``, ``oi_flop_per_byte``, ``achieved_tflops``,
    ``time_ms``, ``bound``.
    """
    traces = [
        go.Scatter(
            x=ceiling["oi_flop_per_byte"].to_numpy(),
            y=ceiling[column].to_numpy(),
            mode="lines",
            name=name,
            line=line,
            hovertemplate=f"OI %{{x:.3g}} FLOP/B<br>%{{y:.4g}} TFLOP/s<extra>{name}</extra>",
        )
        for column, name, line in (
            ("peak_tflops", "roofline (peak)", {"color": "black", "width": 2}),
            ("derated_tflops", "roofline x efficiency", {"color": "gray", "dash": "dash"}),
        )
    ]
    for (phase, bound), group in points.groupby(["phase", "bound"], sort=False):
        traces.append(
            go.Scatter(
                x=group["oi_flop_per_byte"].to_numpy(),
                y=group["achieved_tflops"].to_numpy(),
                mode="markers",
                name=f"{phase}: {bound}-bound",
                marker={
                    "symbol": PHASE_SYMBOLS.get(phase, "circle"),
                    "size": 10,
                    "color": BOUND_COLORS.get(bound, "#333333"),
                    "line": {"width": 1, "color": "white"},
                },
                customdata=group[["name", "time_ms", "bound", "phase"]].to_numpy(),
                hovertemplate=(
                    "<b>%{customdata[0]}</b> (%{customdata[3]})<br>OI %{x:.3g} FLOP/B"
                    "<br>%{y:.4g} TFLOP/s<br>time %{customdata[1]:.4g} ms"
                    "<br>%{customdata[2]}-bound<extra></extra>"
                ),
            )
        )
    layout = {
        "title": {"text": title},
        "xaxis": {"type": "log", "title": {"text": "operational intensity (FLOP/byte)"}},
        "yaxis": {"type": "log", "title": {"text": "attained TFLOP/s"}},
        "legend": {"orientation": "h", "y": -0.2},
        "height": 520,
    }
    return go.Figure(traces, layout)


def breakdown_figure(operators: pd.DataFrame) -> go.Figure:
    """Horizontal bars of per-operator time, one panel per phase (each its own scale).

    ``operators``: ``phase``, ``name``, ``time_ms``, ``bound``.
    """
    phases = list(dict.fromkeys(operators["phase"]))
    width = 1.0 / max(len(phases), 1)
    layout: dict[str, object] = {
        "barmode": "stack",
        # Below the panels: above them it ran into the chart's title.
        "legend": {"orientation": "h", "y": -0.22, "yanchor": "top", "title": {"text": "bound"}},
    }
    traces = []
    shown: set[str] = set()
    for index, phase in enumerate(phases):
        suffix = "" if index == 0 else str(index + 1)
        part = operators[operators["phase"] == phase].sort_values("time_ms")
        layout[f"xaxis{suffix}"] = {
            "domain": [index * width + 0.06, (index + 1) * width - 0.02],
            "title": {"text": f"{phase} time (ms)"},
            "anchor": f"y{suffix}",
        }
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "automargin": True, "dtick": 1}
        for bound, group in part.groupby("bound", sort=False):
            traces.append(
                go.Bar(
                    x=group["time_ms"].to_numpy(),
                    y=group["name"].to_numpy(),
                    orientation="h",
                    name=bound,
                    legendgroup=bound,
                    showlegend=bound not in shown,
                    marker={"color": BOUND_COLORS.get(bound, "#333333")},
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                    hovertemplate=f"%{{y}}: %{{x:.4g}} ms<extra>{phase}, {bound}-bound</extra>",
                )
            )
            shown.add(bound)
    layout["height"] = max(320, 22 * operators.groupby("phase")["name"].nunique().max())
    return go.Figure(traces, layout)


def _vertical(x: float, color: str, dash: str) -> dict[str, object]:
    return {
        "type": "line",
        "x0": x,
        "x1": x,
        "xref": "x",
        "y0": 0,
        "y1": 1,
        "yref": "paper",
        "line": {"color": color, "dash": dash},
    }


def sweep_figure(
    sweep: pd.DataFrame,
    x: str,
    y: str,
    x_title: str,
    y_title: str,
    current: float,
    log_y: bool = False,
    y_format: Callable[[float], str] = human_count,
) -> go.Figure:
    """One metric along a scenario axis (log x, counts labelled 1-2-5 as ``2k``); points
    past the capacity wall as crosses.

    ``sweep``: columns ``x``, ``y`` and boolean ``fits``; ``current`` marks the
    sidebar's value with a dotted vertical line. A log y axis is labelled by ``y_format``
    (e.g. milliseconds as time units).
    """
    traces = [
        go.Scatter(
            x=sweep[x].to_numpy(),
            y=sweep[y].to_numpy(),
            mode="lines",
            line={"color": "#1f77b4"},
            showlegend=False,
            hoverinfo="skip",
        )
    ]
    fits = sweep["fits"].astype(bool)
    for mask, label, symbol, color in (
        (fits, "fits", "circle", "#1f77b4"),
        (~fits, "past the capacity wall", "x", "#d62728"),
    ):
        if mask.any():
            traces.append(
                go.Scatter(
                    x=sweep.loc[mask, x].to_numpy(),
                    y=sweep.loc[mask, y].to_numpy(),
                    mode="markers",
                    name=label,
                    marker={"symbol": symbol, "size": 9, "color": color},
                    hovertemplate=f"{x_title} %{{x:.4g}}<br>{y_title} %{{y:.4g}}<extra>{label}</extra>",
                )
            )
    y_values = sweep[y].to_numpy()
    layout = {
        "xaxis": log_axis(sweep[x], x_title, human_count),
        "yaxis": (
            log_axis(y_values, y_title, y_format)
            if log_y
            else {"title": {"text": y_title}, "type": "linear"}
        ),
        "shapes": [_vertical(current, "gray", "dot")],
        "height": 380,
        "legend": {"orientation": "h", "y": -0.25},
    }
    return go.Figure(traces, layout)


def footprint_figure(
    footprint: pd.DataFrame, capacity_gb: float, wall_batch: float | None, current_batch: int
) -> go.Figure:
    """Stacked capacity footprint per device versus batch, against capacity.

    ``footprint``: ``batch``, ``weights_gb``, ``kv_cache_gb``, ``activations_gb``
    (decimal GB). ``wall_batch`` is the largest batch that fits (None: none fits).
    The y axis stops at twice the capacity (or just above the smallest footprint).
    """
    traces = [
        go.Scatter(
            x=footprint["batch"].to_numpy(),
            y=footprint[column].to_numpy(),
            mode="lines",
            stackgroup="footprint",
            name=label,
            line={"color": FOOTPRINT_COLORS[label]},
            hovertemplate=f"batch %{{x}}<br>{label} %{{y:.3g}} GB<extra></extra>",
        )
        for column, label in (
            ("weights_gb", "weights"),
            ("kv_cache_gb", "KV cache"),
            ("activations_gb", "activations"),
        )
    ]
    traces.append(
        go.Scatter(
            x=[footprint["batch"].min(), footprint["batch"].max()],
            y=[capacity_gb, capacity_gb],
            mode="lines",
            name=f"capacity {capacity_gb:.3g} GB",
            line={"color": "black", "width": 2},
        )
    )
    shapes = [_vertical(current_batch, "gray", "dot")]
    annotations = []
    if wall_batch is not None:
        shapes.append(_vertical(wall_batch, "#d62728", "dash"))
        annotations.append(
            {
                "x": float(np.log10(wall_batch)),
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "text": f"capacity wall: batch {wall_batch:g}",
                "showarrow": False,
                "xanchor": "left",
                "font": {"color": "#d62728"},
            }
        )
    total_gb = footprint[["weights_gb", "kv_cache_gb", "activations_gb"]].sum(axis=1)
    top = max(2.0 * capacity_gb, 1.2 * float(total_gb.min()))
    layout = {
        "xaxis": {"type": "log", "title": {"text": "batch (concurrent requests)"}},
        "yaxis": {"title": {"text": "resident bytes per device (GB, decimal)"}, "range": [0, top]},
        "shapes": shapes,
        "annotations": annotations,
        "height": 420,
        "legend": {"orientation": "h", "y": -0.25},
    }
    return go.Figure(traces, layout)


def comparison_figure(table: pd.DataFrame, value: str, title: str) -> go.Figure:
    """Grouped bars, one colour per ``label`` (`series_color`, in order of appearance).

    ``table``: ``metric`` (bar group), ``label`` (a design) and the ``value`` column.
    """
    traces = [
        go.Bar(
            x=group["metric"].to_numpy(),
            y=group[value].to_numpy(),
            name=label,
            marker={"color": series_color(index)},
        )
        for index, (label, group) in enumerate(table.groupby("label", sort=False))
    ]
    layout = {"title": {"text": title}, "barmode": "group", "height": 380}
    return go.Figure(traces, layout)


def format_colors(formats: pd.DataFrame) -> dict[str, str]:
    """One colour per format present, widest first: the first format of each bit width
    takes `bits_color` of its width (the same on every page: 16-bit blue, 8-bit orange,
    4-bit green), a second format of the same width the next unused of `SERIES_COLORS`.

    ``formats``: ``format`` and ``bits`` columns (one row per unit; repeats are fine).
    """
    present = formats[["format", "bits"]].drop_duplicates("format")
    ordered = present.sort_values(["bits", "format"], ascending=[False, True])
    colors: dict[str, str] = {}
    for name, bits in zip(ordered["format"], ordered["bits"], strict=True):
        color = bits_color(float(bits))
        if color in colors.values():
            color = next(c for c in SERIES_COLORS if c not in colors.values())
        colors[str(name)] = color
    return colors


def bits_heatmap_figure(allocation: pd.DataFrame) -> go.Figure:
    """The format of each layer (x) and weight group (y), one legend entry per format present.

    ``allocation``: ``layer``, ``group``, ``bits``, ``format`` (per-layer units only).
    Cells are coloured by format (categories, not a continuous bit scale: the choices
    are discrete); the legend lists the formats present, widest first, with their bits.
    """
    colors = format_colors(allocation)
    code = {name: index for index, name in enumerate(colors)}
    table = allocation.assign(code=allocation["format"].map(code))
    codes = table.pivot(index="group", columns="layer", values="code")
    names = table.pivot(index="group", columns="layer", values="format").reindex_like(codes)
    bits = table.pivot(index="group", columns="layer", values="bits").reindex_like(codes)
    count = len(colors)
    # A step colour scale: code i covers [i / count, (i + 1) / count] of the range.
    scale = [
        [edge, color]
        for index, color in enumerate(colors.values())
        for edge in (index / count, (index + 1) / count)
    ]
    traces: list[go.BaseTraceType] = [
        go.Heatmap(
            z=codes.to_numpy(),
            x=codes.columns.to_numpy(),
            y=codes.index.to_numpy(),
            text=names.to_numpy(),
            customdata=bits.to_numpy(),
            colorscale=scale,
            zmin=-0.5,
            zmax=count - 0.5,
            showscale=False,
            xgap=1,
            ygap=1,
            hovertemplate="layer %{x}, %{y}: %{text} (%{customdata:g} bits)<extra></extra>",
        )
    ]
    bits_of = dict(zip(allocation["format"], allocation["bits"], strict=False))
    # Legend entries only: an invisible point per format, drawn as a coloured square.
    traces += [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=f"{name} ({bits_of[name]:g} bits)",
            marker={"symbol": "square", "size": 14, "color": color},
            hoverinfo="skip",
        )
        for name, color in colors.items()
    ]
    layout = {
        "xaxis": {"title": {"text": "layer"}},
        "yaxis": {"title": {"text": ""}, "automargin": True},
        "legend": {"title": {"text": "weight format"}},
        "height": max(260, 50 * len(codes.index) + 120),
    }
    return go.Figure(traces, layout)


def design_pareto_figure(
    points: pd.DataFrame,
    y: str,
    y_title: str,
    y_format: Callable[[float], str] = lambda v: f"{v:.3g}",
) -> go.Figure:
    """Designs of a sweep: ``y`` against TPOT (both log; human time ticks on x, ``y_format``
    ticks on y, e.g. ``'$0.1'``).

    ``points``: ``tpot_s``, ``y``, ``label`` (hover text) and booleans ``fits``,
    ``pareto`` (non-dominated among the fitting designs) and ``chosen`` (the page's own
    design, drawn as a star). Designs whose weights and KV do not fit are grey crosses.
    """
    traces = []
    fits = points["fits"].astype(bool)
    pareto = points["pareto"].astype(bool) & fits
    front = points[pareto].sort_values("tpot_s")
    if len(front) > 1:
        traces.append(
            go.Scatter(
                x=front["tpot_s"].to_numpy(),
                y=front[y].to_numpy(),
                mode="lines",
                line={"color": SERIES_COLORS[0], "dash": "dot"},
                showlegend=False,
                hoverinfo="skip",
            )
        )
    hover = "%{text}<br>TPOT %{x:.4g} s<br>" + y_title + " %{y:.4g}<extra></extra>"
    for mask, name, symbol, color, size in (
        (fits & ~pareto, "dominated", "circle", "#c7c7c7", 8),
        (pareto, "Pareto-optimal", "circle", SERIES_COLORS[0], 10),
        (~fits, "does not fit in memory", "x", "#7f7f7f", 8),
    ):
        if mask.any():
            part = points[mask]
            traces.append(
                go.Scatter(
                    x=part["tpot_s"].to_numpy(),
                    y=part[y].to_numpy(),
                    mode="markers",
                    name=name,
                    text=part["label"].tolist(),
                    hovertemplate=hover,
                    marker={"symbol": symbol, "size": size, "color": color},
                )
            )
    chosen = points[points["chosen"].astype(bool)]
    if not chosen.empty:
        traces.append(
            go.Scatter(
                x=chosen["tpot_s"].to_numpy(),
                y=chosen[y].to_numpy(),
                mode="markers",
                name="this design",
                text=chosen["label"].tolist(),
                hovertemplate=hover,
                marker={
                    "symbol": "star",
                    "size": 18,
                    "color": SERIES_COLORS[1],
                    "line": {"width": 1, "color": "black"},
                },
            )
        )
    shown = points[fits] if fits.any() else points
    layout = {
        "xaxis": log_axis(shown["tpot_s"], "TPOT (log)"),
        "yaxis": log_axis(shown[y], f"{y_title} (log)", y_format),
        "height": 460,
        "legend": {"orientation": "h", "y": -0.2},
    }
    return go.Figure(traces, layout)
