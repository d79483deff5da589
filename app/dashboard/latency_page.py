"""Latency page: TTFT / TPOT / throughput, per-operator breakdown, TPOT sweeps."""

from __future__ import annotations

import streamlit as st

from app.charts import breakdown_figure, sweep_figure
from app.cli.runtime_output import LABELS, SCOPE
from app.dashboard.common import (
    checked,
    current_selection,
    page_intro,
    show_chart,
    show_commands,
    tokens_per_s,
)
from app.dashboard.sidebar import BATCH_OPTIONS
from app.dashboard.state import (
    Selection,
    cached_model,
    predict_command,
    prediction,
    prediction_intervals,
    sweep,
)
from app.formatting import human_seconds

#: Prompt lengths of the context sweep, tokens.
CONTEXT_POINTS = tuple(2**k for k in range(7, 18))


def context_points(selection: Selection, max_context: int) -> tuple[float, ...]:
    """Prompt lengths to sweep: powers of two up to the model's context, plus the current one."""
    limit = max_context if max_context > 0 else CONTEXT_POINTS[-1]
    points = {p for p in CONTEXT_POINTS if p <= limit} | {selection.input_tokens}
    return tuple(float(p) for p in sorted(points))


def show_intervals(selection: Selection) -> None:
    """Under a runtime profile: each time's 80 % interval and its basis, as
    ``codesign predict --runtime`` prints them; nothing under ``ideal``."""
    found = prediction_intervals(selection)
    if not found:
        return
    lines = []
    for label, key in LABELS:
        interval = found[key]
        if interval.low is None or interval.high is None:
            lines.append(f"**{label}**: no interval ({interval.basis})")
        else:
            lines.append(
                f"**{label}** 80% interval {human_seconds(interval.low)} - "
                f"{human_seconds(interval.high)} ({interval.basis})"
            )
    st.markdown(f"Serving stack `{selection.runtime}`:\n\n" + "\n\n".join(lines))
    st.caption(SCOPE)


def render() -> None:
    """Draw the page."""
    selection = current_selection()
    st.header("Latency and throughput")
    page_intro(
        "TTFT, TPOT, end-to-end latency and throughput of the sidebar's design, the time "
        "of each operator, and TPOT against the context length and the batch.",
        "latency",
    )
    result = checked(prediction, selection)
    model = checked(cached_model, selection.model, selection.model_json)

    row = st.columns(4)
    row[0].metric(
        "TTFT",
        human_seconds(result.ttft_s),
        f"prefill {result.prefill.bound.value}-bound",
        delta_color="off",
        delta_arrow="off",
    )
    row[1].metric(
        "TPOT",
        human_seconds(result.tpot_s),
        f"decode {result.decode.bound.value}-bound",
        delta_color="off",
        delta_arrow="off",
    )
    row[2].metric("End-to-end", human_seconds(result.e2e_s))
    row[3].metric("Throughput", tokens_per_s(result.throughput_tokens_per_s))
    row = st.columns(4)
    row[0].metric("Per device", tokens_per_s(result.throughput_tokens_per_s_per_device))
    row[1].metric("Per request", tokens_per_s(result.request_tokens_per_s))
    row[2].metric("Decode rate", tokens_per_s(result.decode_tokens_per_s))
    row[3].metric("Prefill rate", tokens_per_s(result.prefill_tokens_per_s))
    show_intervals(selection)
    if not result.fits:
        st.warning("Past the capacity wall: these times assume the model fits (see Memory).")

    st.subheader("Per-operator time")
    operators = result.to_frame()
    operators["time_ms"] = operators["time_s"] * 1e3
    operators = operators[["phase", "name", "group", "time_ms", "bound", "flop", "bytes"]]
    show_chart(breakdown_figure(operators), operators, "operator_breakdown", "Time per operator")

    left, right = st.columns(2)
    with left:
        st.subheader("TPOT versus prompt length")
        by_context = checked(
            sweep, selection, "input_tokens", context_points(selection, model.max_context)
        )
        by_context["tpot_ms"] = by_context["tpot_s"] * 1e3
        figure = sweep_figure(
            by_context,
            "input_tokens",
            "tpot_ms",
            "prompt tokens",
            "TPOT (ms)",
            selection.input_tokens,
        )
        show_chart(figure, by_context, "tpot_vs_context", "TPOT against context")
    with right:
        st.subheader("TPOT versus batch")
        batches = tuple(float(b) for b in sorted({*BATCH_OPTIONS, selection.batch}))
        by_batch = checked(sweep, selection, "batch", batches)
        by_batch["tpot_ms"] = by_batch["tpot_s"] * 1e3
        figure = sweep_figure(
            by_batch,
            "batch",
            "tpot_ms",
            "batch",
            "TPOT (ms)",
            selection.batch,
            log_y=True,
            y_format=lambda ms: human_seconds(ms / 1e3),
        )
        show_chart(figure, by_batch, "tpot_vs_batch", "TPOT against batch")
    show_commands(
        selection,
        predict_command(selection),
        predict_command(selection, input_tokens="<prompt tokens>") + " --json",
        predict_command(selection, batch="<batch>") + " --json",
        note="Line 1 prints the cards and the breakdown (`--csv` for the operator table); "
        "lines 2-3 print one point of each sweep (`tpot_s`, `fits`).",
    )


if __name__ == "__main__":
    render()
