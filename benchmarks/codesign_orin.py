"""Co-design on an edge board: the best architecture near 0.5B parameters at Qwen2.5-0.5B's
speed on a Jetson AGX Orin 64 GB, versus Qwen2.5-0.5B's own architecture under the same law.

Scenario (stated, not tuned): batch 1, 512 prompt tokens, 128 generated, 16-bit
activations and KV cache; Qwen2.5-0.5B served with 16-bit (bf16) weights as shipped.
Loss law: the shipped Chinchilla fit (``data/scaling/chinchilla_law.json``; Hoffmann et
al. 2022 data as digitised by Besiroglu et al. 2024), N counted with embeddings; every
design (and Qwen2.5-0.5B) trained on the same 18T tokens (Qwen2.5's pre-training
budget); low-bit weights act as fewer parameters (Kumar et al. 2024). The law has no
shape terms: it ranks architectures by parameter count alone. All numbers are model
predictions, not measurements.

Run: ``python benchmarks/codesign_orin.py`` (about 5 s on 2 cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import numpy as np

from genz import Precision, Scenario, load_model, predict
from roofline import load_platform
from scaling_law import Architecture, predict_loss, predict_loss_interval
from search.codesign import Constraints, load_space, resolve_law, search_designs

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = Scenario(
    batch=1, input_tokens=512, output_tokens=128, precision=Precision(weight_bits=16.0)
)


def qwen_architecture() -> Architecture:
    """Qwen2.5-0.5B as the law counts it (biases of q/k/v are not counted: 0.006% of N)."""
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


def ratio_interval(law, best: Architecture, bits: float, tokens: float) -> tuple[float, float]:
    """Percentile interval of perplexity(best) / perplexity(Qwen2.5-0.5B) over the law's
    bootstrap parameter samples (both predicted with the same sample)."""
    names = law.law_form.public_names
    ratios = []
    for sample in law.bootstrap_params:
        replicate = dataclasses.replace(
            law, params=dict(zip(names, sample, strict=True)), bootstrap_params=()
        )
        ours = predict_loss(replicate, best, tokens, weight_bits=bits)
        theirs = predict_loss(replicate, qwen_architecture(), tokens)
        ratios.append(math.exp(float(ours) - float(theirs)))
    tail = (1 - law.confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def describe(row) -> str:
    return (
        f"{row['layers']} layers x {row['hidden']} wide, {row['heads']} heads "
        f"({row['kv_heads']} KV), FFN {row['intermediate_size']}, vocab {row['vocab']}, "
        f"{row['weight_bits']:g}-bit weights, {row['params'] / 1e6:.0f}M parameters"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default=str(ROOT / "examples" / "orin_space.yaml"))
    args = parser.parse_args()
    space = load_space(args.space)
    law = resolve_law(space.law)
    tokens = space.law.training_tokens
    assert tokens is not None, "the example fixes the training tokens"

    platform = load_platform("jetson-agx-orin-64gb")
    qwen = predict(load_model("qwen2.5-0.5b"), platform, SCENARIO)
    qwen_loss = predict_loss_interval(law, qwen_architecture(), tokens)
    print("scenario: Jetson AGX Orin 64 GB, batch 1, 512 in / 128 out, 16-bit activations and KV")
    print(f"law: Chinchilla fit, D = {tokens:.3g} tokens for every design (Qwen2.5's budget)")
    print(
        f"Qwen2.5-0.5B (16-bit): TPOT {qwen.tpot_s * 1e3:.3f} ms, "
        f"perplexity {math.exp(float(qwen_loss.loss)):.3f} "
        f"[{math.exp(float(qwen_loss.lower)):.3f}, {math.exp(float(qwen_loss.upper)):.3f}] "
        f"({law.confidence:.0%} bootstrap interval of the law)"
    )

    result = search_designs(space, constraints=Constraints(max_tpot_s=qwen.tpot_s))
    print(f"search: {result.message}, {result.elapsed_s:.1f} s")
    designs = result.designs
    own = designs[
        (designs["layers"] == 24)
        & (designs["hidden"] == 896)
        & (designs["kv_heads"] == 2)
        & (designs["intermediate_size"] == 4864)
        & (designs["weight_bits"] == 16)
    ]
    if len(own) == 1:
        assert np.isclose(own["tpot_s"].iloc[0], qwen.tpot_s, rtol=1e-9), "grid != predict"
        assert np.isclose(own["loss"].iloc[0], float(qwen_loss.loss), rtol=1e-6)
        print("check: Qwen2.5-0.5B's shape is a grid point; grid TPOT and loss match")

    for label, subset in (
        ("same precision (16-bit weights)", designs[designs["weight_bits"] == 16]),
        ("any precision in the space", designs),
    ):
        best = subset.loc[subset["loss"].idxmin()]
        shape = Architecture(
            layers=int(best["layers"]),
            hidden=int(best["hidden"]),
            ffn=int(best["intermediate_size"]),
            heads=int(best["heads"]),
            kv_heads=int(best["kv_heads"]),
            head_dim=int(best["head_dim"]),
            vocab=int(best["vocab"]),
            gated_ffn=space.model.gated_ffn,
            tie_embeddings=space.model.tie_embeddings,
        )
        bits = float(best["weight_bits"])
        interval = predict_loss_interval(law, shape, tokens, weight_bits=bits)
        low, high = ratio_interval(law, shape, bits, tokens)
        ratio = best["perplexity"] / math.exp(float(qwen_loss.loss))
        print(f"\nbest design at TPOT <= {qwen.tpot_s * 1e3:.3f} ms, {label}:")
        print(f"  {describe(best)}")
        print(
            f"  TPOT {best['tpot_s'] * 1e3:.3f} ms, memory {best['footprint_bytes'] / 1e9:.3f} "
            f"GB (decimal), perplexity {best['perplexity']:.3f} "
            f"[{math.exp(float(interval.lower)):.3f}, {math.exp(float(interval.upper)):.3f}]"
        )
        print(
            f"  perplexity ratio best / Qwen2.5-0.5B: {ratio:.4f} [{low:.4f}, {high:.4f}] "
            f"({(1 - ratio) * 100:.1f}% lower; a prediction of the law, not a measurement)"
        )
        edges = [
            name for name in ("layers", "hidden") if best[name] == max(getattr(space.model, name))
        ]
        if edges:
            print(f"  note: at the space's upper bound of {', '.join(edges)}")


if __name__ == "__main__":
    main()
