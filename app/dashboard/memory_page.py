"""Memory page: capacity footprint (weights + KV + activations) against capacity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.charts import footprint_figure
from app.dashboard.common import checked, current_selection, page_intro, show_chart, show_commands
from app.dashboard.state import Selection, predict_command, prediction, sweep
from app.formatting import human_bytes

#: Largest batch searched for the capacity wall.
MAX_WALL_BATCH = 4096


def capacity_wall_batch(selection: Selection, coarse: pd.DataFrame) -> int | None:
    """Largest batch (<= MAX_WALL_BATCH) whose footprint fits; None if batch 1 does not.

    ``coarse`` is a `sweep` over batch from 1 to MAX_WALL_BATCH; the footprint grows
    with batch, so the wall lies between its last fitting and first failing batch,
    which a second sweep over the integers in between pins down.
    """
    fits = coarse["fits"].astype(bool)
    if not fits.any():
        return None
    low = int(coarse.loc[fits, "batch"].max())
    failing = coarse.loc[~fits & (coarse["batch"] > low), "batch"]
    if failing.empty or int(failing.min()) == low + 1:
        return low
    fine = sweep(selection, "batch", tuple(float(b) for b in range(low, int(failing.min()))))
    return int(fine.loc[fine["fits"].astype(bool), "batch"].max())


def render() -> None:
    """Draw the page."""
    selection = current_selection()
    st.header("Memory: capacity footprint")
    page_intro(
        "Weights, KV cache and activations per device against its capacity, and the "
        "largest batch that fits (the capacity wall).",
        "memory",
    )
    result = checked(prediction, selection)
    fp, verdict = result.footprint, result.capacity

    row = st.columns(5)
    row[0].metric("Weights", human_bytes(fp.weights_bytes))
    row[1].metric("KV cache", human_bytes(fp.kv_cache_bytes))
    row[2].metric("Activations", human_bytes(fp.activation_bytes))
    row[3].metric("Footprint", human_bytes(fp.total_bytes))
    row[4].metric(
        "Capacity",
        human_bytes(verdict.capacity_bytes),
        f"{verdict.utilization:.0%} used",
        delta_color="off",
        delta_arrow="off",
    )
    st.caption("Per device, decimal units (1 GB = 1e9 bytes); KV cache at the final context.")
    if result.fits:
        st.success(f"Fits: {human_bytes(verdict.headroom_bytes)} of headroom per device.")
    else:
        st.error(
            f"Capacity wall: {human_bytes(fp.total_bytes)} needed per device, "
            f"{human_bytes(verdict.capacity_bytes)} available. Would fit: "
            + "; or ".join(result.suggestions)
        )

    batches = np.unique(np.round(np.logspace(0, np.log2(MAX_WALL_BATCH), 60, base=2)))
    points = tuple(float(b) for b in sorted({*batches, selection.batch}))
    table = checked(sweep, selection, "batch", points)
    wall = checked(capacity_wall_batch, selection, table)
    table["weights_gb"] = table["weights_bytes"] / 1e9
    table["kv_cache_gb"] = table["kv_cache_bytes"] / 1e9
    table["activations_gb"] = table["activation_bytes"] / 1e9
    table = table[["batch", "weights_gb", "kv_cache_gb", "activations_gb", "fits"]]
    figure = footprint_figure(table, verdict.capacity_bytes / 1e9, wall, selection.batch)
    show_chart(figure, table, "footprint_vs_batch", "Memory per device against batch")
    if wall is None:
        st.caption("No batch fits: even one request exceeds the capacity.")
    elif wall == MAX_WALL_BATCH:
        st.caption(f"Every batch up to {MAX_WALL_BATCH} fits.")
    else:
        st.caption(f"The capacity wall is at batch {wall}: batch {wall + 1} does not fit.")
    commands = [predict_command(selection)]
    if wall is not None and wall < MAX_WALL_BATCH:
        commands += [
            predict_command(selection, batch=wall),
            predict_command(selection, batch=wall + 1),
        ]
    show_commands(
        selection,
        *commands,
        note="`memory per device` and `capacity wall` lines; the last two bracket the wall.",
    )


if __name__ == "__main__":
    render()
