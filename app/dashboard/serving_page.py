"""Serving page: one replica, or disaggregated prefill and decode pools, under load
(continuous batching simulation) with optional shared prefixes: latency percentiles
against the request rate, the prefix-cache hit rate, and KV-cache occupancy and queue
over time."""

from __future__ import annotations

import dataclasses
import math
import shlex
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.charts import log_axis, two_panel_layout
from app.dashboard.bounded import bounded_number, bounded_slider
from app.dashboard.common import (
    checked,
    current_selection,
    page_intro,
    show_chart,
    show_commands,
    tokens_per_s,
)
from app.dashboard.serving_stack_controls import (
    NO_STACK,
    StackFlags,
    applied,
    applied_lines,
    stack_controls,
)
from app.dashboard.state import (
    UPLOADED_CONFIG_NAME,
    Selection,
    build_model,
    build_platform,
    lora_flags,
    runtime_flags,
    use_cases,
)
from app.formatting import human_seconds
from genz import Parallelism, Precision, StepCost, image_tokens, step_cost
from roofline import FLAG_BOUNDS, list_platforms
from search.serving import (
    SLO,
    Replica,
    SchedulerConfig,
    Workload,
    build_replica,
    front_end_seconds,
    kv_link,
    run,
    run_disaggregated,
    step_table_tokens,
    synthetic_workload,
    with_images,
)

POLICY_LABELS = {
    "continuous": "Continuous batching (vLLM / Orca)",
    "chunked": "Chunked prefill (Sarathi-Serve, 512-token budget)",
    "static": "Static batching (32 per batch)",
    "disaggregated": "Disaggregated prefill / decode pools (Splitwise / DistServe)",
}
#: The percentile curves span this range of multiples of the chosen rate.
CURVE_SPAN = (0.25, 2.0)
#: Mantissas of the round rates (requests/s) the curves are drawn at: 1, 1.5, 2, 3, 5, 7
#: x 10^k. A fixed ladder, not multiples of the chosen rate, so that a slider move
#: simulates the new rate only (and a ladder rate entering the span), not six others.
LADDER_MANTISSAS = (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
SEED = 0
#: Spans narrower than the table's ranges, to keep a page's simulation interactive.
MAX_REPLICAS = 16
MAX_PREFIX_TOKENS = 32_768
MAX_PREFIXES = 1000
#: How `search.serving` words a run too short to judge sustainability.
TOO_FEW = "too few arrivals"


@dataclass(frozen=True)
class Traffic:
    """Lengths preset and shared prefixes of the drawn workload (`synthetic_workload`)."""

    use_case: str = "chat"
    prefix_share: float = 0.0
    prefix_tokens: int = 0
    prefix_count: int = 1
    prefix_zipf: float = 1.0


@dataclass(frozen=True)
class Pools:
    """Disaggregated pools: replica counts and hardware presets (None: the sidebar's,
    with its scale factors either way)."""

    prefill_replicas: int = 1
    decode_replicas: int = 1
    prefill_hw: str | None = None
    decode_hw: str | None = None


def _precision(selection: Selection) -> Precision:
    return Precision(
        weight_bits=selection.weight_bits,
        activation_bits=selection.activation_bits,
        kv_bits=selection.kv_bits,
    )


def _parallelism(selection: Selection) -> Parallelism:
    return Parallelism(tp=selection.tp, pp=selection.pp, ep=selection.ep)


# cache_resource: one shared read-only table per key, not a pickled copy per rerun. The
# key is everything the table depends on; the request rate changes only the workload,
# whose lengths set max_tokens (`step_table_tokens`: continuous and chunked batching
# keep one size over most rates).
@st.cache_resource(show_spinner=False, max_entries=16)
def replica_step_cost(
    selection: Selection,
    hw: str,
    max_tokens: int,
    max_sequences: int,
    stack: StackFlags = NO_STACK,
) -> StepCost:
    """`genz.step_cost` of the selection's model on preset ``hw`` (with the selection's
    scale factors and the runtime profile as ``stack`` adapts it), cached across reruns
    and rates."""
    runtime = applied(selection, hw, "continuous", stack).runtime
    return step_cost(
        build_model(selection),
        build_platform(dataclasses.replace(selection, hw=hw)),
        _precision(selection),
        _parallelism(selection),
        max_tokens=max_tokens,
        max_sequences=max_sequences,
        runtime=None if runtime.is_ideal else runtime,
        weight_offload=selection.weight_offload,
        kv_offload=selection.kv_offload,
    )


def _replica(
    selection: Selection,
    hw: str | None,
    policy: str,
    workload: Workload,
    stack: StackFlags = NO_STACK,
) -> Replica:
    """The replica the CLI builds for ``policy`` on preset ``hw`` (None: the sidebar's)
    with ``stack``'s engine release and GEMM rates."""
    hw = hw or selection.hw
    charged = applied(selection, hw, policy, stack)
    runtime = None if charged.runtime.is_ideal else charged.runtime
    config = SchedulerConfig(
        policy=policy,
        max_sequences=32 if policy == "static" else 256,
        max_batched_tokens=512 if policy == "chunked" else 8192,
        request_overhead_s=front_end_seconds(runtime, charged.request_s),
        chunk_overhead_s=charged.chunk_s,
    )
    # Static batching sizes its table by the longest request of each rate's workload
    # (32 x its length: megabytes that rarely repeat), so only the others are cached.
    cost = None
    if policy != "static":
        tokens = step_table_tokens(workload, config)
        cost = replica_step_cost(selection, hw, tokens, config.max_sequences, stack)
    return build_replica(
        build_model(selection),
        build_platform(dataclasses.replace(selection, hw=hw)),
        workload,
        precision=_precision(selection),
        parallelism=_parallelism(selection),
        config=config,
        runtime=runtime,
        cost=cost,
        weight_offload=selection.weight_offload,
        kv_offload=selection.kv_offload,
    )


@st.cache_data(show_spinner="Simulating...", max_entries=64)
def simulate(
    selection: Selection,
    policy: str,
    traffic: Traffic,
    rate: float,
    duration: float,
    slo: SLO,
    pools: Pools,
    stack: StackFlags = NO_STACK,
) -> tuple[dict[str, float], bool, str, pd.DataFrame]:
    """Summary, verdict and (time, KV occupancy, queue) timeline of one run (for pools,
    the decode pool's timeline)."""
    workload = synthetic_workload(
        rate,
        duration,
        use_case_name=traffic.use_case,
        prefix_share=traffic.prefix_share,
        prefix_tokens=traffic.prefix_tokens,
        prefix_count=traffic.prefix_count,
        prefix_zipf=traffic.prefix_zipf,
        seed=SEED,
    )
    if selection.images:  # `serve --images`: a VLM's images in every prompt
        per_image = image_tokens(build_model(selection), selection.images) // selection.images
        workload = with_images(workload, selection.images, per_image)
    if selection.parallel_samples > 1 or selection.beam_width > 1:  # `serve --samples/--beams`
        workload = dataclasses.replace(
            workload, samples=selection.parallel_samples, beams=selection.beam_width
        )
    if policy == "disaggregated":
        prefill = _replica(selection, pools.prefill_hw, "continuous", workload, stack)
        decode = _replica(selection, pools.decode_hw, "continuous", workload, stack)
        n, m = pools.prefill_replicas, pools.decode_replicas
        result = run_disaggregated(
            workload,
            prefill,
            decode,
            kv_link(prefill, decode, n, m),
            slo,
            prefill_replicas=n,
            decode_replicas=m,
        )
    else:
        result = run(workload, _replica(selection, None, policy, workload, stack), slo)
    keep = np.unique(np.linspace(0, len(result.timeline_s) - 1, 600).astype(int))
    timeline = pd.DataFrame(
        {
            "time_s": result.timeline_s[keep],
            "kv_occupancy": result.kv_occupancy[keep],
            "waiting": result.waiting[keep],
        }
    )
    energy = None if result.economics is None else result.economics.j_per_output_token
    summary = {**result.summary, "j_per_output_token": math.nan if energy is None else energy}
    return summary, result.sustainable, result.verdict, timeline


def curve_rates(rate: float) -> tuple[float, ...]:
    """The rates (requests/s) of the percentile curves around ``rate``: every round rate
    of `LADDER_MANTISSAS` within `CURVE_SPAN` times ``rate``, and ``rate`` itself."""
    low, high = CURVE_SPAN[0] * rate, CURVE_SPAN[1] * rate
    ladder = {
        float(f"{mantissa * 10.0**exponent:.6g}")
        for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
        for mantissa in LADDER_MANTISSAS
    }
    return tuple(sorted({r for r in ladder if low * (1 - 1e-9) <= r <= high * (1 + 1e-9)} | {rate}))


@st.cache_data(show_spinner=False, max_entries=64)
def rate_curve(
    selection: Selection,
    policy: str,
    traffic: Traffic,
    rates: tuple[float, ...],
    duration: float,
    slo: SLO,
    pools: Pools,
    stack: StackFlags = NO_STACK,
) -> pd.DataFrame:
    """P50 and P99 TTFT and TPOT (ms), prefix hit rate and sustainability at each of
    ``rates`` (`curve_rates`; each run from `simulate`'s cache when seen before; one
    cache lookup per rerun instead of one per point)."""
    rows = []
    for point_rate in rates:
        point, ok, _, _ = simulate(
            selection, policy, traffic, point_rate, duration, slo, pools, stack
        )
        rows.append(
            {
                "rate": point_rate,
                **{
                    f"{name}_p{p}_ms": point[f"{name}_s_p{p}"] * 1e3
                    for name in ("ttft", "tpot")
                    for p in (50, 99)
                },
                "prefix_hit_rate": point["prefix_hit_rate"],
                "sustainable": ok,
            }
        )
    return pd.DataFrame(rows)


def serve_command(
    selection: Selection,
    policy: str,
    traffic: Traffic,
    rate: float | str,
    duration: float,
    slo: SLO,
    pools: Pools,
    stack: StackFlags = NO_STACK,
) -> str:
    """The ``codesign serve`` call that prints one run of this page."""
    model = UPLOADED_CONFIG_NAME if selection.model_json is not None else selection.model
    parts = ["codesign", "serve", "--model", model, "--hw", selection.hw]
    for flag, value in (
        ("--compute-scale", selection.compute_scale),
        ("--bw-scale", selection.bw_scale),
        ("--capacity-scale", selection.capacity_scale),
        ("--link-bw-scale", selection.link_bw_scale),
    ):
        if value != 1.0:
            parts += [flag, f"{value:g}"]
    parts += ["--wbits", f"{selection.weight_bits:g}", "--abits", f"{selection.activation_bits:g}"]
    parts += ["--kvbits", f"{selection.kv_bits:g}"]
    parts += ["--tp", str(selection.tp), "--pp", str(selection.pp), "--ep", str(selection.ep)]
    for flag, share in (
        ("--weight-offload", selection.weight_offload),
        ("--kv-offload", selection.kv_offload),
    ):
        if share:
            parts += [flag, f"{share:g}"]
    for flag, count in (
        ("--samples", selection.parallel_samples),
        ("--beams", selection.beam_width),
    ):
        if count > 1:
            parts += [flag, str(count)]
    if selection.images:
        parts += ["--images", str(selection.images)]
    for flag, variant in (
        ("--sliding-window", selection.sliding_window),
        ("--attention-layers", selection.attention_layers),
    ):
        if variant is not None:
            parts += [flag, str(variant)]
    parts += lora_flags(selection)
    parts += runtime_flags(selection)
    parts += stack.flags()
    parts += ["--policy", policy, "--use-case", traffic.use_case, "--duration", f"{duration:g}"]
    parts += ["--rate", rate if isinstance(rate, str) else f"{rate:g}", "--seed", str(SEED)]
    if policy == "static":
        parts += ["--max-seqs", "32"]
    if policy == "disaggregated":
        parts += ["--prefill-replicas", str(pools.prefill_replicas)]
        parts += ["--decode-replicas", str(pools.decode_replicas)]
        for flag, hw in (("--prefill-hw", pools.prefill_hw), ("--decode-hw", pools.decode_hw)):
            if hw is not None:
                parts += [flag, hw]
    if traffic.prefix_share > 0 and traffic.prefix_tokens > 0:
        parts += ["--prefix-share", f"{traffic.prefix_share:g}"]
        parts += ["--prefix-tokens", str(traffic.prefix_tokens)]
        parts += ["--prefix-count", str(traffic.prefix_count)]
        parts += ["--prefix-zipf", f"{traffic.prefix_zipf:g}"]
    if slo.ttft_s is not None:
        parts += ["--slo-ttft-p99-s", f"{slo.ttft_s:g}"]
    if slo.tpot_s is not None:
        parts += ["--slo-tpot-p99-ms", f"{slo.tpot_s * 1e3:g}"]
    return " ".join(part if part.startswith("<") else shlex.quote(part) for part in parts)


#: Legend name and colour of each percentile curve: P50 dotted, P99 solid, TTFT blue,
#: TPOT red (the shared chart style names every colour, so the PNG matches the page).
CURVES = {
    "ttft_p50_ms": ("TTFT P50", "#1f77b4", "dot"),
    "ttft_p99_ms": ("TTFT P99", "#1f77b4", "solid"),
    "tpot_p50_ms": ("TPOT P50", "#d62728", "dot"),
    "tpot_p99_ms": ("TPOT P99", "#d62728", "solid"),
}
SLO_COLOR = "#444444"


def percentile_figure(
    table: pd.DataFrame, slo: SLO, title: str = "", chosen_rate: float | None = None
) -> go.Figure:
    """P50 and P99 of TTFT (left panel) and TPOT (right) against the rate, each on its
    own log axis in human time units, with the P99 SLO of each as a labelled dashed line
    and ``chosen_rate`` (the cards' rate) as a dotted vertical line in both panels."""
    traces = []
    for column, (name, color, dash) in CURVES.items():
        panel = "" if column.startswith("ttft") else "2"
        values = table[column].to_numpy() / 1e3
        traces.append(
            go.Scatter(
                x=table["rate"].to_numpy(),
                y=values,
                name=name,
                mode="lines+markers",
                line={"dash": dash, "color": color},
                marker={"color": color, "size": 6},
                customdata=[human_seconds(v) for v in values],
                hovertemplate=f"%{{x:.3g}} requests/s: %{{customdata}}<extra>{name}</extra>",
                xaxis=f"x{panel}",
                yaxis=f"y{panel}",
            )
        )
    panels: list[dict[str, dict[str, object]]] = []
    shapes: list[dict[str, object]] = []
    annotations: list[dict[str, object]] = []
    for panel, limit, label in (("", slo.ttft_s, "TTFT"), ("2", slo.tpot_s, "TPOT")):
        prefix = label.lower()
        if chosen_rate is not None:
            shapes.append(
                {
                    "type": "line",
                    "xref": f"x{panel}",
                    "x0": chosen_rate,
                    "x1": chosen_rate,
                    "yref": f"y{panel} domain",
                    "y0": 0,
                    "y1": 1,
                    "line": {"dash": "dot", "color": "gray"},
                }
            )
        values = [*table[f"{prefix}_p50_ms"] / 1e3, *table[f"{prefix}_p99_ms"] / 1e3]
        if limit is not None:
            values.append(limit)
            shapes.append(
                {
                    "type": "line",
                    "xref": f"x{panel} domain",
                    "x0": 0,
                    "x1": 1,
                    "yref": f"y{panel}",
                    "y0": limit,
                    "y1": limit,
                    "line": {"dash": "dash", "color": SLO_COLOR},
                }
            )
            # On a log axis an annotation's y is the exponent.
            annotations.append(
                {
                    "x": 0.01,
                    "xref": f"x{panel} domain",
                    "y": math.log10(limit),
                    "yref": f"y{panel}",
                    "text": f"P99 {label} SLO {human_seconds(limit)}",
                    "showarrow": False,
                    "xanchor": "left",
                    "yanchor": "bottom",
                    "font": {"color": SLO_COLOR, "size": 12},
                    "bgcolor": "rgba(255,255,255,0.8)",
                }
            )
        panels.append(
            {
                "xaxis": {"title": {"text": "requests/s (Poisson)"}},
                "yaxis": log_axis(values, f"{label} (log)"),
            }
        )
    layout = two_panel_layout(
        ("TTFT", "TPOT"),
        panels[0],
        panels[1],
        title={"text": title},
        shapes=shapes,
        annotations=annotations,
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 60},
        height=420,
    )
    return go.Figure(traces, layout)


def count_step(peak: float, ticks: int = 5) -> int:
    """A whole, round (1-2-5) tick step giving about ``ticks`` ticks from 0 to ``peak``."""
    raw = max(peak / ticks, 1.0)
    decade = 10 ** math.floor(math.log10(raw))
    return int(next(m * decade for m in (1, 2, 5, 10) if m * decade >= raw))


def occupancy_figure(timeline: pd.DataFrame, title: str = "") -> go.Figure:
    """KV-cache occupancy (left axis, share of capacity) and waiting requests (right
    axis, from 0) over the run."""
    figure = go.Figure()
    figure.add_scatter(
        x=timeline["time_s"],
        y=timeline["kv_occupancy"],
        name="KV cache used",
        line={"color": "#1f77b4"},
    )
    figure.add_scatter(
        x=timeline["time_s"],
        y=timeline["waiting"],
        name="waiting requests",
        yaxis="y2",
        line={"color": "#ff7f0e"},
    )
    peak = float(timeline["waiting"].max()) if len(timeline) else 0.0
    figure.update_layout(
        title={"text": title},
        xaxis_title="time, s",
        yaxis={
            "title": "KV cache used (share of capacity)",
            "range": [0, 1.05],
            "tickformat": ".0%",
        },
        yaxis2={
            "title": "waiting requests",
            "overlaying": "y",
            "side": "right",
            "range": [0, max(1.0, 1.05 * peak)],
            "rangemode": "nonnegative",
            "showgrid": False,
            # Whole requests: plotly's own ticks on [0, 1] read 0.19, 0.381, ...
            "tickmode": "linear",
            "tick0": 0,
            "dtick": count_step(peak),
        },
        legend={"orientation": "h", "y": -0.2},
        margin={"t": 60},
    )
    return figure


def pool_controls(selection: Selection) -> Pools:
    """Replica counts and hardware of the prefill and decode pools."""
    row = st.columns(4)
    names = list_platforms()
    here = names.index(selection.hw) if selection.hw in names else 0
    counts = [
        int(
            bounded_number(
                row[k],
                FLAG_BOUNDS[f"--{pool.lower()}-replicas"],
                f"{pool} replicas",
                command="serve",
                high=MAX_REPLICAS,
                value=1,
                key=f"serving_{pool}_replicas",
            )
        )
        for k, pool in enumerate(("Prefill", "Decode"))
    ]
    hws = [
        row[k + 2].selectbox(f"{pool} hardware", names, index=here, key=f"serving_{pool}_hw")
        for k, pool in enumerate(("Prefill", "Decode"))
    ]
    prefill_hw, decode_hw = (None if hw == selection.hw else hw for hw in hws)
    return Pools(counts[0], counts[1], prefill_hw, decode_hw)


def prefix_controls(use_case: str) -> Traffic:
    """Shared prefixes: share of prompts, tokens, count K and Zipf exponent."""
    with st.expander("Shared prefixes (prefix caching)"):
        row = st.columns(4)
        share, tokens, count, zipf = (
            bounded_number(
                column,
                FLAG_BOUNDS[flag],
                label,
                command="serve",
                high=high,
                value=value,
                step=step,
                key=f"serving_prefix_{name}",
            )
            for column, (flag, label, high, value, step, name) in zip(
                row,
                (
                    ("--prefix-share", "Share of prompts", None, 0.0, 0.05, "share"),
                    ("--prefix-tokens", "Prefix tokens", MAX_PREFIX_TOKENS, 1000, 100, "tokens"),
                    ("--prefix-count", "Prefixes K", MAX_PREFIXES, 1, 1, "count"),
                    ("--prefix-zipf", "Zipf exponent", None, 1.0, 0.1, "zipf"),
                ),
                strict=True,
            )
        )
    if share == 0:
        return Traffic(use_case)
    return Traffic(use_case, float(share), int(tokens), int(count), float(zipf))


def render() -> None:
    """Draw the page."""
    selection = current_selection()
    st.header("Serving under load")
    page_intro(
        "One replica (or prefill and decode pools) serving Poisson arrivals with "
        "continuous batching: P50/P99 TTFT and TPOT against the request rate, SLO "
        "attainment, KV-cache use and the queue over the run.",
        "serving",
    )
    controls = st.columns(4)
    policy = controls[0].selectbox(
        "Scheduler",
        list(POLICY_LABELS),
        format_func=POLICY_LABELS.__getitem__,
        key="serving_policy",
    )
    names = sorted(use_cases())
    use_case = controls[1].selectbox("Traffic (use case)", names, index=names.index("chat"))
    ttft_slo = bounded_number(
        controls[2], FLAG_BOUNDS["--slo-ttft-p99-s"], "P99 TTFT SLO, s", command="serve", value=2.0
    )
    tpot_slo = bounded_number(
        controls[3],
        FLAG_BOUNDS["--slo-tpot-p99-ms"],
        "P99 TPOT SLO, ms",
        command="serve",
        value=50.0,
    )
    pools = pool_controls(selection) if policy == "disaggregated" else Pools()
    rate = bounded_slider(
        st,
        FLAG_BOUNDS["--rate"],
        "Request rate, requests/s (Poisson)",
        command="serve",
        low=0.1,
        high=100.0,
        value=10.0,
        step=0.1,
    )
    traffic = prefix_controls(use_case)
    stack = stack_controls(selection)
    duration = 60.0
    slo = SLO(ttft_s=ttft_slo, tpot_s=tpot_slo / 1e3)
    summary, sustainable, verdict, timeline = checked(
        simulate, selection, policy, traffic, rate, duration, slo, pools, stack
    )
    shared = traffic.prefix_share > 0
    row = st.columns(6 if shared else 5)
    row[0].metric("P99 TTFT", human_seconds(summary["ttft_s_p99"]))
    row[1].metric("P99 TPOT", human_seconds(summary["tpot_s_p99"]))
    row[2].metric("Throughput", tokens_per_s(summary["throughput_tokens_per_s"]))
    judged = not verdict.startswith(TOO_FEW)
    requests = int(summary["requests"])
    row[3].metric(
        "SLO met",
        f"{summary['slo_attainment']:.0%}"
        if judged
        else f"{summary['slo_attainment']:.0%} of {requests}",
        help="share of the run's requests within both P99 SLOs"
        + ("" if judged else f" (only {requests} requests: a small sample)"),
    )
    energy = summary["j_per_output_token"]
    row[4].metric(
        "Energy",
        "n/a (no power figure)" if math.isnan(energy) else f"{energy:.3g} J/token",
        help="every device of the run, genz's power model per step (codesign serve prints "
        "the same figure and the power model it used)",
    )
    if shared:
        hits = summary["prefix_hit_rate"]
        row[5].metric(
            "Prefix hit rate",
            "n/a (static batching caches none)" if hits != hits else f"{hits:.1%}",
        )
    if not judged:
        st.info(
            f"Sustainability not judged: {verdict} ({requests} requests in {duration:g} s); "
            "raise the rate for a verdict."
        )
    else:
        (st.success if sustainable else st.error)(verdict)

    rates = curve_rates(rate)
    table = checked(rate_curve, selection, policy, traffic, rates, duration, slo, pools, stack)
    st.subheader("Latency percentiles against the rate")
    where = f"{selection.model} on {selection.hw}, {POLICY_LABELS[policy]}"
    show_chart(
        percentile_figure(
            table, slo, f"Latency percentiles against the rate: {where}", chosen_rate=rate
        ),
        table,
        "serving_percentiles_vs_rate",
    )
    presets = [selection.hw]
    if policy == "disaggregated":
        presets += [pools.prefill_hw or selection.hw, pools.decode_hw or selection.hw]
    for line in checked(applied_lines, selection, policy, stack, presets):
        st.caption(line)
    st.subheader(f"KV cache and queue over the run at {rate:g} requests/s")
    show_chart(
        occupancy_figure(timeline, f"KV cache and queue at {rate:g} requests/s: {where}"),
        timeline,
        "serving_kv_occupancy",
    )
    devices = selection.tp * selection.pp * selection.ep
    mesh = f"{devices} device" + ("" if devices == 1 else "s")
    deployment = f"one replica of {mesh}"
    if policy == "disaggregated":
        deployment = (
            f"{pools.prefill_replicas} prefill replica(s) on {pools.prefill_hw or selection.hw} "
            f"and {pools.decode_replicas} decode replica(s) on "
            f"{pools.decode_hw or selection.hw}, {mesh} each; the plot is the decode pool's"
        )
    prefixes = ""
    if shared:
        prefixes = (
            f"; {traffic.prefix_share:.0%} of prompts start with one of {traffic.prefix_count} "
            f"{traffic.prefix_tokens}-token prefixes (Zipf {traffic.prefix_zipf:g})"
        )
    st.caption(
        f"{duration:g} s of Poisson arrivals, {use_case} lengths (lognormal, CV 0.5), seed "
        f"{SEED}{prefixes}; {deployment}."
    )
    show_commands(
        selection,
        serve_command(selection, policy, traffic, rate, duration, slo, pools, stack),
        serve_command(selection, policy, traffic, "<rate>", duration, slo, pools, stack),
        note="The first prints this rate's figures (the dotted line on the curves); the "
        "second, with each rate of the curve ("
        + ", ".join(f"{r:g}" for r in rates)
        + " requests/s), its points.",
    )


if __name__ == "__main__":
    render()
