"""Accuracy page: how far to trust a runtime's prediction, from out-of-sample errors.

For each chosen runtime profile the page reads the held-out predictions of the
calibration that produced it (``data/runtimes/held_out/<runtime>.csv``, what the
profile's ``calibrated_from`` command writes with ``--held-out``; a toggle re-runs that
calibration here, `calibration.recalibrate`) and plots
every measured batch latency against its out-of-sample prediction (leave one
hardware out, 5-fold for a runtime measured on one hardware), log-log, coloured by
runtime and shaped by hardware, with the error per runtime x hardware beside it, and
the held-out quantiles per metric and device class that 80 % intervals come from;
then a user's own measured runs, uploaded, beside their predictions (`own_runs`).
"""

from __future__ import annotations

import shlex

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.dashboard.common import checked, error_summary, page_intro, show_chart
from app.dashboard.measured_chart import measured_vs_predicted_figure
from app.dashboard.own_runs import show_own_runs
from calibration import (
    METRIC_LABELS,
    HeldOutRow,
    held_out_rows,
    read_held_out,
    recalibrate,
    shipped_held_out_path,
)
from genz import MIN_METRIC_ROWS, RuntimeProfile, list_runtimes, load_runtime


def held_out_frame(rows: tuple[HeldOutRow, ...]) -> pd.DataFrame:
    """Measured and out-of-sample predicted batch latency (s) of every scored row."""
    return pd.DataFrame(
        [vars(row) for row in rows],
        columns=["runtime", "hardware", "method", "measured_s", "predicted_s"],
    )


@st.cache_resource(show_spinner=False)
def shipped_profile(runtime: str) -> RuntimeProfile:
    """The shipped profile ``runtime``, parsed once per server (its YAML takes ~0.1 s)."""
    return load_runtime(runtime)


@st.cache_data(show_spinner=False)
def shipped_rows(runtime: str) -> pd.DataFrame:
    """The held-out rows the shipped profile's calibration wrote
    (``data/runtimes/held_out/<runtime>.csv``, re-derived by the test suite)."""
    return held_out_frame(read_held_out(shipped_held_out_path(runtime)))


@st.cache_data(show_spinner=False)
def recalibrated_rows(runtime: str) -> pd.DataFrame:
    """The same rows from the calibration re-run here (`calibration.recalibrate`)."""
    return held_out_frame(held_out_rows(recalibrate(load_runtime(runtime)), runtime))


def error_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Count, MAPE, median and p90 absolute error and bias (%) per runtime x hardware."""
    rows = rows.assign(error_pct=100 * (rows.predicted_s - rows.measured_s) / rows.measured_s)
    return error_summary(rows, "error_pct", ["runtime", "hardware", "method"])


def interval_table(runtime: str) -> pd.DataFrame:
    """Per metric (batch latency, TTFT, inter-token latency) and device class: held-out
    rows, the 0.1 and 0.9 quantiles of measured / predicted, and whether
    `calibration.prediction_interval` takes its 80 % intervals from them."""
    accuracy = shipped_profile(runtime).accuracy
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
    """Predicted vs measured batch latency, log-log, with the y = x line; one colour per
    runtime (the shared `RUNTIME_COLORS`), one symbol per hardware, ticks in human time
    units."""
    return measured_vs_predicted_figure(rows, "measured_s", "predicted_s", title=title)


def recalibration_command(runtime: str) -> str:
    """The profile's ``calibrated_from`` command with ``--per-hardware`` (which prints this
    page's table), ``--held-out`` (which writes the scatter's rows) and ``--out`` moved off
    the shipped profile, so running it overwrites nothing in ``data/runtimes/``."""
    accuracy = shipped_profile(runtime).accuracy
    assert accuracy is not None
    parts = shlex.split(accuracy.calibrated_from)
    if "--out" in parts:
        index = parts.index("--out")
        del parts[index : index + 2]
    return shlex.join(
        [
            *parts,
            "--per-hardware",
            "--held-out",
            f"{runtime}-held-out.csv",
            "--out",
            f"{runtime}-recalibrated.yaml",
        ]
    )


def main() -> None:
    st.header("Accuracy: predicted vs measured, out of sample")
    page_intro(
        "How far to trust a runtime profile: each published measurement against the "
        "prediction of a profile calibrated without that row's hardware, and the error "
        "per runtime x hardware; below, the same for your own runs.",
        "accuracy",
    )
    fitted = [name for name in list_runtimes() if shipped_held_out_path(name).is_file()]
    chosen = st.multiselect(
        "Runtime profiles", fitted, default=["tensorrt-llm"], key="accuracy_runtimes"
    )
    if not chosen:
        st.info("Choose at least one runtime profile.")
        return
    rerun = st.toggle(
        "Re-run the calibrations here (5-15 s per runtime the first time)",
        key="accuracy_recalibrate",
        help="Off: the held-out predictions the shipped calibration wrote "
        "(data/runtimes/held_out/, which the test suite re-derives from the same command); "
        "on: the same fit and cross-validation run again in this server.",
    )
    frames = []
    for name in chosen:
        if not rerun:
            frames.append(checked(shipped_rows, name))
            continue
        with st.spinner(
            f"Re-running the calibration of {name}, leaving each hardware out in turn "
            "(5-15 s the first time; cached after)..."
        ):
            frames.append(checked(recalibrated_rows, name))
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
            "--per-hardware, the table above; with --held-out, the scatter's rows to "
            "NAME-held-out.csv (the shipped data/runtimes/held_out/NAME.csv is this file); "
            "it writes the refitted profile to NAME-recalibrated.yaml, not over the shipped "
            "data/runtimes/NAME.yaml."
        )
    show_own_runs()


main()
