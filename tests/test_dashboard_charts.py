"""Legends of the dashboard's discrete choices: one entry per format (or bit width)
present, each cell or point drawn in its entry's colour, and no continuous colour bar."""

from __future__ import annotations

import pandas as pd
import pytest

from app.charts import BITS_COLORS, bits_heatmap_figure, format_colors


def allocation(cells: dict[tuple[int, str], tuple[str, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"layer": layer, "group": group, "format": name, "bits": bits}
            for (layer, group), (name, bits) in cells.items()
        ]
    )


def legend(figure) -> dict[str, str]:
    """Legend entry name -> colour."""
    return {
        t.name: t.marker.color
        for t in figure.data
        if t.type == "scatter" and t.showlegend is not False
    }


def cell_colors(figure) -> dict[tuple[object, object], str]:
    """(layer, group) -> colour the heatmap paints there (its step colour scale at z)."""
    heatmap = next(t for t in figure.data if t.type == "heatmap")
    scale = heatmap.colorscale
    low, high = heatmap.zmin, heatmap.zmax
    colors = {}
    for row, group in enumerate(heatmap.y):
        for column, layer in enumerate(heatmap.x):
            z = heatmap.z[row][column]
            position = (z - low) / (high - low)
            # The last band whose start is at or below the position.
            colors[(layer, group)] = [c for edge, c in scale if edge <= position][-1]
    return colors


def test_heatmap_legend_lists_only_the_formats_present_widest_first() -> None:
    # Candidates were 16, 8 and 4 bits; the solver used no 8-bit format.
    table = allocation(
        {
            (0, "attn_qkv"): ("fp16", 16.0),
            (1, "attn_qkv"): ("int4", 4.0),
            (0, "ffn_down"): ("int4", 4.0),
            (1, "ffn_down"): ("int4", 4.0),
        }
    )
    figure = bits_heatmap_figure(table)
    assert list(legend(figure)) == ["fp16 (16 bits)", "int4 (4 bits)"]
    heatmap = next(t for t in figure.data if t.type == "heatmap")
    assert heatmap.showscale is False  # no continuous 4..16 colour bar


def test_each_cell_has_the_colour_of_its_formats_legend_entry() -> None:
    cells = {
        (0, "attn_qkv"): ("fp16", 16.0),
        (1, "attn_qkv"): ("fp8", 8.0),
        (2, "attn_qkv"): ("int8", 8.0),
        (0, "ffn_down"): ("int4", 4.0),
        (1, "ffn_down"): ("fp8", 8.0),
        (2, "ffn_down"): ("int4", 4.0),
    }
    figure = bits_heatmap_figure(allocation(cells))
    entries = legend(figure)
    painted = cell_colors(figure)
    for (layer, group), (name, bits) in cells.items():
        assert painted[(layer, group)] == entries[f"{name} ({bits:g} bits)"]
    # Two 8-bit formats are told apart.
    assert entries["fp8 (8 bits)"] != entries["int8 (8 bits)"]


def test_format_colours_run_from_the_most_bits_to_the_fewest() -> None:
    colors = format_colors(allocation({(0, "a"): ("int4", 4.0), (1, "a"): ("fp16", 16.0)}))
    assert list(colors) == ["fp16", "int4"]
    assert len(set(colors.values())) == 2
    assert colors == {"fp16": BITS_COLORS[16], "int4": BITS_COLORS[4]}
    single = format_colors(allocation({(0, "a"): ("int8", 8.0)}))
    assert list(single) == ["int8"]


def test_codesign_frontier_legend_is_per_weight_width_and_clear_of_the_plot() -> None:
    pytest.importorskip("search.codesign")
    from app.dashboard.codesign_page import pareto_figure

    frontier = pd.DataFrame(
        {
            "tpot_s": [1e-3, 2e-3, 4e-3, 8e-3],
            "loss": [2.6, 2.5, 2.4, 2.3],
            "weight_bits": [4.0, 4.0, 8.0, 16.0],
            "rank": [1, 2, 3, 4],
            "design": ["a", "b", "c", "d"],
            "extrapolated": [False, True, False, False],
            "outside_domain": ["", "tokens", "", ""],
            "edge": [False, False, True, False],
            "edge_axes": ["", "", "layers=max", ""],
        }
    )
    figure = pareto_figure(frontier, frontier, "loss")
    names = [t.name for t in figure.data]
    assert names == [
        "feasible designs",
        "frontier, 16-bit weights",
        "frontier, 8-bit weights",
        "frontier, 4-bit weights",
        "filled: inside the law's data",
        "open diamond: extrapolated",
    ]
    # The shared per-width colours: 16-bit blue (not a faint yellow), 8 orange, 4 green.
    colors = {t.name: t.marker.color for t in figure.data}
    assert colors["frontier, 16-bit weights"] == BITS_COLORS[16]
    assert colors["frontier, 4-bit weights"] == BITS_COLORS[4]
    # Extrapolated frontier designs are open diamonds and say why in the hover text.
    four_bit = figure.data[3]
    assert list(four_bit.marker.symbol) == ["circle", "diamond-open"]
    assert "tokens outside the law's data" in four_bit.text[1]
    # No colour bar to collide with: colours are legend entries.
    assert all(t.marker.colorbar.title.text is None for t in figure.data)
    assert all(not isinstance(t.marker.color, tuple | list) for t in figure.data)
    # Horizontal legend above the plot area (paper y > 1), not over the right margin.
    assert figure.layout.legend.orientation == "h"
    assert figure.layout.legend.y > 1 and figure.layout.legend.yanchor == "bottom"
    # Each frontier point is in the trace of its width (the click handler reads its rank).
    four = next(t for t in figure.data if t.name == "frontier, 4-bit weights")
    assert list(four.customdata) == [1, 2]


def test_measured_vs_predicted_colours_by_runtime_and_shapes_by_hardware():
    """One trace per runtime x hardware: the runtime's shared colour, the hardware's
    symbol (the same on every runtime), rows without a measurement left out, the y = x
    line over every plotted value, and log axes with human units."""
    from app.charts import RUNTIME_COLORS
    from app.dashboard.measured_chart import measured_vs_predicted_figure
    from app.formatting import human_rate

    frame = pd.DataFrame(
        {
            "runtime": ["vllm", "vllm", "tensorrt-llm", "tensorrt-llm", "vllm"],
            "hardware": ["h100-sxm", "a100-sxm-40gb", "h100-sxm", "a100-sxm-40gb", "h100-sxm"],
            "measured_s": [0.02, 0.5, 0.01, 2.0, float("nan")],
            "predicted_s": [0.03, 0.4, 0.012, 1.5, 9.0],
        }
    )
    figure = measured_vs_predicted_figure(frame, "measured_s", "predicted_s", title="t")
    points = {t.name: t for t in figure.data if t.mode == "markers"}
    assert set(points) == {
        "vllm, h100-sxm",
        "vllm, a100-sxm-40gb",
        "tensorrt-llm, h100-sxm",
        "tensorrt-llm, a100-sxm-40gb",
    }
    assert len(points["vllm, h100-sxm"].x) == 1  # the unmeasured row is not drawn
    for name, trace in points.items():
        runtime, device = name.split(", ")
        assert trace.marker.color == RUNTIME_COLORS[runtime]
        assert trace.marker.symbol == points[f"vllm, {device}"].marker.symbol
    assert points["vllm, h100-sxm"].marker.symbol != points["vllm, a100-sxm-40gb"].marker.symbol
    line = next(t for t in figure.data if t.name == "y = x")
    assert (line.x[0], line.x[-1]) == (0.01, 2.0)
    assert figure.layout.xaxis.type == "log" and figure.layout.yaxis.type == "log"
    assert "ms" in " ".join(figure.layout.xaxis.ticktext)
    rates = frame.assign(measured_s=frame.measured_s * 1e6, predicted_s=frame.predicted_s * 1e6)
    tokens = measured_vs_predicted_figure(
        rates, "measured_s", "predicted_s", formatter=lambda v: human_rate(v, "tok/s")
    )
    assert all(text.endswith("tok/s") for text in tokens.layout.xaxis.ticktext)
