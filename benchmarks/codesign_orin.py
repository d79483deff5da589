"""Co-design on an edge board with the shape-aware law: the best architecture at
Qwen2.5-0.5B's speed on a Jetson AGX Orin 64 GB, at 16-bit and at 4-bit weights, each
compared with Qwen2.5-0.5B at the *same* precision.

Scenario (stated, not tuned): batch 1, 512 prompt tokens, 128 generated, 16-bit
activations and KV cache (``examples/orin_space.yaml``). Loss law: the shipped
shape-aware fit (``data/scaling/gemstones_law.json``: chinchilla-shape on the Gemstones
cooldown losses, N with embeddings, aspect = hidden / layers); serving-time bits are
post-training quantisation (Kumar et al. 2024's PTQ term, `scaling_law.PTQ_FORM`).
Every design and Qwen2.5-0.5B are trained on the same D tokens (18T, Qwen2.5's budget,
far outside the law's data; a second table uses D = 1e11, inside it, with
``within_data``). Intervals: "param" = 95% bootstrap of the law's parameters (paired: the
same sample for both designs); "form" = min-max over the chosen law and the four other
validated forms (``data/scaling/gemstones_forms``). Sensitivity: the uncalibrated
per-kernel overhead prior of the preset (5 us) set to 0, 2, 5, 10 us, and the shipped
serving-stack profiles (``data/runtimes``; Qwen2.5-0.5B's TPOT recomputed under each, so
budget and designs see the same runtime). Joint band (issue #27): 4,000 draws of (serving
scenario: a kernel-overhead prior or a runtime profile) x (law bootstrap refit) x (PTQ constant
set of ``data/scaling/ptq/ptq_ensemble.json``), the best design within Qwen's TPOT re-chosen in
each draw, at 18T and at the seed paper's 10B tokens; "better" only when the whole 95% band
is below 1. All numbers are model predictions, not measurements.

``--law FILE`` replaces the space's law (the pooled Gemstones + open_lm law:
``data/scaling/gemstones_openlm_law.json``; the validated-forms spread is then the law alone).

Run: ``python benchmarks/codesign_orin.py [--figure out.html] [--law FILE]`` (about 75 s on 2 cores before
the joint band, which adds 36 searches: 34 min in all on this shared machine at load 20).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from genz import (
    Precision,
    RuntimeProfile,
    Scenario,
    list_runtimes,
    load_model,
    load_runtime,
    predict,
)
from roofline import Platform, derive_platform
from scaling_law import (
    Architecture,
    ScalingLaw,
    architecture_training_flops,
    load_ptq_ensemble,
    predict_loss,
    ptq_loss_penalty,
    training_seconds,
)
from search.codesign import (
    CodesignResult,
    Constraints,
    DesignSpace,
    base_fields,
    design_loss_samples,
    law_architecture,
    load_space,
    resolve_forms,
    resolve_law,
    search_designs,
)

ROOT = Path(__file__).resolve().parents[1]
OVERHEADS_US = (0.0, 2.0, 5.0, 10.0)
BITS = (16.0, 4.0)
IN_DATA_TOKENS = 1e11
#: The seed paper's training budget per design (10B tokens), beside Qwen2.5's 18T.
PAPER_TOKENS = 1e10
JOINT_SAMPLES = 4000
#: Design columns that fix a loss (architecture and weight bits).
LOSS_KEY = [
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "intermediate_size",
    "experts",
    "top_k",
    "vocab",
    "ffn_ratio",
    "weight_bits",
]


def serving_scenarios(space: DesignSpace) -> list[tuple[str, DesignSpace]]:
    """The serving-side uncertainty, as equally likely scenarios: the preset's physics at
    each kernel-overhead prior of `OVERHEADS_US`, and every shipped runtime profile (each
    with its own fitted overheads) at the preset's prior; ``ideal`` is left out when the
    space has no profile (it is the physics at the preset's 5 us again, which would count
    that scenario twice), as in `search.codesign.serving_scenarios`."""
    scenarios = [(f"physics, {us:g} us", with_overhead(space, us * 1e-6)) for us in OVERHEADS_US]
    scenarios += [
        (name, with_runtime(space, load_runtime(name)))
        for name in list_runtimes()
        if not (space.hardware.runtime is None and name == "ideal")
    ]
    return scenarios


def joint_band(
    space: DesignSpace, law: ScalingLaw, tokens: float, bits: float, seed: int = 0
) -> dict[str, object]:
    """Best design at Qwen2.5-0.5B's TPOT, its perplexity over Qwen's, sampled jointly over
    (serving scenario: runtime profile or kernel overhead) x (bootstrap refit of the law) x
    (PTQ constant set of data/scaling/ptq/ptq_ensemble.json). In each draw the design is
    re-chosen: the lowest loss of that draw among the designs within Qwen's TPOT of that
    scenario. Returns the 2.5 / 50 / 97.5 percentiles, whether the whole band is below 1,
    and how often each shape wins."""
    changed = dataclasses.replace(space.law, training_tokens=tokens)
    members = load_ptq_ensemble()
    candidates = []
    for label, scenario in serving_scenarios(dataclasses.replace(space, law=changed)):
        platform = scenario.hardware.platforms[0]
        budget = qwen_tpot(platform, bits, scenario.hardware.runtime)
        result = search_designs(scenario, constraints=Constraints(max_tpot_s=budget))
        chosen = result.designs[result.designs["weight_bits"] == bits][LOSS_KEY]
        candidates.append((label, chosen.drop_duplicates()))
    table = pd.concat([c for _, c in candidates]).drop_duplicates().reset_index(drop=True)
    fields = {name: table[name].to_numpy(float) for name in LOSS_KEY[:-1]}
    samples = design_loss_samples(
        law, changed, space.model, fields, table["weight_bits"].to_numpy(float), members
    )
    qwen = design_loss_samples(
        law, changed, space.model, base_fields(space.model), np.array([bits]), members
    )[:, 0]
    index = {tuple(row): i for i, row in enumerate(table.to_numpy(float))}
    rows = [np.array([index[tuple(r)] for r in c.to_numpy(float)], int) for _, c in candidates]
    rng = np.random.default_rng(seed)
    ratios, winners = [], []
    for _ in range(JOINT_SAMPLES):
        scenario = int(rng.integers(len(rows)))
        draw = int(rng.integers(len(samples)))
        pool = rows[scenario]
        if len(pool) == 0:
            continue
        best = pool[int(np.argmin(samples[draw, pool]))]
        ratios.append(math.exp(samples[draw, best] - qwen[draw]))
        winners.append(best)
    low, mid, high = np.percentile(ratios, [2.5, 50, 97.5])
    counts = np.bincount(winners, minlength=len(table))
    top = np.argsort(counts)[::-1][:3]
    return {
        "D tokens": f"{tokens:.3g}",
        "bits": f"{bits:g}",
        "draws": len(ratios),
        "ratio median": f"{mid:.4f}",
        "joint 95%": f"[{low:.4f}, {high:.4f}]",
        "better than Qwen": "yes (whole band < 1)" if high < 1 else "no (band reaches 1)",
        "most chosen": "; ".join(
            f"{shape_text(table.iloc[i])} {counts[i] / len(winners):.0%}" for i in top if counts[i]
        ),
    }


def qwen_architecture() -> Architecture:
    """Qwen2.5-0.5B as the law counts it (q/k/v biases not counted: 0.006% of N)."""
    model = load_model("qwen2.5-0.5b")
    return Architecture(
        layers=model.num_layers,
        hidden=model.hidden_size,
        ffn=model.intermediate_size,
        heads=model.num_heads,
        kv_heads=model.num_kv_heads,
        head_dim=model.head_dim,
        vocab=model.vocab_size,
        gated_ffn=model.gated_ffn,
        tie_embeddings=model.tie_word_embeddings,
    )


def serving_loss(law: ScalingLaw, shape: Architecture, tokens: float, bits: float) -> float:
    """``predict_loss + ptq_loss_penalty`` (the co-design default), nats per token."""
    return float(predict_loss(law, shape, tokens) + ptq_loss_penalty(law, shape, tokens, bits))


def qwen_tpot(platform: Platform, bits: float, runtime: RuntimeProfile | None = None) -> float:
    """genz TPOT of Qwen2.5-0.5B at ``bits``-bit weights (under ``runtime``), seconds."""
    scenario = Scenario(
        batch=1, input_tokens=512, output_tokens=128, precision=Precision(weight_bits=bits)
    )
    return predict(load_model("qwen2.5-0.5b"), platform, scenario, runtime=runtime).tpot_s


def with_runtime(space: DesignSpace, runtime: RuntimeProfile) -> DesignSpace:
    """``space`` with every design served by ``runtime``."""
    return dataclasses.replace(space, hardware=dataclasses.replace(space.hardware, runtime=runtime))


def ratio_intervals(
    law: ScalingLaw,
    forms: Sequence[ScalingLaw],
    ours: Architecture,
    tokens: float,
    bits: float,
) -> tuple[float, float, float, float]:
    """Perplexity ratio (ours / Qwen2.5-0.5B, same bits): the paired 95% bootstrap
    interval of the law's parameters, and the min-max over the validated forms."""
    qwen = qwen_architecture()
    names = law.law_form.public_names
    ratios = []
    for sample in law.bootstrap_params:
        replicate = dataclasses.replace(
            law, params=dict(zip(names, sample, strict=True)), bootstrap_params=()
        )
        difference = serving_loss(replicate, ours, tokens, bits) - serving_loss(
            replicate, qwen, tokens, bits
        )
        ratios.append(math.exp(difference))
    tail = (1 - law.confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    by_form = [
        math.exp(serving_loss(f, ours, tokens, bits) - serving_loss(f, qwen, tokens, bits))
        for f in (law, *forms)
    ]
    return float(low), float(high), min(by_form), max(by_form)


def with_overhead(space: DesignSpace, overhead_s: float) -> DesignSpace:
    """``space`` on its platform with the per-kernel overhead set to ``overhead_s``."""
    (platform,) = space.hardware.platforms
    changed = derive_platform(platform, name=platform.name, kernel_overhead_s=overhead_s)
    return dataclasses.replace(
        space, hardware=dataclasses.replace(space.hardware, platforms=(changed,))
    )


def with_tokens(space: DesignSpace, tokens: float) -> DesignSpace:
    """``space`` with every design trained on ``tokens`` and kept inside the law's data."""
    law = dataclasses.replace(space.law, training_tokens=tokens, within_data=True)
    return dataclasses.replace(space, law=law)


def best_at(designs: pd.DataFrame, bits: float, tpot_s: float) -> pd.Series | None:
    """Lowest-loss design of ``bits``-bit weights with TPOT <= ``tpot_s``."""
    chosen = designs[(designs["weight_bits"] == bits) & (designs["tpot_s"] <= tpot_s)]
    return None if chosen.empty else chosen.loc[chosen["loss"].idxmin()]


def shape_text(row: Mapping[str, Any]) -> str:
    return (
        f"{int(row['layers'])} x {int(row['hidden'])}, {int(row['kv_heads'])} KV, "
        f"FFN {int(row['intermediate_size'])}"
    )


def comparison(
    result: CodesignResult,
    law: ScalingLaw,
    forms: Sequence[ScalingLaw],
    platform: Platform,
    tokens: float,
) -> list[dict[str, object]]:
    """One row per precision: Qwen2.5-0.5B and the best design within its TPOT."""
    space, rows = result.space, []
    runtime = space.hardware.runtime
    qwen = qwen_architecture()
    train_flops = architecture_training_flops(qwen, tokens, space.training.sequence_length)
    peak = space.training.platform.peak("bf16") * space.training.devices
    qwen_mfu = space.training.mfu_of(float(qwen.hidden), float(qwen.layers))
    qwen_train_s = float(training_seconds(train_flops, peak, qwen_mfu))
    for bits in BITS:
        budget = qwen_tpot(platform, bits, runtime)
        qwen_ppl = math.exp(serving_loss(law, qwen, tokens, bits))
        best = best_at(result.designs, bits, budget)
        if best is None:
            missing = "none within the budget"
            rows.append(
                {"bits": f"{bits:g}", "Qwen TPOT ms": f"{budget * 1e3:.3f}", "best design": missing}
            )
            continue
        ours = law_architecture(space.model, best)
        low, high, form_low, form_high = ratio_intervals(law, forms, ours, tokens, bits)
        rows.append(
            {
                "bits": f"{bits:g}",
                "Qwen TPOT ms": f"{budget * 1e3:.3f}",
                "Qwen ppl": f"{qwen_ppl:.3f}",
                "best design": shape_text(best),
                "params M": f"{best['params'] / 1e6:.0f}",
                "TPOT ms": f"{best['tpot_s'] * 1e3:.3f}",
                "ppl": f"{best['perplexity']:.3f}",
                "ratio": f"{best['perplexity'] / qwen_ppl:.4f}",
                "param 95%": f"[{low:.4f}, {high:.4f}]",
                "form min-max": f"[{form_low:.4f}, {form_high:.4f}]",
                "train time / Qwen": f"{best['training_time_s'] / qwen_train_s:.2f}",
                "edge": best["edge_axes"] or "-",
                "outside data": best["outside_domain"] or "-",
            }
        )
    return rows


def print_table(title: str, rows: list[dict[str, object]]) -> None:
    print(f"\n{title}")
    print(pd.DataFrame(rows).to_string(index=False))


def aspect_optimum(law: ScalingLaw) -> tuple[float, float, float]:
    """Width/depth minimising the law's N term at fixed N, ``128 exp(-c1 / (2 c2))``:
    point estimate and the 2.5-97.5 percentiles over the bootstrap samples that have an
    interior optimum (quadratic term > 0; a refit at the bound 0 has none)."""
    names = list(law.law_form.public_names)
    samples = np.array(law.bootstrap_params, float)
    linear, quadratic = names.index("aspect_linear"), names.index("aspect_quadratic")
    point = 128 * math.exp(-law.params["aspect_linear"] / (2 * law.params["aspect_quadratic"]))
    curved = samples[samples[:, quadratic] > 0]
    spread = 128 * np.exp(-curved[:, linear] / (2 * curved[:, quadratic]))
    low, high = np.percentile(spread, [2.5, 97.5])
    return point, float(low), float(high)


def shape_factor(law: ScalingLaw, aspect: float) -> float:
    """The law's multiplier on its N term at width/depth ``aspect``:
    ``exp(c1 u + c2 u^2)``, ``u = log(aspect / 128)`` (the shipped law holds its FFN and
    GQA terms at 0: the Gemstones runs do not vary them)."""
    u = math.log(aspect / 128)
    return math.exp(law.params["aspect_linear"] * u + law.params["aspect_quadratic"] * u * u)


def best_by_budget(designs: pd.DataFrame, bits: float) -> pd.DataFrame:
    """For every TPOT value of the ``bits``-bit designs, the lowest-loss design at most
    that slow (running minimum of loss over designs sorted by TPOT)."""
    part = designs[designs["weight_bits"] == bits].sort_values("tpot_s")
    losses = part["loss"].to_numpy()
    best = np.flatnonzero(losses <= np.minimum.accumulate(losses))
    return part.iloc[best]


def shape_figure(
    result: CodesignResult, optimum: tuple[float, float, float], law: ScalingLaw
) -> go.Figure:
    """Three panels: the best design's width/depth against the TPOT budget (16- and 4-bit);
    the loss side (the law's shape factor on its N term, with bootstrap band); the
    roofline side (TPOT against width/depth of 16-bit designs within 10% of Qwen's N)."""
    point, low, high = optimum
    figure = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=(
            "best design's width/depth vs TPOT budget",
            "loss side: shape factor on A/N^alpha at fixed N",
            "roofline side: TPOT at ~Qwen's N (16-bit)",
        ),
    )
    for bits, color in zip(BITS, ("#1f77b4", "#d62728"), strict=True):
        best = best_by_budget(result.designs, bits)
        figure.add_scatter(
            x=best["tpot_s"] * 1e3,
            y=best["hidden"] / best["layers"],
            mode="lines+markers",
            line={"shape": "hv", "color": color, "width": 1},
            marker={"size": 5},
            name=f"best {bits:g}-bit design",
            text=[f"{r.layers} x {r.hidden}, {r.params / 1e6:.0f}M" for r in best.itertuples()],
            hovertemplate="TPOT <= %{x:.3f} ms<br>%{text}<br>width/depth %{y:.1f}<extra></extra>",
            row=1,
            col=1,
        )
    figure.add_hrect(y0=low, y1=high, fillcolor="green", opacity=0.12, line_width=0, row=1, col=1)
    figure.add_hline(y=point, line_dash="dash", line_color="green", row=1, col=1)
    figure.add_hline(y=896 / 24, line_dash="dot", line_color="grey", row=1, col=1)
    aspect = np.geomspace(4, 200, 200)
    u = np.log(aspect / 128)
    names = list(law.law_form.public_names)
    samples = np.array(law.bootstrap_params, float)
    linear, quadratic = names.index("aspect_linear"), names.index("aspect_quadratic")
    factors = np.exp(np.outer(samples[:, linear], u) + np.outer(samples[:, quadratic], u * u))
    centre = np.exp(law.params["aspect_linear"] * u + law.params["aspect_quadratic"] * u * u)
    band_low, band_high = np.percentile(factors, [2.5, 97.5], axis=0)
    figure.add_scatter(x=aspect, y=band_high, line={"width": 0}, showlegend=False, row=1, col=2)
    figure.add_scatter(
        x=aspect,
        y=band_low,
        fill="tonexty",
        line={"width": 0},
        name="shape factor, bootstrap 95%",
        fillcolor="rgba(0,128,0,0.15)",
        row=1,
        col=2,
    )
    figure.add_scatter(x=aspect, y=centre, name="fitted shape factor", row=1, col=2)
    figure.add_vline(x=point, line_dash="dash", line_color="green", row=1, col=2)
    figure.add_vline(x=896 / 24, line_dash="dot", line_color="grey", row=1, col=2)
    qwen_params = float(qwen_architecture().counts().total)
    near = result.designs[
        (result.designs["weight_bits"] == 16)
        & (np.abs(result.designs["params"] / qwen_params - 1) <= 0.10)
    ]
    figure.add_scatter(
        x=near["hidden"] / near["layers"],
        y=near["tpot_s"] * 1e3,
        mode="markers",
        marker={
            "color": near["layers"],
            "colorscale": "Viridis",
            "showscale": True,
            "colorbar": {"title": "layers", "x": 1.02},
        },
        name="16-bit designs, N within 10% of Qwen's",
        text=[f"{r.layers} x {r.hidden}" for r in near.itertuples()],
        hovertemplate="%{text}<br>width/depth %{x:.1f}<br>TPOT %{y:.3f} ms<extra></extra>",
        row=1,
        col=3,
    )
    # legend entries for the reference lines (drawn as shapes, which have none)
    for name, style in (
        (f"law's optimum width/depth {point:.1f} (bootstrap 95% {low:.1f}-{high:.1f})", "dash"),
        (f"Qwen2.5-0.5B: 24 x 896, width/depth {896 / 24:.1f}", "dot"),
    ):
        color = "green" if style == "dash" else "grey"
        figure.add_scatter(
            x=[None], y=[None], mode="lines", line={"dash": style, "color": color}, name=name
        )
    aspects = [5, 10, 20, 30, 50, 100, 200]
    for column in (1, 2, 3):
        figure.update_xaxes(type="log", row=1, col=column)
    figure.update_xaxes(
        title_text="TPOT budget (ms, batch 1)", tickvals=[0.5, 1, 2, 5, 10], row=1, col=1
    )
    figure.update_yaxes(
        title_text="width / depth (hidden / layers)", type="log", tickvals=aspects, row=1, col=1
    )
    figure.update_xaxes(title_text="width / depth", tickvals=aspects, row=1, col=2)
    figure.update_yaxes(title_text="multiplier on A / N^alpha (1 = none)", row=1, col=2)
    figure.update_xaxes(title_text="width / depth", tickvals=aspects, row=1, col=3)
    figure.update_yaxes(title_text="predicted TPOT (ms, 16-bit)", row=1, col=3)
    figure.update_layout(
        title=(
            "Which shapes the shape-aware law prefers on Jetson AGX Orin 64 GB "
            "(model predictions; batch 1, 512 in / 128 out, D = 18T tokens)"
        ),
        height=600,
        width=1500,
        margin={"t": 110, "b": 130},
        legend={"orientation": "h", "y": -0.22, "x": 0.0},
    )
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default=str(ROOT / "examples" / "orin_space.yaml"))
    parser.add_argument("--figure", help="write the Plotly figure to this .html file")
    parser.add_argument(
        "--law",
        help="loss law file instead of the space's (e.g. data/scaling/gemstones_openlm_law.json)",
    )
    args = parser.parse_args()
    space = load_space(args.space)
    if args.law:
        space = dataclasses.replace(space, law=dataclasses.replace(space.law, path=Path(args.law)))
    tokens = space.law.training_tokens
    assert tokens is not None, "the example fixes the training tokens"
    (preset,) = space.hardware.platforms

    results: dict[float, CodesignResult] = {}
    for overhead_us in OVERHEADS_US:
        changed = with_overhead(space, overhead_us * 1e-6)
        budget = qwen_tpot(changed.hardware.platforms[0], 16.0)
        results[overhead_us] = search_designs(changed, constraints=Constraints(max_tpot_s=budget))
    base_us = preset.kernel_overhead_s * 1e6
    base = results[base_us]
    law, forms = resolve_law(space.law), resolve_forms(space.law)
    print("scenario: Jetson AGX Orin 64 GB, batch 1, 512 in / 128 out, 16-bit activations and KV")
    print(
        f"law: {law.form} fitted on {law.metadata.get('data', {}).get('origin', '?')} "
        f"({space.law.path or 'data/scaling/gemstones_law.json'}), "
        f"D = {tokens:.3g} tokens for every design; serving bits: "
        f"{base.designs['precision_model'].iloc[0]}; {len(forms)} other validated forms"
    )
    print(f"search: {base.message} (kernel overhead {base_us:g} us, the preset's prior)")
    print_table(
        f"best design at Qwen2.5-0.5B's TPOT, same precision (kernel overhead {base_us:g} us; "
        "ratio = perplexity / Qwen2.5-0.5B's, a prediction):",
        comparison(base, law, forms, preset, tokens),
    )

    sensitivity = []
    for overhead_us, result in results.items():
        platform = result.space.hardware.platforms[0]
        for row in comparison(result, law, forms, platform, tokens):
            sensitivity.append(
                {"overhead us": f"{overhead_us:g}"}
                | {
                    k: row.get(k, "-")
                    for k in ("bits", "Qwen TPOT ms", "best design", "ratio", "edge")
                }
            )
    print_table("sensitivity to the per-kernel overhead prior:", sensitivity)
    by_runtime = []
    for name in list_runtimes():
        profile = load_runtime(name)
        served = with_runtime(space, profile)
        budget = qwen_tpot(preset, 16.0, profile)
        result = search_designs(served, constraints=Constraints(max_tpot_s=budget))
        for row in comparison(result, law, forms, preset, tokens):
            by_runtime.append(
                {"runtime": name}
                | {
                    k: row.get(k, "-")
                    for k in ("bits", "Qwen TPOT ms", "best design", "ratio", "edge")
                }
            )
    print_table(
        "sensitivity to the serving-stack profile (data/runtimes; ideal = the preset's physics):",
        by_runtime,
    )

    inside = with_tokens(space, IN_DATA_TOKENS)
    budget = qwen_tpot(preset, 16.0)
    in_data = search_designs(inside, constraints=Constraints(max_tpot_s=budget))
    print_table(
        f"inside the law's data: D = {IN_DATA_TOKENS:.0e} tokens, --within-data "
        f"({in_data.message}):",
        comparison(in_data, law, forms, preset, IN_DATA_TOKENS) if in_data.success else [],
    )
    joint = [
        joint_band(space, law, tokens_value, bits)
        for tokens_value in (tokens, PAPER_TOKENS)
        for bits in BITS
    ]
    domain = law.domain["tokens"]
    print_table(
        f"joint band: serving scenario ({len(serving_scenarios(space))} equally likely: 4 "
        f"kernel-overhead priors + the runtime profiles) x law bootstrap ({len(law.bootstrap_params)}) x "
        f"PTQ constant sets ({len(load_ptq_ensemble())}), {JOINT_SAMPLES} draws, best design "
        f"re-chosen in each; D = {tokens:.3g} is {'inside' if domain[0] <= tokens <= domain[1] else 'OUTSIDE'} "
        f"the law's tokens {domain[0]:.3g}-{domain[1]:.3g}, D = {PAPER_TOKENS:.0e} "
        f"{'inside' if domain[0] <= PAPER_TOKENS <= domain[1] else 'OUTSIDE (just below)'}:",
        joint,
    )
    point, low, high = aspect_optimum(law)
    qwen_aspect = 896 / 24
    cost = shape_factor(law, qwen_aspect) / shape_factor(law, point) - 1
    print(
        f"\nlaw's preferred shape at fixed N: width/depth = {point:.1f} "
        f"(bootstrap 95% {low:.1f}-{high:.1f}); Qwen2.5-0.5B: {qwen_aspect:.1f}, whose "
        f"shape factor on A / N^alpha is {cost:.1%} above the optimum's"
    )
    if args.figure:
        figure = shape_figure(base, (point, low, high), law)
        figure.write_html(Path(args.figure), include_plotlyjs="cdn")
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()
