"""Out-of-source check of the loss laws' extrapolation in tokens: how much loss a model
gains from training 20 -> 320-640 tokens per parameter, predicted by the shipped Gemstones
law (beta fitted on one decade of tokens), its beta-prior variant and the Chinchilla-data
law, against the over-trained runs of Gadre et al. 2024 (``data/scaling/overtrained/``,
three training sets, 11M-1.4B parameters; none of the laws saw them).

At a fixed N the N term and E cancel from a loss difference, so a law's predicted drop is
``B (D_20^-beta - D_max^-beta)`` whatever its data's tokenizer and loss level: the check
isolates the D term, the part the co-design extrapolates (18T tokens for a 0.5B model).
Printed: every (training set, size) with a run at 20 tokens per parameter (x1) and one at
>= 320, the observed drop and each law's predicted / observed; then per law the median
ratio and the geometric-mean factor error ``exp(mean |ln ratio|)``. Losses: the runs'
in-distribution Paloma validation loss (see ``data/scaling/overtrained/README.md``).

Run: ``python benchmarks/overtraining_check.py`` (a second).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scaling_law import load_law, load_scaling_csv

ROOT = Path(__file__).resolve().parents[1]
LAWS = {
    "shipped": "gemstones_law.json",
    "beta prior": "gemstones_law_beta_prior.json",
    "Chinchilla data": "chinchilla_law.json",
}
TABLES = ("openlm_c4", "openlm_redpajama", "openlm_refinedweb")
BASE_TOKENS_PER_PARAMETER = 20.0
MIN_LONG_TOKENS_PER_PARAMETER = 320.0


def pairs(name: str) -> list[tuple[float, float, float, float]]:
    """``(N, D at x1, D at the longest run, observed loss drop)`` per size of one table."""
    columns = load_scaling_csv(ROOT / "data" / "scaling" / "overtrained" / f"{name}.csv").columns
    ratio = columns["tokens"] / columns["params"]
    out = []
    for params in np.unique(columns["params"]):
        mine = columns["params"] == params
        base = mine & np.isclose(ratio, BASE_TOKENS_PER_PARAMETER, rtol=0.05)
        longest = mine & (ratio == ratio[mine].max())
        if not base.any() or ratio[mine].max() < MIN_LONG_TOKENS_PER_PARAMETER:
            continue
        drop = float(columns["loss"][base][0] - columns["loss"][longest][0])
        out.append(
            (
                float(params),
                float(columns["tokens"][base][0]),
                float(columns["tokens"][longest][0]),
                drop,
            )
        )
    return out


def main() -> None:
    laws = {label: load_law(ROOT / "data" / "scaling" / file) for label, file in LAWS.items()}
    ratios: dict[str, list[float]] = {label: [] for label in laws}
    print(
        f"{'table':<18} {'N':>8} {'D/N':>9} {'observed':>9}  " + "  ".join(f"{k:>15}" for k in laws)
    )
    for name in TABLES:
        for params, short, long, drop in pairs(name):
            cells = []
            for label, law in laws.items():
                b, beta = law.params["B"], law.params["beta"]
                ratio = b * (short**-beta - long**-beta) / drop
                ratios[label].append(ratio)
                cells.append(f"{ratio:>14.2f}x")
            print(
                f"{name:<18} {params / 1e6:>7.0f}M {short / params:>3.0f}->{long / params:<4.0f} "
                f"{drop:>9.4f}  " + "  ".join(cells)
            )
    print()
    for label, values in ratios.items():
        array = np.array(values)
        factor = float(np.exp(np.mean(np.abs(np.log(array)))))
        print(
            f"{label:<16} beta {laws[label].params['beta']:.3f}: median predicted / observed drop "
            f"{np.median(array):.2f}, geometric-mean factor error {factor:.2f} over {len(array)} sizes"
        )


if __name__ == "__main__":
    main()
