"""Predicted against measured, log-log: the Accuracy page's chart (shipped held-out
rows and a user's own runs), one style for both.

Built from `plotly.graph_objects` traces, one per runtime x hardware: the same picture
``plotly.express.scatter`` drew, without importing plotly.express (about half a second
on the page's first open) or its per-call layout machinery.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pandas as pd
import plotly.graph_objects as go

from app.charts import log_axis, runtime_color
from app.formatting import human_seconds

#: One marker symbol per hardware, in order of first appearance.
HARDWARE_SYMBOLS = ("circle", "diamond", "square", "x", "cross", "triangle-up", "star")


def measured_vs_predicted_figure(
    frame: pd.DataFrame,
    measured: str,
    predicted: str,
    *,
    hardware: str = "hardware",
    quantity: str = "batch latency",
    title: str = "",
    predicted_label: str = "predicted, out of sample",
    hover: Sequence[str] = (),
    formatter: Callable[[float], str] = human_seconds,
) -> go.Figure:
    """Each row's ``predicted`` against its ``measured`` value, log-log, with y = x.

    ``frame`` has a ``runtime`` column, the ``hardware`` column and the two value
    columns (seconds, unless ``formatter`` prints another unit); rows without a
    measured value are left out. One colour per runtime (the shared `runtime_color`),
    one symbol per hardware; trace names and legend groups are ``"runtime, hardware"``;
    ``hover`` columns are listed on each point's hover label; ``predicted_label`` titles
    the y axis.
    """
    part = frame.dropna(subset=[measured])
    symbols = {
        name: HARDWARE_SYMBOLS[index % len(HARDWARE_SYMBOLS)]
        for index, name in enumerate(pd.unique(part[hardware]))
    }
    lines = [f"measured {quantity}: %{{x:.4g}}", "predicted: %{y:.4g}"]
    lines += [f"{column}: %{{customdata[{i}]}}" for i, column in enumerate(hover)]
    figure = go.Figure()
    for (runtime, device), group in part.groupby(["runtime", hardware], sort=False):
        name = f"{runtime}, {device}"
        figure.add_trace(
            go.Scatter(
                x=group[measured],
                y=group[predicted],
                mode="markers",
                name=name,
                legendgroup=name,
                marker={"color": runtime_color(str(runtime)), "symbol": symbols[device]},
                customdata=group[list(hover)].to_numpy() if hover else None,
                hovertemplate="<br>".join(lines) + f"<extra>{name}</extra>",
            )
        )
    values = [v for v in (*part[measured], *part[predicted]) if math.isfinite(v) and v > 0]
    low, high = (min(values), max(values)) if values else (1.0, 1.0)
    figure.add_trace(
        go.Scatter(
            x=[low, high],
            y=[low, high],
            mode="lines",
            name="y = x",
            line={"dash": "dot", "color": "#444444"},
        )
    )
    figure.update_layout(
        title={"text": title},
        legend={"title": {"text": "runtime, hardware"}},
        xaxis=log_axis(values, f"measured {quantity} (log)", formatter),
        yaxis=log_axis(values, f"{predicted_label} (log)", formatter),
    )
    return figure
