"""Co-design page: the Pareto frontier of a design space (``search.search_designs``).

Shown only when ``search.codesign`` is importable. The page searches a space file
(a packaged example or an uploaded YAML, chosen in the sidebar, which shows nothing
else here), not a single design: loss
(or perplexity) against TPOT, the frontier highlighted; picking a frontier point
(in the chart or the list) shows its design and offers its config folder as a zip.
Frontier designs outside the loss law's data are drawn as open diamonds and say which
quantities are out of range; "Only inside the law's data" is ``--within-data``.
Every number comes from the ``codesign search`` call shown under the chart.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.charts import bits_color, log_axis
from app.dashboard.bounded import bounded_number
from app.dashboard.common import (
    chart_config,
    checked,
    download_buttons,
    page_intro,
    show_commands,
)
from app.formatting import human_bytes, human_seconds
from roofline import FLAG_BOUNDS, InputError, decode_user_bytes, parse_document
from search.codesign import (
    MAX_SPACE_BYTES,
    CodesignResult,
    Constraints,
    DesignSpace,
    Plan,
    allocation_precision,
    design_files,
    folder_name,
    load_space,
    resolve_law,
    search_designs,
    space_from_dict,
    zip_design,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Packaged spaces larger than this are left out of the menu (the page must stay quick).
MAX_PAGE_POINTS = 100_000
UPLOAD_OPTION = "upload a space YAML..."
UPLOADED_NAME = "space.yaml"
#: Feasible designs drawn behind the frontier (the rest are in the CSV).
MAX_DRAWN = 20_000


@st.cache_data(show_spinner=False)
def example_spaces() -> dict[str, Path]:
    """Packaged example spaces small enough for the page, by file name."""
    found = {}
    for path in sorted(EXAMPLES.glob("*.yaml")):
        try:
            if load_space(path).size <= MAX_PAGE_POINTS:
                found[path.name] = path
        except InputError:  # a broken example must not break the page
            continue
    return found


@st.cache_resource(show_spinner="Searching the design space...", max_entries=32)
def search(
    text: str,
    origin: str,
    objective: str,
    max_memory_gb: float | None,
    within_data: bool = False,
) -> CodesignResult:
    """`search_designs` of the space text with only the page's memory bound (the space's
    own constraints are ignored, as ``--ignore-space-constraints`` does; cache_resource:
    the space holds read-only mappings that pickle rejects; the page never mutates it);
    ``within_data`` as ``--within-data``."""
    space = _space(text, origin)
    constraints = Constraints(
        max_memory_bytes=None if max_memory_gb is None else max_memory_gb * 1e9
    )
    return search_designs(
        space,
        [objective, "tpot"],
        constraints,
        space_constraints=False,
        within_data=True if within_data else None,
    )


def _space(text: str, origin: str) -> DesignSpace:
    document = parse_document(text, origin, fmt="yaml")
    root = EXAMPLES if origin != UPLOADED_NAME else Path.cwd()
    return space_from_dict(document, origin=origin, root=root)


def space_widgets() -> tuple[str, str, str]:
    """Choose a packaged space or upload one (in the sidebar); returns its text, name and
    CLI path."""
    examples = example_spaces()
    # The smallest packaged space opens the page (about 0.1 s; orin_space takes a minute).
    default = (
        "edge_quickstart.yaml" if "edge_quickstart.yaml" in examples else next(iter(examples), None)
    )
    options = [*examples, UPLOAD_OPTION]
    st.session_state.setdefault("codesign_space", default or UPLOAD_OPTION)
    bar = st.sidebar
    bar.header("Design space")
    choice = bar.selectbox("Space file", options, key="codesign_space")
    if choice != UPLOAD_OPTION:
        path = examples[choice]
        return path.read_text(encoding="utf-8"), choice, f"examples/{choice}"
    upload = bar.file_uploader(
        f"Space YAML (at most {MAX_SPACE_BYTES // 1000} kB)", type=["yaml", "yml"]
    )
    if upload is None:
        st.info("Upload a space YAML (see examples/README.md), or pick a packaged one.")
        st.stop()
    try:
        text = decode_user_bytes(
            upload.getvalue(), upload.name, kind="space file", max_bytes=MAX_SPACE_BYTES
        )
    except InputError as error:
        st.error(str(error))
        st.stop()
    return text, UPLOADED_NAME, UPLOADED_NAME


def pareto_figure(
    designs: pd.DataFrame, frontier: pd.DataFrame, y: str, title: str = ""
) -> go.Figure:
    """Feasible designs (grey) and the frontier, one legend entry per weight width (the
    shared `bits_color`, 16-bit blue): ``y`` against TPOT (human time ticks). Filled
    markers lie inside the loss law's data, open diamonds extrapolate beyond it; two
    legend-only entries say so. The legend sits above the plot, clear of the axes."""
    drawn = designs.sample(MAX_DRAWN, random_state=0) if len(designs) > MAX_DRAWN else designs
    label = "loss (nats/token)" if y == "loss" else "perplexity"
    hover = "%{text}<br>TPOT %{x:.4g} s<br>" + label + " %{y:.4g}<extra></extra>"
    traces = [
        go.Scatter(
            x=drawn["tpot_s"],
            y=drawn[y],
            mode="markers",
            name="feasible designs",
            marker={"color": "#c7c7c7", "size": 5},
            hoverinfo="skip",
        )
    ]
    widths = sorted(frontier["weight_bits"].unique(), reverse=True)
    for bits in widths:
        color = bits_color(float(bits))
        part = frontier[frontier["weight_bits"] == bits]
        traces.append(
            go.Scatter(
                x=part["tpot_s"],
                y=part[y],
                mode="markers",
                name=f"frontier, {bits:g}-bit weights",
                customdata=part["rank"],
                text=[hover_text(row) for row in part.to_dict("records")],
                hovertemplate=hover,
                marker={
                    "color": color,
                    "size": 11,
                    "symbol": ["diamond-open" if e else "circle" for e in part["extrapolated"]],
                    "line": {"width": 2, "color": color},
                },
            )
        )
    # Legend-only entries explaining the two marker shapes.
    for name, symbol in (
        ("filled: inside the law's data", "circle"),
        ("open diamond: extrapolated", "diamond-open"),
    ):
        traces.append(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=name,
                marker={"symbol": symbol, "size": 11, "color": "#444444", "line": {"width": 2}},
                hoverinfo="skip",
            )
        )
    layout = {
        "title": {"text": title},
        "xaxis": log_axis(frontier["tpot_s"], "TPOT (log)"),
        "yaxis": {"title": {"text": f"predicted {label}"}},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        "height": 480,
        "margin": {"t": 90},
    }
    return go.Figure(traces, layout)


def failure_message(message: str, within: bool) -> str:
    """The search's "no design" line, explained when ``--within-data`` emptied the space."""
    if within and "within-data" in message:
        return (
            "No design of this space lies inside the loss law's data: every one "
            "extrapolates (a model size, token count or bit width beyond the runs the law "
            "was fitted on) or moves a dimension the law cannot price (GQA ratio, FFN "
            "ratio, vocabulary, experts) away from the base model. Untick 'Only inside "
            "the law's data' to see them, marked as extrapolated or unpriced. "
            f"(The search said: {message})"
        )
    return message


def extrapolation_note(frontier: pd.DataFrame) -> str | None:
    """One line when frontier designs extrapolate beyond the loss law's data: how many,
    and which quantities lie outside it; None when none does."""
    outside = frontier[frontier["extrapolated"].astype(bool)]
    if outside.empty:
        return None
    quantities = sorted(
        {q.strip() for text in outside["outside_domain"] for q in str(text).split(",") if q.strip()}
    )
    every = "All" if len(outside) == len(frontier) else f"{len(outside)} of"
    return (
        f"{every} {len(frontier)} frontier designs extrapolate beyond the loss law's data "
        f"({', '.join(quantities)} outside the range it was fitted on): their loss is the "
        "law's extrapolation, to be read as a trend, not a figure (open diamonds)."
    )


def hover_text(row: dict) -> str:
    """Design label, then what the law extrapolates and which space edges it touches."""
    parts = [str(row["design"])]
    if row["extrapolated"]:
        parts.append(f"extrapolated: {row['outside_domain']} outside the law's data")
    if row["edge"]:
        parts.append(f"edge of the space: {row['edge_axes']}")
    if row.get("unpriced"):
        parts.append(f"unpriced by the law: {row['unpriced_axes']} (vs the base model)")
    return "<br>".join(parts)


def _picked_rank(event: object) -> int | None:
    """Rank of the frontier point clicked in the chart, if any."""
    points = getattr(getattr(event, "selection", None), "points", None) or []
    for point in points:
        data = point.get("customdata") if isinstance(point, dict) else None
        if data is not None:
            return int(data[0] if isinstance(data, list) else data)
    return None


def commands(
    path: str, objective: str, max_memory_gb: float | None, within_data: bool = False
) -> tuple[str, str]:
    """The ``codesign search`` and ``codesign recommend`` calls behind the page."""
    common = ["--space", path, "--objective", f"{objective},tpot", "--ignore-space-constraints"]
    if max_memory_gb is not None:
        common += ["--max-memory-gb", f"{max_memory_gb:g}"]
    if within_data:
        common.append("--within-data")
    search_line = ["codesign", "search", *common, "--frontier-out", "frontier.csv"]
    recommend_line = ["codesign", "recommend", *common, "--top", "5", "--out-dir", "recommended"]
    return (
        " ".join(shlex.quote(p) for p in search_line),
        " ".join(shlex.quote(p) for p in recommend_line),
    )


def render() -> None:
    """Draw the page."""
    st.header("Co-design: Pareto frontier of a design space")
    page_intro(
        "Hardware x architecture x precision x parallelism, each design costed by genz and "
        "scored by the fitted loss law; the space file (sidebar) names its own hardware, "
        "models and scenario. Loss is a prediction, not a measurement",
        "co-design-search",
        page="codesign",
    )
    text, origin, path = space_widgets()
    space = checked(_space, text, origin)
    left, right = st.columns(2)
    objective = left.radio(
        "Quality axis", ("loss", "perplexity"), horizontal=True, key="codesign_y"
    )
    default_memory = space.constraints.max_memory_bytes
    bound = right.checkbox(
        "Bound memory per device", value=default_memory is not None, key="codesign_bound"
    )
    max_memory_gb = bounded_number(
        right,
        FLAG_BOUNDS["--max-memory-gb"],
        "Max memory per device (GB, decimal)",
        command="search",
        value=(default_memory or 8e9) / 1e9,
        step=0.5,
        disabled=not bound,
        key="codesign_memory_gb",
    )
    limit = float(max_memory_gb) if bound else None
    within = left.checkbox(
        "Only inside the law's data (--within-data)", value=False, key="codesign_within_data"
    )
    result = checked(search, text, origin, objective, limit, within)
    search_line, recommend_line = commands(path, objective, limit, within)
    if not result.success:
        st.error(failure_message(result.message, within))
        show_commands(None, search_line)
        return
    st.caption(f"{result.message}; {result.elapsed_s:.2f} s.")
    frontier = result.frontier.sort_values("tpot_s")
    note = extrapolation_note(frontier)
    if note is not None:
        st.warning(note)
    figure = pareto_figure(
        result.designs, frontier, objective, f"Pareto frontier of {path}: {objective} against TPOT"
    )
    event = st.plotly_chart(
        figure,
        config=chart_config("frontier"),
        key="codesign-chart",
        on_select="rerun",
        selection_mode="points",
    )
    download_buttons(figure, result.frontier, "frontier")
    labels = {int(r.rank): f"{int(r.rank)}. {r.design}" for r in result.frontier.itertuples()}
    picked = _picked_rank(event)
    if picked in labels:
        st.session_state["codesign_design"] = picked
    st.session_state.setdefault("codesign_design", 1)
    if st.session_state["codesign_design"] not in labels:
        st.session_state["codesign_design"] = 1
    ranks: list[int] = list(labels)
    rank = st.selectbox(
        "Frontier design (rank 1 = closest to the ideal point)",
        ranks,
        format_func=lambda choice: labels[choice],
        key="codesign_design",
    )
    show_design(result, space, ranks[0] if rank is None else int(rank))
    show_commands(
        None,
        search_line,
        recommend_line,
        note="Line 1 prints the frontier (ranked as here) and writes it as CSV; line 2 writes "
        "config.json, bits.yaml and platform.yaml of the top designs, one folder each.",
    )


def show_design(result: CodesignResult, space: DesignSpace, rank: int) -> None:
    """Cards, config and downloads of one frontier design."""
    row = result.frontier[result.frontier["rank"] == rank].iloc[0].to_dict()
    st.subheader(str(row["design"]))
    cards = st.columns(5)
    cards[0].metric("Parameters", f"{row['params'] / 1e6:,.0f} M")
    cards[1].metric("Perplexity", f"{row['perplexity']:.4g}")
    cards[2].metric("TPOT", human_seconds(row["tpot_s"]))
    cards[3].metric("TTFT", human_seconds(row["ttft_s"]))
    cards[4].metric("Memory", human_bytes(row["footprint_bytes"]))
    st.caption(
        f"{row['platform']}, {row['weight_bits']:g}-bit weights, batch {row['batch']}, "
        f"{row['input_tokens']} in / {row['output_tokens']} out, tp {row['tp']} pp {row['pp']}; "
        "memory per device in decimal GB."
    )
    st.caption(
        f"Loss {row['loss']:.4f} nats/token ({row['precision_model']}); parameter-noise "
        f"interval [{row['loss_param_low']:.4f}, {row['loss_param_high']:.4f}], model-form "
        f"spread [{row['loss_form_min']:.4f}, {row['loss_form_max']:.4f}]. "
        + (
            f"Extrapolated: {row['outside_domain']} outside the law's data. "
            if row["extrapolated"]
            else "Inside the law's data. "
        )
        + (f"Edge of the space: {row['edge_axes']}. " if row["edge"] else "")
        + (
            f"Moves along dimensions the law cannot price: {row['unpriced_axes']} (design / "
            "base model). "
            if row.get("unpriced")
            else ""
        )
        + f"Training (prediction): {row['training_time_s'] / 3600:,.0f} h on "
        f"{space.training.devices} x {space.training.platform.name} at MFU "
        f"{float(space.training.mfu_of(row['hidden'], row['layers'])):.3f} "
        f"({space.training.describe_mfu()})."
    )
    precision = None
    if space.precision.ilp_formats is not None:
        plan = Plan(space, resolve_law(space.law), result.objectives, result.constraints)
        precision = checked(allocation_precision, plan, row)
    files = design_files(space, row, precision)
    folder = folder_name(rank, str(row["design"]))
    with st.expander("config.json"):
        st.code(files["config.json"].decode(), language="json")
    left, right = st.columns(2)
    left.download_button(
        f"Download {folder}.zip (config.json, bits.yaml, platform.yaml, design.json)",
        zip_design(files, folder),
        file_name=f"{folder}.zip",
        mime="application/zip",
        key="download-design-zip",
        on_click="ignore",
    )
    right.download_button(
        "Download config.json",
        files["config.json"],
        file_name="config.json",
        mime="application/json",
        key="download-design-config",
        on_click="ignore",
    )


if __name__ == "__main__":
    render()
