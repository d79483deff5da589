"""Hardware designer page: build an accelerator that need not exist (compute, memory
technology and count, SRAM, node, dies) and see its speed, cost, area and TDP on the
sidebar's model and scenario, with the Pareto front of nearby designs.

Every number comes from `search.economics.evaluate_design` (the function behind
``codesign hw design --model ... --json``); the page only draws widgets and charts.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from app.charts import design_pareto_figure
from app.dashboard.bounded import bounded_number, bounded_slider
from app.dashboard.common import (
    checked,
    current_selection,
    page_intro,
    show_chart,
    show_commands,
    tokens_per_s,
)
from app.dashboard.state import UPLOADED_CONFIG_NAME, Selection, build_model, build_scenario
from app.formatting import human_bytes, human_rate, human_seconds
from genz import ARCHITECTURE_AXES, AXES
from roofline import (
    FLAG_BOUNDS_BY_COMMAND,
    HARDWARE_BOUNDS,
    AcceleratorDesign,
    InputError,
    MemorySpec,
    memory_technologies,
    process_nodes,
)
from search.codesign import pareto_mask
from search.economics import DesignEvaluation, evaluate_design

#: Compute and memory-count multipliers of the Pareto sweep around the chosen design.
COMPUTE_FACTORS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
UNIT_FACTORS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
#: Largest memory count the slider offers (the most any technology in the data allows,
#: DDR5's 64 channels); a count beyond the chosen technology's limit is the library's error.
MAX_UNITS_SLIDER = 64
#: Most compute dies the page offers (the table allows up to 1,024: codesign hw design).
MAX_DIES = 8
#: Chart y choices: label -> (column, Pareto sense, tick format).
Y_CHOICES = {
    "$ per million output tokens": ("usd_per_million_output_tokens", "min", "${:.3g}"),
    "perf / cost (tok/s per device per US$)": ("perf_per_cost", "max", "{:.3g}"),
}


@dataclass(frozen=True)
class DesignChoice:
    """The page's widget values (plain numbers, as the CLI flags take them)."""

    compute_tflops: float = 600.0
    technology: str = "hbm3e"
    units: int = 6
    sram_mb: float = 50.0
    node: str = "n5"
    dies: int = 1

    def design(self) -> AcceleratorDesign:
        """The `roofline.AcceleratorDesign` (raises `InputError` on a bad combination)."""
        return AcceleratorDesign(
            compute_tflops={"bf16": float(self.compute_tflops)},
            memory=MemorySpec(self.technology, int(self.units)),
            sram_mb=float(self.sram_mb),
            node=self.node,
            dies=int(self.dies),
        )


def design_command(choice: DesignChoice, selection: Selection) -> str:
    """The ``codesign hw design ... --model ... --json`` call printing the page's numbers."""
    model = UPLOADED_CONFIG_NAME if selection.model_json is not None else selection.model
    parts = [
        "codesign",
        "hw",
        "design",
        "--compute-tflops",
        f"{choice.compute_tflops:g}",
        "--memory",
        f"{choice.technology}:{choice.units}",
        "--sram-mb",
        f"{choice.sram_mb:g}",
        "--node",
        choice.node,
        "--dies",
        str(choice.dies),
        "--model",
        model,
    ]
    for flag, value in (
        ("--batch", selection.batch),
        ("--input", selection.input_tokens),
        ("--output", selection.output_tokens),
        ("--wbits", selection.weight_bits),
        ("--abits", selection.activation_bits),
        ("--kvbits", selection.kv_bits),
        ("--tp", selection.tp),
        ("--pp", selection.pp),
        ("--ep", selection.ep),
        ("--dp", selection.dp),
    ):
        parts += [flag, f"{value:g}"]
    for name in ("parallel_samples", "beam_width", "images"):  # only when not the default
        if getattr(selection, name) != AXES[name].default:
            parts += [AXES[name].flag, str(getattr(selection, name))]
    for name, axis in ARCHITECTURE_AXES.items():
        if getattr(selection, name) is not None:
            parts += [axis.flag, str(getattr(selection, name))]
    return " ".join(shlex.quote(p) for p in [*parts, "--json"])


def scenario_title(selection: Selection) -> str:
    """``'llama-3.1-8b, batch 1, 1024 in / 128 out, w16a16kv16, tp 1 pp 1'``: what the
    chart was drawn for (the sidebar's hardware preset plays no part here)."""
    model = UPLOADED_CONFIG_NAME if selection.model_json is not None else selection.model
    return (
        f"{model}, batch {selection.batch}, {selection.input_tokens} in / "
        f"{selection.output_tokens} out, w{selection.weight_bits:g}a{selection.activation_bits:g}"
        f"kv{selection.kv_bits:g}, tp {selection.tp} pp {selection.pp}"
    )


def evaluate(choice: DesignChoice, selection: Selection) -> DesignEvaluation:
    """`evaluate_design` of the choice on the sidebar's model and scenario."""
    return evaluate_design(choice.design(), build_model(selection), build_scenario(selection))


def sweep_choices(choice: DesignChoice) -> list[DesignChoice]:
    """Compute x memory count around ``choice`` (its technology's unit limit respected)."""
    limit = memory_technologies()[choice.technology].max_units
    units = sorted({min(limit, max(1, round(choice.units * f))) for f in UNIT_FACTORS})
    return [
        dataclasses.replace(choice, compute_tflops=choice.compute_tflops * f, units=n)
        for f in COMPUTE_FACTORS
        for n in units
    ]


def pareto_table(choice: DesignChoice, selection: Selection) -> tuple[pd.DataFrame, int]:
    """One row per swept design that builds (TPOT, $/Mtok, perf/cost, fits, Pareto flags
    for both y choices), and how many were skipped as impossible (e.g. beyond the reticle)."""
    rows, skipped = [], 0
    for point in sweep_choices(choice):
        try:
            result = evaluate(point, selection)
        except InputError:
            skipped += 1
            continue
        rows.append(
            {
                "compute_tflops": point.compute_tflops,
                "memory_units": point.units,
                "tpot_s": result.tpot_s,
                "throughput_tokens_per_s": result.throughput_tokens_per_s,
                "usd_per_million_output_tokens": result.usd_per_million_output_tokens,
                "perf_per_cost": result.perf_per_cost,
                "device_cost_usd": result.device_cost_usd,
                "area_mm2": result.area_mm2,
                "tdp_w": result.tdp_w,
                "fits": result.fits,
                "chosen": point.compute_tflops == choice.compute_tflops
                and point.units == choice.units,
                "label": f"{point.compute_tflops:g} TFLOP/s, {point.units} x {point.technology}",
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table, skipped
    usable = table["fits"].astype(bool) & table["usd_per_million_output_tokens"].notna()
    for column, sense, _ in Y_CHOICES.values():
        flags = np.zeros(len(table), dtype=bool)
        if usable.any():
            values = table.loc[usable, ["tpot_s", column]].to_numpy(dtype=float)
            flags[usable.to_numpy()] = pareto_mask(values, ["min", sense])
        table[f"pareto_{column}"] = flags
    return table, skipped


def _controls() -> DesignChoice:
    """The design widgets, with the resulting memory bandwidth and capacity under them."""
    defaults = DesignChoice()
    technologies = list(memory_technologies())
    nodes = list(process_nodes())
    left, middle, right = st.columns(3)
    compute = bounded_slider(
        left,
        HARDWARE_BOUNDS["peak_tflops"],
        "Compute, TFLOP/s (dense bf16)",
        low=10.0,
        high=5000.0,
        value=defaults.compute_tflops,
        step=10.0,
        format="%.0f",
        key="hwd_compute_tflops",
    )
    node = left.selectbox("Process node", nodes, index=nodes.index(defaults.node), key="hwd_node")
    technology = middle.selectbox(
        "Memory technology",
        technologies,
        index=technologies.index(defaults.technology),
        key="hwd_technology",
    )
    units = middle.slider(
        "Memory count (HBM stacks or 32-bit channels)",
        1,
        MAX_UNITS_SLIDER,
        defaults.units,
        key="hwd_units",
        help=f"most per package: {', '.join(f'{n} {t.max_units}' for n, t in memory_technologies().items())}",
    )
    sram = bounded_slider(
        right,
        FLAG_BOUNDS_BY_COMMAND[("hw design", "--sram-mb")],
        "On-die SRAM, MB",
        command="hw design",
        low=0.0,
        high=1000.0,
        value=defaults.sram_mb,
        step=5.0,
        format="%.0f",
        key="hwd_sram_mb",
    )
    dies = bounded_number(
        right,
        FLAG_BOUNDS_BY_COMMAND[("hw design", "--dies")],
        "Compute dies per package",
        command="hw design",
        high=MAX_DIES,
        value=defaults.dies,
        step=1,
        key="hwd_dies",
    )
    choice = DesignChoice(float(compute), technology, int(units), float(sram), node, int(dies))
    memory = checked(MemorySpec, choice.technology, choice.units)
    middle.caption(
        f"{human_rate(memory.bandwidth_bytes_per_s, 'B/s')}, "
        f"{human_bytes(memory.capacity_bytes)} (decimal) at {memory.pin_rate_gbps:g} Gb/s per pin"
    )
    return choice


def render() -> None:
    """Draw the page."""
    selection = current_selection()
    st.header("Hardware designer: build an accelerator")
    page_intro(
        "A device that need not exist, from compute, memory, SRAM, node and dies: its "
        "speed on the sidebar's model and scenario, manufacturing cost, die area and TDP, "
        "and the Pareto front of the designs around it.",
        "hardware-designer",
    )
    choice = _controls()
    result = checked(evaluate, choice, selection)

    row = st.columns(6)
    row[0].metric("TPOT", human_seconds(result.tpot_s))
    row[1].metric("Throughput", tokens_per_s(result.throughput_tokens_per_s))
    usd = result.usd_per_million_output_tokens
    row[2].metric("$ per Mtok", "n/a" if usd is None else f"${usd:.4g}")
    row[3].metric("Area", f"{result.area_mm2:,.0f} mm²")
    row[4].metric("TDP", f"{result.tdp_w:,.0f} W")
    row[5].metric("Device cost", f"US${result.device_cost_usd:,.0f}")
    st.caption(
        f"{result.devices} device(s); die {result.die_area_mm2:,.0f} mm² at "
        f"{result.yield_fraction:.1%} yield; cost = dies US${result.die_usd:,.0f} + memory "
        f"US${result.memory_usd:,.0f} + package US${result.package_usd:,.0f} + board "
        f"US${result.board_usd:,.0f} (manufacturing: no margin, NRE or software). $ per "
        "Mtok amortises that cost over 4 years plus electricity at $0.10/kWh; TDP is every "
        "unit at peak."
    )
    if not result.fits:
        st.warning(
            "The model does not fit in this design's memory at this scenario: add memory "
            "units or devices (tp/pp in the sidebar)."
        )

    st.subheader("Pareto front: compute x memory count around this design")
    y_label = st.radio("y axis", list(Y_CHOICES), horizontal=True, key="hwd_pareto_y")
    column, _, tick = Y_CHOICES[y_label]
    table, skipped = pareto_table(choice, selection)
    if table.empty:
        st.info("No design of the sweep can be built (every one exceeds a limit).")
    else:
        points = table.assign(pareto=table[f"pareto_{column}"])
        figure = design_pareto_figure(points, column, y_label, tick.format)
        show_chart(
            figure,
            points.drop(columns=["label"]),
            "design_pareto",
            f"Designs around {choice.compute_tflops:g} TFLOP/s, {choice.units} x "
            f"{choice.technology}, {choice.node}: {scenario_title(selection)}",
            for_sidebar=False,
        )
        notes = [
            f"{len(table)} designs: compute x {', '.join(f'{f:g}' for f in COMPUTE_FACTORS)}, "
            f"memory count x {', '.join(f'{f:g}' for f in UNIT_FACTORS)} (rounded, within "
            f"{choice.technology}'s limit); Pareto-optimal: no other fitting design is both "
            "faster and better on the y axis."
        ]
        if skipped:
            notes.append(f"{skipped} swept design(s) could not be built (e.g. beyond the reticle).")
        st.caption(" ".join(notes))
    show_commands(
        selection,
        design_command(choice, selection),
        note="`evaluation` holds TPOT, throughput, $ per Mtok, area, TDP and device cost; "
        "each swept point is the same call with its --compute-tflops and --memory.",
    )


if __name__ == "__main__":
    render()
