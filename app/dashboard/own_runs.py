"""The Accuracy page's "your own runs" section: upload measured runs, see how far a
runtime profile's predictions are from them.

The upload is a measurement file of ``codesign calibrate`` (`calibration.measurements` columns;
any scenario file with measured columns works), read as ``codesign predict --scenarios``
reads it (`calibration.parse_scenarios`, `calibration.predict_scenarios`): the same predictions, the
same signed errors ``100 (predicted - measured) / measured`` %, the same one-line reasons
for rows that cannot be predicted. Nothing is written anywhere.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.dashboard.common import error_summary, show_chart
from app.dashboard.measured_chart import measured_vs_predicted_figure
from app.formatting import human_rate, human_seconds
from calibration import parse_scenarios, predict_scenarios
from genz import list_runtimes
from roofline import InputError, decode_user_bytes

#: Largest upload, bytes (as `codesign calibrate` reads a measurement file).
MAX_RUNS_BYTES = 20_000_000
FILE_RUNTIMES = "each row's runtime column"
#: (label, predicted column, measured column, error column) of each scored quantity.
QUANTITIES = (
    ("batch latency (s)", "e2e_s", "measured_batch_latency_s", "e2e_error_pct"),
    ("TTFT (s)", "ttft_s", "measured_ttft_s", "ttft_error_pct"),
    ("inter-token latency (s)", "tpot_s", "measured_itl_s", "tpot_error_pct"),
    (
        "throughput (generated tok/s)",
        "throughput_tokens_per_s",
        "measured_throughput_tok_s",
        "throughput_error_pct",
    ),
)
#: What a negative bias means: every quantity is a time but the last, a rate.
FASTER = {"throughput_error_pct": "predicted slower"}


@st.cache_data(show_spinner="Predicting every uploaded run...", max_entries=8)
def scored_runs(text: str, name: str, runtime: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Predictions and errors of every row of an uploaded file, and the rows that could
    not be predicted (``line``, ``reason``). Raises `InputError` for a bad header."""
    rows, errors = parse_scenarios(text, origin=name, runtime=runtime)
    results: list[dict[str, Any]] = predict_scenarios(rows)
    failed = [(r["line"], r["error"]) for r in results if r.get("error")]
    failed += list(errors.items())
    scored = pd.DataFrame([r for r in results if not r.get("error")])
    return scored, pd.DataFrame(sorted(failed), columns=["line", "reason"])


def error_table(scored: pd.DataFrame, error_column: str) -> pd.DataFrame:
    """Count, MAPE, median / p90 absolute error and bias (%) of one quantity per runtime
    x hardware, and over all rows when there are several groups."""
    part = scored.dropna(subset=[error_column]).rename(columns={"hw": "hardware"})
    table = error_summary(part, error_column, ["runtime", "hardware"])
    if len(table) > 1:
        every = part.assign(runtime="all", hardware="all")
        table = pd.concat([table, error_summary(every, error_column, ["runtime", "hardware"])])
    return table.reset_index(drop=True)


def scatter(scored: pd.DataFrame, label: str, predicted: str, measured: str) -> go.Figure:
    """Predicted vs measured, log-log, coloured by runtime and shaped by hardware (the
    page's shared `measured_vs_predicted_figure`); throughput ticks in tok/s."""
    quantity = label.split(" (")[0]
    return measured_vs_predicted_figure(
        scored.rename(columns={"hw": "hardware"}),
        measured,
        predicted,
        quantity=quantity,
        predicted_label="predicted",
        hover=["line", "model", "batch", "input_tokens", "output_tokens", "tp"],
        formatter=(lambda v: human_rate(v, "tok/s")) if "tok/s" in label else human_seconds,
    )


def show_own_runs() -> None:
    """Upload, runtime choice, then per measured quantity a scatter and its error table."""
    st.subheader("Your own runs")
    upload = st.file_uploader(
        f"Measured runs: CSV with codesign calibrate's columns (at most "
        f"{MAX_RUNS_BYTES // 1_000_000} MB)",
        type=["csv"],
        key="own_runs_upload",
        max_upload_size=MAX_RUNS_BYTES // 1_000_000,
    )
    if upload is None:
        st.caption(
            "Upload runs you measured (model, hw, runtime, batch, input_tokens, output_tokens, "
            "tp, pp, ep, bits, and any of batch_latency_s, ttft_s, itl_s, throughput_tok_s) "
            "to see each prediction beside its measurement. They are out-of-sample errors "
            "only if the profile chosen was not calibrated on these runs."
        )
        return
    choice = st.selectbox("Predict with", [FILE_RUNTIMES, *list_runtimes()], key="own_runs_runtime")
    try:
        text = decode_user_bytes(
            upload.getvalue(), upload.name, kind="measurement file", max_bytes=MAX_RUNS_BYTES
        )
        scored, failed = scored_runs(text, upload.name, None if choice == FILE_RUNTIMES else choice)
    except InputError as error:
        st.error(str(error))
        return
    if len(failed):
        st.warning(f"{len(failed)} row(s) could not be predicted; each with its reason:")
        st.dataframe(failed, hide_index=True)
    shown = 0
    for label, predicted, measured, error_column in QUANTITIES:
        if error_column not in scored or scored[error_column].isna().all():
            continue
        shown += 1
        meaning = FASTER.get(error_column, "predicted faster")
        st.markdown(
            f"**{label}**: signed error %, (predicted - measured) / measured (bias < 0: {meaning})"
        )
        show_chart(
            scatter(scored, label, predicted, measured),
            scored,
            f"own-runs-{predicted}",
            f"Your runs: predicted against measured {label}",
            for_sidebar=False,
        )
        st.dataframe(error_table(scored, error_column), hide_index=True)
    if not shown:
        st.info("No row with a measured value was predicted.")
