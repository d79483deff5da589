"""Serving page: one replica under load (continuous batching simulation): latency
percentiles against the request rate, and KV-cache occupancy and queue over time."""

from __future__ import annotations

import shlex

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.dashboard_pages.common import checked, current_selection, show_chart, show_commands
from app.dashboard_pages.state import (
    UPLOADED_CONFIG_NAME,
    Selection,
    build_model,
    build_platform,
    use_cases,
)
from genz import Parallelism, Precision
from search.serving import SLO, SchedulerConfig, build_replica, run, synthetic_workload

POLICY_LABELS = {
    "continuous": "Continuous batching (vLLM / Orca)",
    "chunked": "Chunked prefill (Sarathi-Serve, 512-token budget)",
    "static": "Static batching (32 per batch)",
}
#: Rates of the percentile curves, as multiples of the chosen rate.
RATE_MULTIPLES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
SEED = 0


@st.cache_data(show_spinner="Simulating...", max_entries=64)
def simulate(
    selection: Selection, policy: str, use_case: str, rate: float, duration: float, slo: SLO
) -> tuple[dict[str, float], bool, str, pd.DataFrame]:
    """Summary, verdict and (time, KV occupancy, queue) timeline of one run."""
    workload = synthetic_workload(rate, duration, use_case_name=use_case, seed=SEED)
    config = SchedulerConfig(
        policy=policy,
        max_sequences=32 if policy == "static" else 256,
        max_batched_tokens=512 if policy == "chunked" else 8192,
    )
    replica = build_replica(
        build_model(selection),
        build_platform(selection),
        workload,
        precision=Precision(
            weight_bits=selection.weight_bits,
            activation_bits=selection.activation_bits,
            kv_bits=selection.kv_bits,
        ),
        parallelism=Parallelism(tp=selection.tp, pp=selection.pp, ep=selection.ep),
        config=config,
    )
    result = run(workload, replica, slo)
    keep = np.unique(np.linspace(0, len(result.timeline_s) - 1, 600).astype(int))
    timeline = pd.DataFrame(
        {
            "time_s": result.timeline_s[keep],
            "kv_occupancy": result.kv_occupancy[keep],
            "waiting": result.waiting[keep],
        }
    )
    return result.summary, result.sustainable, result.verdict, timeline


def serve_command(
    selection: Selection, policy: str, use_case: str, rate: float | str, duration: float, slo: SLO
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
    parts += ["--policy", policy, "--use-case", use_case, "--duration", f"{duration:g}"]
    parts += ["--rate", rate if isinstance(rate, str) else f"{rate:g}", "--seed", str(SEED)]
    if policy == "static":
        parts += ["--max-seqs", "32"]
    if slo.ttft_s is not None:
        parts += ["--slo-ttft-p99-s", f"{slo.ttft_s:g}"]
    if slo.tpot_s is not None:
        parts += ["--slo-tpot-p99-ms", f"{slo.tpot_s * 1e3:g}"]
    return " ".join(part if part.startswith("<") else shlex.quote(part) for part in parts)


def percentile_figure(table: pd.DataFrame, slo: SLO) -> go.Figure:
    """P50 and P99 of TTFT and TPOT (ms) against the rate, with the SLO lines."""
    figure = go.Figure()
    for column, dash in (("ttft_p50_ms", "dot"), ("ttft_p99_ms", "solid")):
        figure.add_scatter(x=table["rate"], y=table[column], name=column, line={"dash": dash})
    for column, dash in (("tpot_p50_ms", "dot"), ("tpot_p99_ms", "solid")):
        figure.add_scatter(
            x=table["rate"], y=table[column], name=column, line={"dash": dash}, yaxis="y2"
        )
    if slo.ttft_s is not None:
        figure.add_hline(y=slo.ttft_s * 1e3, line_dash="dash", annotation_text="TTFT SLO")
    figure.update_layout(
        xaxis_title="requests/s",
        yaxis={"title": "TTFT, ms", "type": "log"},
        yaxis2={"title": "TPOT, ms", "overlaying": "y", "side": "right", "type": "log"},
        legend={"orientation": "h"},
        margin={"t": 30},
    )
    return figure


def occupancy_figure(timeline: pd.DataFrame) -> go.Figure:
    """KV-cache occupancy and waiting requests over the run."""
    figure = go.Figure()
    figure.add_scatter(x=timeline["time_s"], y=timeline["kv_occupancy"], name="KV occupancy")
    figure.add_scatter(
        x=timeline["time_s"], y=timeline["waiting"], name="waiting requests", yaxis="y2"
    )
    figure.update_layout(
        xaxis_title="time, s",
        yaxis={"title": "KV cache used (share of capacity)", "range": [0, 1.05]},
        yaxis2={"title": "waiting requests", "overlaying": "y", "side": "right"},
        legend={"orientation": "h"},
        margin={"t": 30},
    )
    return figure


def render() -> None:
    """Draw the page."""
    selection = current_selection()
    st.header("Serving under load")
    controls = st.columns(4)
    policy = controls[0].selectbox(
        "Scheduler", list(POLICY_LABELS), format_func=POLICY_LABELS.__getitem__
    )
    names = sorted(use_cases())
    use_case = controls[1].selectbox("Traffic (use case)", names, index=names.index("chat"))
    ttft_slo = controls[2].number_input("P99 TTFT SLO, s", 0.01, 600.0, 2.0)
    tpot_slo = controls[3].number_input("P99 TPOT SLO, ms", 1.0, 10_000.0, 50.0)
    rate = st.slider("Request rate, requests/s (Poisson)", 0.1, 100.0, 10.0, 0.1)
    duration = 60.0
    slo = SLO(ttft_s=ttft_slo, tpot_s=tpot_slo / 1e3)
    summary, sustainable, verdict, timeline = checked(
        simulate, selection, policy, use_case, rate, duration, slo
    )
    row = st.columns(4)
    row[0].metric("P99 TTFT", f"{summary['ttft_s_p99'] * 1e3:.0f} ms")
    row[1].metric("P99 TPOT", f"{summary['tpot_s_p99'] * 1e3:.1f} ms")
    row[2].metric("Throughput", f"{summary['throughput_tokens_per_s']:,.0f} tok/s")
    row[3].metric("SLO met", f"{summary['slo_attainment']:.0%}")
    (st.success if sustainable else st.error)(verdict)

    rows = []
    for multiple in RATE_MULTIPLES:
        point, ok, _, _ = checked(
            simulate, selection, policy, use_case, rate * multiple, duration, slo
        )
        rows.append(
            {
                "rate": rate * multiple,
                **{
                    f"{name}_p{p}_ms": point[f"{name}_s_p{p}"] * 1e3
                    for name in ("ttft", "tpot")
                    for p in (50, 99)
                },
                "sustainable": ok,
            }
        )
    table = pd.DataFrame(rows)
    st.subheader("Latency percentiles against the rate")
    show_chart(percentile_figure(table, slo), table, "serving_percentiles_vs_rate")
    st.subheader(f"KV cache and queue over the run at {rate:g} requests/s")
    show_chart(occupancy_figure(timeline), timeline, "serving_kv_occupancy")
    st.caption(
        f"{duration:g} s of Poisson arrivals, {use_case} lengths (lognormal, CV 0.5), seed "
        f"{SEED}; one replica of {selection.tp * selection.pp * selection.ep} devices."
    )
    show_commands(
        selection,
        serve_command(selection, policy, use_case, rate, duration, slo),
        serve_command(selection, policy, use_case, "<rate>", duration, slo),
        note="The first prints this rate's figures; the second, with each rate of the "
        "curve, its points.",
    )


if __name__ == "__main__":
    render()
