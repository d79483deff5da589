"""Accuracy page: how far to trust a runtime's prediction, from out-of-sample errors.

For each chosen runtime profile the page re-runs the calibration that produced it
(`calibration.recalibrate`: the command in the profile's ``calibrated_from``) and plots
every measured batch latency against its out-of-sample prediction (leave one
hardware out, 5-fold for a runtime measured on one hardware), log-log, coloured by
runtime and shaped by hardware, with the error per runtime x hardware beside it, and
the held-out quantiles per metric and device class that 80 % intervals come from;
then a user's own measured runs, uploaded, beside their predictions (`own_runs`).
"""

from __future__ import annotations

import shlex

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from app.charts import log_axis, runtime_color
from app.dashboard.common import checked, error_summary, page_intro, show_chart
from app.dashboard.own_runs import show_own_runs
from calibration import METRIC_LABELS, recalibrate
from genz import MIN_METRIC_ROWS, list_runtimes, load_runtime


@st.cache_data(show_spinner=False)
def held_out_rows(runtime: str) -> pd.DataFrame:
    """Measured and out-of-sample predicted batch latency (s) of every scored row."""
    result = recalibrate(load_runtime(runtime))
    measured = result.data.measured["batch_latency_s"]
    predicted = result.cv.predicted["batch_latency_s"]
    scored = np.isfinite(measured) & np.isfinite(predicted)
    return pd.DataFrame(
        {
            "runtime": runtime,
            "hardware": np.array(result.data.hw)[scored],
            "measured_s": measured[scored],
            "predicted_s": predicted[scored],
            "method": result.cv.method,
        }
    )


def error_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Count, MAPE, median and p90 absolute error and bias (%) per runtime x hardware."""
    rows = rows.assign(error_pct=100 * (rows.predicted_s - rows.measured_s) / rows.measured_s)
    return error_summary(rows, "error_pct", ["runtime", "hardware", "method"])


def interval_table(runtime: str) -> pd.DataFrame:
    """Per metric (batch latency, TTFT, inter-token latency) and device class: held-out
    rows, the 0.1 and 0.9 quantiles of measured / predicted, and whether
    `calibration.prediction_interval` takes its 80 % intervals from them."""
    accuracy = load_runtime(runtime).accuracy
    if accuracy is None:
        return pd.DataFrame()
    headline = METRIC_LABELS[accuracy.metric]
    groups = [(headline, accuracy.rows, accuracy.ratio_quantiles, accuracy.classes, 1)]
    groups += [
        (METRIC_LABELS[metric], part.rows, part.ratio_quantiles, part.classes, MIN_METRIC_ROWS)
        for metric, part in accuracy.metrics.items()
    ]
    lines = []
    for label, rows, overall, classes, fewest in groups:
        own = rows >= fewest
        lines.append(
            {
                "runtime": runtime,
                "metric": label,
                "device class": "all",
                "hardware": "",
                "held-out rows": rows,
                "q0.1": overall[0.1],
                "q0.9": overall[0.9],
                "intervals from": "these" if own else f"{headline} (< {fewest} rows)",
            }
        )
        for kind, part in classes.items():
            if not own:
                used = f"{headline} (< {fewest} rows)"
            elif part.rows < fewest:
                used = f"all rows of the metric (< {fewest} rows)"
            elif len(part.hardware) == 1:
                used = "in-sample on its one device; all rows on others"
            else:
                used = "these"
            lines.append(
                {
                    "runtime": runtime,
                    "metric": label,
                    "device class": kind,
                    "hardware": ", ".join(part.hardware),
                    "held-out rows": part.rows,
                    "q0.1": part.ratio_quantiles[0.1],
                    "q0.9": part.ratio_quantiles[0.9],
                    "intervals from": used,
                }
            )
    return pd.DataFrame(lines)


def scatter(rows: pd.DataFrame, title: str = "") -> go.Figure:
    """Predicted vs measured, log-log, with the y = x line; one colour per runtime (the
    shared `RUNTIME_COLORS`), one symbol per hardware, ticks in human time units."""
    figure = px.scatter(
        rows,
        x="measured_s",
        y="predicted_s",
        color="runtime",
        color_discrete_map={name: runtime_color(name) for name in rows["runtime"].unique()},
        symbol="hardware",
        log_x=True,
        log_y=True,
        labels={"measured_s": "measured batch latency", "predicted_s": "predicted"},
        title=title,
    )
    low, high = (
        rows[["measured_s", "predicted_s"]].min().min(),
        rows[["measured_s", "predicted_s"]].max().max(),
    )
    figure.add_trace(
        go.Scatter(
            x=[low, high],
            y=[low, high],
            mode="lines",
            name="y = x",
            line={"dash": "dot", "color": "#444444"},
        )
    )
    values = [low, high]
    figure.update_layout(
        xaxis=log_axis(values, "measured batch latency (log)"),
        yaxis=log_axis(values, "predicted, out of sample (log)"),
    )
    return figure


def recalibration_command(runtime: str) -> str:
    """The profile's ``calibrated_from`` command with ``--per-hardware`` (which prints this
    page's table) and ``--out`` moved off the shipped profile, so running it overwrites
    nothing in ``data/runtimes/``."""
    accuracy = load_runtime(runtime).accuracy
    assert accuracy is not None
    parts = shlex.split(accuracy.calibrated_from)
    if "--out" in parts:
        index = parts.index("--out")
        del parts[index : index + 2]
    return shlex.join([*parts, "--per-hardware", "--out", f"{runtime}-recalibrated.yaml"])


def main() -> None:
    st.header("Accuracy: predicted vs measured, out of sample")
    page_intro(
        "How far to trust a runtime profile: each published measurement against the "
        "prediction of a profile calibrated without that row's hardware, and the error "
        "per runtime x hardware; below, the same for your own runs.",
        "accuracy",
    )
    fitted = [name for name in list_runtimes() if load_runtime(name).accuracy is not None]
    chosen = st.multiselect(
        "Runtime profiles", fitted, default=["tensorrt-llm"], key="accuracy_runtimes"
    )
    if not chosen:
        st.info("Choose at least one runtime profile.")
        return
    frames = []
    for name in chosen:
        with st.spinner(
            f"Re-running the calibration of {name}, leaving each hardware out in turn "
            "(5-15 s the first time; cached after)..."
        ):
            frames.append(checked(held_out_rows, name))
    rows = pd.concat(frames, ignore_index=True)
    show_chart(scatter(rows, f"Out-of-sample batch latency: {', '.join(chosen)}"), rows, "accuracy")
    st.subheader("Out-of-sample error per runtime x hardware (%; bias < 0: predicted faster)")
    st.dataframe(error_table(rows), hide_index=True)
    st.caption(
        "Each row is predicted by a profile calibrated without its hardware. A device class "
        "measured on one hardware only is predicted, when held out, from the other classes: "
        "that is the error to expect on a device class nobody has measured."
    )
    st.subheader("80% intervals: held-out quantiles of measured / predicted, per metric")
    st.dataframe(
        pd.concat([interval_table(name) for name in chosen], ignore_index=True),
        hide_index=True,
    )
    st.caption(
        f"A prediction's TTFT and TPOT intervals come from their own held-out errors when "
        f"{MIN_METRIC_ROWS} or more rows measured them, else from batch latency's; "
        "end-to-end latency and throughput from batch latency's (throughput is batch x "
        "output / batch latency on every measured row)."
    )
    with st.expander("Reproduce with the CLI"):
        st.code("\n".join(recalibration_command(name) for name in chosen), language="bash")
        st.caption(
            "Each command prints the in-sample and out-of-sample error it finds and, with "
            "--per-hardware, the table above; it writes the refitted profile to "
            "NAME-recalibrated.yaml, not over the shipped data/runtimes/NAME.yaml."
        )
    show_own_runs()


main()
