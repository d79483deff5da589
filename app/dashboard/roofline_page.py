"""Roofline page: the platform's roofline with every prefill and decode operator."""

from __future__ import annotations

import streamlit as st

from app.charts import ceiling_table, operator_points, roofline_figure
from app.dashboard.common import checked, current_selection, page_intro, show_chart, show_commands
from app.dashboard.state import (
    build_platform,
    hw_show_command,
    predict_command,
    prediction,
)


def render() -> None:
    """Draw the page."""
    selection = current_selection()
    st.header("Roofline")
    page_intro(
        "Every prefill and decode operator of the sidebar's design on the platform's "
        "roofline: its operational intensity, attained FLOP/s and what bounds it.",
        "roofline",
    )
    result = checked(prediction, selection)
    platform = checked(build_platform, selection)
    dtype = platform.compute_dtype_for_bits(max(selection.weight_bits, selection.activation_bits))
    ridge = platform.ridge_point(dtype)
    points, unplotted = operator_points(result)

    columns = st.columns(3)
    columns[0].metric(f"Ridge point ({dtype})", f"{ridge:.4g} FLOP/B")
    columns[1].metric(
        "Prefill OI",
        f"{result.prefill.operational_intensity:.4g} FLOP/B",
        f"{result.prefill.bound.value}-bound",
        delta_color="off",
        delta_arrow="off",
    )
    columns[2].metric(
        "Decode OI",
        f"{result.decode.operational_intensity:.4g} FLOP/B",
        f"{result.decode.bound.value}-bound",
        delta_color="off",
        delta_arrow="off",
    )

    ceiling = ceiling_table(platform, dtype, points)
    title = f"{result.model} on {platform.display_name} ({dtype} peak, main-memory bandwidth)"
    show_chart(roofline_figure(ceiling, points, title), points, "roofline_operators")
    st.caption(
        "Each point is one operator summed over its layers: decode is one step at the mean "
        "context. Attained rate = FLOP / time (time includes launch overhead)."
    )
    if not unplotted.empty:
        names = ", ".join(f"{row.phase}/{row.name}" for row in unplotted.itertuples())
        st.caption(f"Not on the plot (no FLOP or no memory traffic, e.g. collectives): {names}.")
    show_commands(
        selection,
        predict_command(selection) + " --ops",
        hw_show_command(selection),
        note="`--ops` prints every operator's FLOP, bytes, OI, time and bound; "
        "`hw show` prints the peaks and ridge points.",
    )


if __name__ == "__main__":
    render()
