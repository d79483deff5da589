"""Compare page: the sidebar's design (A) against another platform or model (B)."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pandas as pd
import streamlit as st

from app.charts import comparison_figure
from app.dashboard.common import (
    checked,
    current_selection,
    show_chart,
    show_commands,
    tokens_per_s,
)
from app.dashboard.state import (
    Selection,
    predict_command,
    prediction,
    with_preset_model,
    with_preset_platform,
)
from app.formatting import human_bytes, human_seconds
from genz import Prediction, list_models
from roofline import list_platforms

PLATFORMS = "two platforms"
MODELS = "two models"


#: Rows of the summary table: label, `Prediction.to_dict` field, formatter (the CLI's units).
SUMMARY_ROWS: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("TTFT", "ttft_s", human_seconds),
    ("TPOT", "tpot_s", human_seconds),
    ("end-to-end", "e2e_s", human_seconds),
    ("throughput", "throughput_tokens_per_s", tokens_per_s),
    ("throughput per device", "throughput_tokens_per_s_per_device", tokens_per_s),
    ("footprint per device (decimal)", "footprint_bytes_per_device", human_bytes),
    ("capacity per device (decimal)", "capacity_bytes_per_device", human_bytes),
)


def summary_table(a: Prediction, b: Prediction) -> pd.DataFrame:
    """Headline numbers of A and B side by side in SI units (seconds, tok/s, bytes), with B / A.

    ``field`` names the `Prediction.to_dict` key, whose suffix is the unit.
    """
    values_a, values_b = a.to_dict(), b.to_dict()
    rows = []
    for label, key, _ in SUMMARY_ROWS:
        value_a, value_b = cast(float, values_a[key]), cast(float, values_b[key])
        rows.append(
            {"metric": label, "field": key, "A": value_a, "B": value_b, "B / A": value_b / value_a}
        )
    return pd.DataFrame(rows)


def readable_summary(table: pd.DataFrame) -> pd.DataFrame:
    """`summary_table` as the CLI prints numbers: ms / s, tok/s, decimal kB-TB; B / A as ``x``."""
    formatters = {key: formatter for _, key, formatter in SUMMARY_ROWS}
    return pd.DataFrame(
        {
            "metric": table["metric"],
            "A": [formatters[k](v) for k, v in zip(table["field"], table["A"], strict=True)],
            "B": [formatters[k](v) for k, v in zip(table["field"], table["B"], strict=True)],
            "B / A": [f"{ratio:.3g}x" for ratio in table["B / A"]],
        }
    )


def bounds_table(a: Prediction, b: Prediction) -> pd.DataFrame:
    """Whether A and B fit, and what bounds each phase."""
    return pd.DataFrame(
        [
            {"": label, "A": str(a.to_dict()[key]), "B": str(b.to_dict()[key])}
            for label, key in (
                ("fits", "fits"),
                ("prefill bound", "prefill_bound"),
                ("decode bound", "decode_bound"),
            )
        ]
    )


def latency_bars(a: Prediction, b: Prediction, names: tuple[str, str]) -> pd.DataFrame:
    """TTFT and TPOT of A and B in milliseconds, long form for grouped bars."""
    return pd.DataFrame(
        [
            {"metric": metric, "label": label, "time_ms": getattr(result, key) * 1e3}
            for metric, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"))
            for label, result in zip(names, (a, b), strict=True)
        ]
    )


def decode_operator_bars(a: Prediction, b: Prediction, names: tuple[str, str]) -> pd.DataFrame:
    """Per-operator decode-step time of A and B in milliseconds."""
    rows = []
    for label, result in zip(names, (a, b), strict=True):
        for op in result.decode.operators:
            rows.append({"metric": op.name, "label": label, "time_ms": op.time_s * 1e3})
    return pd.DataFrame(rows)


def _other(options: list[str], current: str, preferred: str) -> int:
    choice = preferred if preferred != current and preferred in options else None
    if choice is None:
        choice = next(name for name in options if name != current)
    return options.index(choice)


def pick_b(selection: Selection, mode: str) -> Selection:
    """The B design chosen on this page (a preset, unscaled for platforms)."""
    if mode == PLATFORMS:
        options = list_platforms()
        name = st.selectbox(
            "Platform B (as shipped, no scale factors)",
            options,
            index=_other(options, selection.hw, "a100-sxm-80gb"),
            key="compare_hw",
        )
        return with_preset_platform(selection, name)
    options = list_models()
    name = st.selectbox(
        "Model B (same bits and parallelism)",
        options,
        index=_other(options, selection.model, "qwen2.5-7b"),
        key="compare_model",
    )
    return with_preset_model(selection, name)


def render() -> None:
    """Draw the page."""
    selection = current_selection()
    st.header("Compare")
    mode = st.radio("Compare", (PLATFORMS, MODELS), horizontal=True, key="compare_mode")
    other = pick_b(selection, mode)
    result_a = checked(prediction, selection)
    result_b = checked(prediction, other)
    names = (
        f"A: {result_a.model} / {result_a.platform}",
        f"B: {result_b.model} / {result_b.platform}",
    )

    left, right = st.columns(2)
    for column, name, result in ((left, names[0], result_a), (right, names[1], result_b)):
        column.markdown(f"**{name}**")
        column.metric("TTFT", human_seconds(result.ttft_s))
        column.metric("TPOT", human_seconds(result.tpot_s))
        column.metric("Throughput", tokens_per_s(result.throughput_tokens_per_s))
    summary = summary_table(result_a, result_b)
    st.dataframe(readable_summary(summary), hide_index=True)
    st.download_button(
        "Download compare_summary.csv (SI units: seconds, tok/s, bytes)",
        summary.to_csv(index=False).encode("utf-8"),
        file_name="compare_summary.csv",
        mime="text/csv",
        key="csv-compare_summary",
        on_click="ignore",
    )
    st.dataframe(bounds_table(result_a, result_b), hide_index=True)
    latency = latency_bars(result_a, result_b, names)
    show_chart(comparison_figure(latency, "time_ms", "Latency (ms)"), latency, "compare_latency")
    operators = decode_operator_bars(result_a, result_b, names)
    show_chart(
        comparison_figure(operators, "time_ms", "Decode step by operator (ms)"),
        operators,
        "compare_decode_operators",
    )
    show_commands(selection, predict_command(selection), predict_command(other), note="A, then B.")


if __name__ == "__main__":
    render()
