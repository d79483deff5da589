"""Why the shipped law's robust gain at Qwen2.5-0.5B's speed on a Jetson AGX Orin is
<= 0.6% while the seed paper reports 19.42% lower WikiText-2 perplexity: the headroom the
law leaves, in nats, term by term.

Seed paper: Sun et al. 2026, "Hardware Co-Design Scaling Laws via Roofline Modelling for
On-Device LLMs" (arXiv 2602.10377): 1,942 candidate architectures on Jetson Orin, 170
trained for 10B tokens each, 19.42% lower WikiText-2 perplexity than Qwen2.5-0.5B at the
same latency.

At one training budget D for every design (the co-design's setting; the paper trains its
candidates on 10B tokens), ``E`` and ``B / D^beta`` cancel from every loss difference, so
the only architecture term of the shipped law (`data/scaling/gemstones_law.json`) is
``A exp(s(aspect)) / N^alpha``. Printed: the loss a 19.42% perplexity gain needs; that term
at Qwen2.5-0.5B (N as the law counts it, embeddings included); what the best width/depth
at Qwen's N would gain; how many times Qwen's N a design at Qwen's shape would need; the
largest N the Orin space fits within Qwen's 16-bit TPOT (one search,
``examples/orin_space.yaml``) and what the law gives it; and the PTQ term of 4-bit weights
at 10B and 18T tokens (Kumar et al.'s constants), the other term that differs between
designs. All numbers are the law's predictions.

Run: ``python benchmarks/seed_paper_gap.py`` (one co-design search, about 10 s on 2 cores).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from genz import Precision, Scenario, load_model, predict
from scaling_law import Architecture, load_law, ptq_loss_penalty
from scaling_law.compute_optimal import effective_n_coefficient
from search.codesign import Constraints, load_space, search_designs

ROOT = Path(__file__).resolve().parents[1]
SEED_GAIN = 0.1942
TOKENS = {"10B (seed paper)": 1e10, "18T (Qwen2.5)": 18e12}


def qwen() -> Architecture:
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


def shape_factor(params: dict[str, float], aspect: float) -> float:
    u = math.log(aspect / 128)
    return math.exp(params["aspect_linear"] * u + params["aspect_quadratic"] * u * u)


def main() -> None:
    law = load_law(ROOT / "data" / "scaling" / "gemstones_law.json")
    p = dict(law.params)
    base = qwen()
    n = float(base.counts().total)
    aspect = base.hidden / base.layers
    needed = -math.log(1 - SEED_GAIN)
    term = p["A"] * shape_factor(p, aspect) / n ** p["alpha"]
    best_shape = effective_n_coefficient(p) / n ** p["alpha"]
    print(f"19.42% lower perplexity = {needed:.4f} nats lower loss (ratio {1 - SEED_GAIN:.4f})")
    print(
        f"Qwen2.5-0.5B as the law counts it: N = {n / 1e6:.0f}M, width/depth {aspect:.1f}; "
        f"its N term A exp(s) / N^alpha = {term:.4f} nats (the only architecture term at one D)"
    )
    print(
        f"best width/depth at Qwen's N: N term {best_shape:.4f} nats, gain "
        f"{term - best_shape:.4f} nats = {1 - math.exp(best_shape - term):.2%} perplexity"
    )
    if term > needed:
        multiple = (term / (term - needed)) ** (1 / p["alpha"])
        print(
            f"at Qwen's shape, {needed:.4f} nats needs the N term to fall to "
            f"{term - needed:.4f}: {multiple:.1f}x Qwen's N at the same D"
        )
    else:
        print(
            f"even N -> infinity gains only {term:.4f} nats < {needed:.4f}: out of the law's reach"
        )
    space = load_space(ROOT / "examples" / "orin_space.yaml")
    (platform,) = space.hardware.platforms
    scenario = Scenario(
        batch=1, input_tokens=512, output_tokens=128, precision=Precision(weight_bits=16)
    )
    budget = predict(load_model("qwen2.5-0.5b"), platform, scenario).tpot_s
    space = dataclasses.replace(space, law=dataclasses.replace(space.law, training_tokens=1e10))
    result = search_designs(space, constraints=Constraints(max_tpot_s=budget))
    within = result.designs[result.designs["weight_bits"] == 16]
    largest = within.loc[within["params"].idxmax()]
    best = within.loc[within["loss"].idxmin()]
    print(
        f"Orin space, 16-bit, within Qwen's TPOT {budget * 1e3:.2f} ms: largest N "
        f"{largest['params'] / 1e6:.0f}M ({largest['params'] / n:.2f}x Qwen's; "
        f"{int(largest['layers'])} x {int(largest['hidden'])}); lowest-loss design "
        f"{int(best['layers'])} x {int(best['hidden'])}, {best['params'] / n:.2f}x N, "
        f"perplexity ratio {best['ratio_vs_base']:.4f} [{best['ratio_vs_base_low']:.4f}, "
        f"{best['ratio_vs_base_high']:.4f}] vs Qwen at D = 10B"
    )
    short, long = (p["B"] / tokens ** p["beta"] for tokens in TOKENS.values())
    print(
        f"D term B / D^beta at Qwen: {short:.4f} nats at 10B, {long:.4f} at 18T: a 10B-token "
        f"Qwen shape is {short - long:.2f} nats ({math.exp(short - long) - 1:.0%} perplexity) "
        "above the released 18T one"
    )
    for label, tokens in TOKENS.items():
        penalty = float(np.asarray(ptq_loss_penalty(law, base, tokens, 4.0)))
        print(
            f"PTQ term of 4-bit weights on Qwen2.5-0.5B at D = {label}: {penalty:.4f} nats "
            f"({math.exp(penalty) - 1:.2%} perplexity)"
        )


if __name__ == "__main__":
    main()
