"""The vocabulary term of the loss law, fitted on Tao et al.'s vocabulary sweep and measured
held out (issue #27 item 1: a law prices a dimension only where its data varied it).

Data: ``data/scaling/vocab/tao2024_runs.csv`` (60 finished runs: 6 families of 33M-1.13B
non-embedding parameters x 10 vocabularies 4,096-96,256, each family on one token budget;
``benchmarks/convert_tao_vocab.py`` writes it from the source's ``exp_data.csv``). Base law:
``data/scaling/gemstones_law.json`` (the co-design default; its data held the vocabulary at
50,304, so it sees V only through the embedding parameters it counts).

Printed, every figure out of sample (nats per token of Tao et al.'s unigram-normalised
loss; each family's loss level is a free offset, so only differences within a family are
scored, `scaling_law.vocab_fit`):

1. held-out error of three models under three schemes: leave one architecture out (one
   family x vocabulary run; its family's offset from the family's other runs), leave one
   vocabulary out (that size in every family), leave one family out (the deviations of its
   ten runs from their mean). Models: the base law plus the fitted term; the base law
   alone (what the shipped law says a vocabulary change does); no vocabulary effect at all;
2. the same leave-one-architecture-out error per family;
3. the term fitted on all runs and its optimal vocabulary per family;
4. the same term with the optimum growing with training tokens D instead of N (the sweep
   cannot tell them apart: D grows as N^1.09 across its families), and the optimal
   vocabulary of each at Qwen2.5-0.5B's size at 10B and 18T tokens.

With ``--out`` the term is refitted on ``--bootstrap`` resamples (runs drawn with
replacement within each family, ``--seed``), paired with the base law's samples, and the
``chinchilla-shape-vocab`` law is written there (``data/scaling/gemstones_vocab_law.json``).

Run: ``python benchmarks/vocab_law.py [--bootstrap 200 --seed 0 --out
data/scaling/gemstones_vocab_law.json]`` (about 5 s; the bootstrap adds about 10 s).
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

from scaling_law import (
    VocabRuns,
    VocabTerm,
    attach_vocab_term,
    bootstrap_terms,
    fit_vocab_term,
    held_out_errors,
    load_law,
    load_vocab_runs,
    optimal_vocab,
    save_law,
    scaling_dir,
)
from scaling_law.vocab_fit import SCHEMES, TAO_RUNS, base_offsets

BASE_LAW = "gemstones_law.json"
SOURCE = {
    "paper": "Tao et al. 2024, Scaling Laws with Vocabulary (NeurIPS 2024, arXiv 2407.13623)",
    "repository": "sail-sg/scaling-with-vocab",
    "path": "exp_data.csv",
    "commit": "6701cc202af8b075a46eef8e9d263b3f2ebe012c",
}


#: Qwen2.5-0.5B (24 x 896, 14 / 2 heads of 64, SwiGLU 4,864): non-embedding parameters, and
#: the co-design's token settings (the seed paper's 10B, Qwen2.5's 18T).
QWEN_NON_EMBEDDING = 357_870_464.0
QWEN_TOKENS = (1e10, 1.8e13)


def within_rmse(runs: VocabRuns, offsets: np.ndarray, term: VocabTerm, size: np.ndarray) -> float:
    """In-sample RMSE of the within-family deviations with ``term`` growing with ``size``."""
    family = runs.family_index
    residual = runs.loss - offsets - term(runs.architecture.vocab, size)
    means = np.bincount(family, weights=residual) / np.bincount(family)
    return float(np.sqrt(np.mean((residual - means[family]) ** 2)))


def summary(errors: np.ndarray) -> dict[str, float]:
    """Mean absolute, root-mean-square and worst absolute error, nats."""
    return {
        "mae": float(np.mean(np.abs(errors))),
        "rmse": float(np.sqrt(np.mean(errors**2))),
        "worst": float(np.max(np.abs(errors))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the chinchilla-shape-vocab law here")
    args = parser.parse_args()

    runs = load_vocab_runs()
    base = load_law(scaling_dir() / BASE_LAW)
    offsets = base_offsets(base, runs)
    zero = np.zeros_like(offsets)
    vocab = np.asarray(runs.architecture.vocab, float)
    print(
        f"{len(runs.loss)} runs, {len(set(runs.family))} families, vocabulary "
        f"{vocab.min():,.0f}-{vocab.max():,.0f}; base law {BASE_LAW}\n"
    )
    models = {
        "base law + vocabulary term": (offsets, True),
        "base law alone (shipped)": (offsets, False),
        "no vocabulary effect": (zero, False),
    }
    table: dict[str, dict[str, dict[str, float]]] = {}
    print("1. held-out error, nats (MAE / RMSE / worst)")
    print(f"   {'model':28s}" + "".join(f"{s:>24s}" for s in SCHEMES))
    per_family = {}
    for label, (offset, term) in models.items():
        table[label] = {}
        cells = []
        for scheme in SCHEMES:
            errors = held_out_errors(runs, offset, scheme, term)
            table[label][scheme] = summary(errors)
            cells.append("{mae:.4f} / {rmse:.4f} / {worst:.3f}".format(**table[label][scheme]))
            if scheme == "architecture":
                per_family[label] = errors
        print(f"   {label:28s}" + "".join(f"{c:>24s}" for c in cells))

    term = fit_vocab_term(runs, offsets)
    params = runs.non_embedding_params
    print("\n2. leave-one-architecture-out MAE per family, nats; 3. fitted optimum")
    print(f"   {'family':8s}{'N non-emb':>12s}{'tokens':>10s}{'term':>8s}{'base':>8s}{'none':>8s}")
    names = list(dict.fromkeys(runs.family.tolist()))
    for name in names:
        rows = runs.family == name
        maes = [np.mean(np.abs(per_family[label][rows])) for label in models]
        best = optimal_vocab(params[rows][0], term.optimum, term.exponent)
        print(
            f"   {name:8s}{params[rows][0]:12.3g}{runs.tokens[rows][0]:10.3g}"
            + "".join(f"{m:8.4f}" for m in maes)
            + f"   V* = {float(best):,.0f}"
        )
    print(
        f"\n   term: curvature {term.curvature:.4f} nats per (ln V)^2, V* = "
        f"{term.optimum:,.0f} (N / 1e8)^{term.exponent:.3f}"
    )
    by_tokens = fit_vocab_term(runs, offsets, size=runs.tokens)
    print(
        "\n4. does the optimum grow with N or with D? (the sweep moves them together)\n"
        f"   with N: in-sample RMSE {within_rmse(runs, offsets, term, params):.4f} nats; "
        f"with D: {within_rmse(runs, offsets, by_tokens, runs.tokens):.4f} nats "
        f"(V* = {by_tokens.optimum:,.0f} (D / 1e8)^{by_tokens.exponent:.3f})"
    )
    for tokens in QWEN_TOKENS:
        with_n = optimal_vocab(QWEN_NON_EMBEDDING, term.optimum, term.exponent)
        with_d = optimal_vocab(tokens, by_tokens.optimum, by_tokens.exponent)
        print(
            f"   Qwen2.5-0.5B's size ({QWEN_NON_EMBEDDING:.3g} non-embedding) at {tokens:.3g} "
            f"tokens: V* = {float(with_n):,.0f} (with N) or {float(with_d):,.0f} (with D)"
        )
    if args.out is None:
        return
    samples = bootstrap_terms(runs, offsets, args.bootstrap, args.seed)
    data_path = scaling_dir() / TAO_RUNS
    provenance = {
        "data": {
            "path": f"data/scaling/{TAO_RUNS.as_posix()}",
            "sha256": hashlib.sha256(data_path.read_bytes()).hexdigest(),
            "source": SOURCE,
            "runs": len(runs.loss),
            "non_embedding_params": [float(params.min()), float(params.max())],
            "tokens": [float(runs.tokens.min()), float(runs.tokens.max())],
        },
        "base_law": f"data/scaling/{BASE_LAW} (parameters unchanged)",
        "loss": "unigram-normalised validation loss (Tao et al.), differences within a family",
        "fit": "least squares on within-family differences, one free offset per family",
        "bootstrap": {"replicates": args.bootstrap, "seed": args.seed, "unit": "run in family"},
        "cross_validation": table,
    }
    law = attach_vocab_term(base, term, samples, runs, provenance)
    print(f"\nwrote {save_law(law, args.out)}")


if __name__ == "__main__":
    main()
