"""Chinchilla-form fit on Epoch AI's 245 runs versus the published replication, and the
time to predict the loss of a million candidate architectures.

Run: ``python benchmarks/scaling_fit.py [--bootstrap 1000] [--seed 0] [--starts 24]``.

Published values: Besiroglu, Erdil, Barnett, You (2024), "Chinchilla Scaling: A
replication attempt", arXiv 2404.10102 (same data, Huber delta 1e-3 on log-loss,
grid of starts, five highest-loss runs dropped, 4,000 bootstrap resamples).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from scaling_law import Architecture, fit_law, load_scaling_csv, predict_loss

PUBLISHED = {  # value, bootstrap standard error
    "A": (482.01, 124.58),
    "B": (2085.43, 1293.23),
    "E": (1.8172, 0.03),
    "alpha": (0.3478, 0.02),
    "beta": (0.3658, 0.02),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--starts", type=int, default=24, help="0: every grid point")
    args = parser.parse_args()

    data = load_scaling_csv("chinchilla")
    start = time.perf_counter()
    fit = fit_law(
        data,
        "chinchilla",
        drop_highest_loss=5,
        bootstrap=args.bootstrap,
        n_starts=None if args.starts == 0 else args.starts,
        seed=args.seed,
    )
    fit_seconds = time.perf_counter() - start
    law = fit.law
    level = f"{law.confidence:.0%}"
    print(f"data: {data.origin} (sha256 {data.sha256})")
    print(
        f"fit: {fit.method}, {fit.message}; {fit.points} runs ({fit.excluded} dropped); "
        f"{fit.starts} starts; {fit.bootstrap_replicates} bootstrap replicates "
        f"({fit.bootstrap_failures} failed); seed {args.seed}; {fit_seconds:.1f} s"
    )
    print()
    print(
        f"{'param':<6} {'published (SE)':>20} {'fitted':>10} {'bootstrap SE':>13} "
        f"{level + ' interval':>24} {'|diff|/pub SE':>14} {'pub in interval':>16}"
    )
    for name, (value, error) in PUBLISHED.items():
        ours, interval = law.params[name], law.intervals[name]
        spread = law.standard_errors[name]
        shown = "n/a" if interval is None else f"[{interval[0]:.4g}, {interval[1]:.4g}]"
        inside = "n/a" if interval is None else str(interval[0] <= value <= interval[1])
        print(
            f"{name:<6} {value:>11.4g} ({error:>6.4g}) {ours:>10.4g} "
            f"{spread if spread is not None else float('nan'):>13.4g} {shown:>24} "
            f"{abs(ours - value) / error:>14.2f} {inside:>16}"
        )
    print()
    residuals, cv = fit.residuals, fit.cross_validation
    print(
        f"residuals: RMSE {residuals.rmse_log_loss:.4f} log-loss ({residuals.rmse_loss:.4f} "
        f"nats), max |log residual| {residuals.max_abs_log_loss:.4f}, R^2 {residuals.r_squared_loss:.4f}"
    )
    print(
        f"{cv.kind} ({cv.folds} folds): RMSE {cv.rmse_log_loss:.4f} log-loss "
        f"({cv.rmse_loss:.4f} nats); Huber objective {fit.objective:.8g}"
    )
    everything = fit_law(data, "chinchilla", bootstrap=0, cross_validation=None, progress=False)
    kept = ", ".join(f"{k}={v:.4g}" for k, v in everything.params.items())
    print(f"all 245 runs (no outliers dropped): {kept}")

    print()
    rng = np.random.default_rng(0)
    count = 1_000_000
    heads = rng.choice([8, 16, 32, 64], count)
    layers = rng.integers(4, 128, count)
    ffn = heads * 128 * rng.choice([3, 4], count)
    kv_heads = heads // rng.choice([1, 4, 8], count)
    tokens = 10 ** rng.uniform(10, 13, count)
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        candidates = Architecture(
            layers=layers,
            hidden=heads * 128,
            ffn=ffn,
            heads=heads,
            kv_heads=kv_heads,
            gated_ffn=True,
            experts=8,
            top_k=2,
        )
        loss = predict_loss(law, candidates, tokens)
        timings.append(time.perf_counter() - start)
    print(
        f"predict {count:,} architectures (validate, count parameters, evaluate the law): "
        f"best {min(timings):.3f} s of 3, loss range {loss.min():.3f}..{loss.max():.3f}; "
        f"target < 1 s: {'met' if min(timings) < 1.0 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
