"""Fit the vocabulary term of `scaling_law.vocab_form` on a vocabulary sweep, measure it
held out, and attach it to a shape-aware base law.

Data: `VocabRuns`, finished runs that vary the vocabulary at fixed architecture and tokens
within each family (Tao et al. 2024, ``data/scaling/vocab/tao2024_runs.csv``). Only the
differences between runs of one family are used: each family gets its own free offset (its
loss level, which also absorbs the unigram normalisation and the base law's error for that
size), so the fit asks only what changing V does at fixed non-embedding width, depth and D.

Model of run ``i`` of family ``s``: ``loss_i = k_s + L_base(arch_i, D_s) + g(V_i, N_s)``,
``L_base`` the base law (it sees V only through the embedding parameters it counts) and
``g`` the term (`scaling_law.vocab_form.vocab_term`). Fitted by least squares: for given
``(V*, gamma)`` the curvature and the offsets are linear (curvature clipped at 0), so the
fit is a two-dimensional search over ``(ln V*, gamma)`` from a small grid of starts.

`held_out_errors` gives each run's error in nats predicted by a fit that did not see it:
``scheme='architecture'`` leaves one run (one family x vocabulary) out, its family's offset
from the family's other runs; ``'vocab'`` leaves one vocabulary size out of every family;
``'family'`` leaves a whole family out and scores the predicted deviations of its runs
from their own mean (no offset can be learnt for an unseen family).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError

from .architecture import Architecture
from .data import scaling_dir
from .law import ScalingLaw, predict_loss
from .vocab_form import VOCAB_PARAMS_REFERENCE, vocab_term

Array = NDArray[np.float64]
SCHEMES = ("architecture", "vocab", "family")
TAO_RUNS = Path("vocab") / "tao2024_runs.csv"
MAX_RUNS_BYTES = 5_000_000
_COLUMNS = ("family", "layers", "hidden", "heads", "ffn", "vocab", "tokens", "lossu")
_STARTS = [(np.log(v), g) for v in (4e3, 1.6e4, 6.4e4) for g in (0.0, 0.5)]


@dataclass(frozen=True, eq=False)
class VocabRuns:
    """Finished runs of a vocabulary sweep: family labels, architectures (arrays), training
    tokens and loss (nats per token; Tao et al.'s is unigram-normalised, negative)."""

    family: NDArray[np.str_]
    architecture: Architecture
    tokens: Array
    loss: Array
    origin: str = "<runs>"

    @property
    def family_index(self) -> NDArray[np.int64]:
        """Index of each run's family (families in order of first appearance)."""
        names = list(dict.fromkeys(self.family.tolist()))
        return np.array([names.index(name) for name in self.family], dtype=np.int64)

    @property
    def non_embedding_params(self) -> Array:
        """Non-embedding parameter count of each run (`count_parameters` convention)."""
        return self.architecture.counts().total_non_embedding

    def take(self, index: NDArray[np.int64]) -> VocabRuns:
        """The runs at ``index`` (repeats allowed)."""
        arch = self.architecture
        fields = ("layers", "hidden", "ffn", "heads", "vocab", "gated_ffn", "tie_embeddings")
        columns = {name: np.asarray(getattr(arch, name))[index] for name in fields}
        return VocabRuns(
            self.family[index],
            Architecture(**columns),
            self.tokens[index],
            self.loss[index],
            self.origin,
        )


def load_vocab_runs(path: str | Path | None = None) -> VocabRuns:
    """Read a converted sweep (default the shipped Tao et al. table); SwiGLU FFNs and untied
    embeddings, as in their configs. Bad files raise `InputError` naming the line."""
    source = Path(path) if path is not None else scaling_dir() / TAO_RUNS
    if not source.is_file() or source.stat().st_size > MAX_RUNS_BYTES:
        raise InputError(f"{source}: not a file of at most {MAX_RUNS_BYTES} bytes")
    with source.open(newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    if not records or set(_COLUMNS) - set(records[0]):
        raise InputError(f"{source}: needs the columns {', '.join(_COLUMNS)}")
    values: dict[str, list[float]] = {name: [] for name in _COLUMNS[1:]}
    for line, record in enumerate(records, start=2):
        for name in values:
            try:
                values[name].append(float(record[name]))
            except (TypeError, ValueError):
                raise InputError(f"{source}:{line}: {name} must be a number") from None
    arrays = {name: np.array(column) for name, column in values.items()}
    if np.any(~np.isfinite(arrays["lossu"])) or np.any(arrays["tokens"] <= 0):
        raise InputError(f"{source}: lossu must be finite and tokens > 0")
    architecture = Architecture(
        layers=arrays["layers"],
        hidden=arrays["hidden"],
        ffn=arrays["ffn"],
        heads=arrays["heads"],
        vocab=arrays["vocab"],
        gated_ffn=True,
        tie_embeddings=False,
    )
    family = np.array([record["family"] for record in records])
    return VocabRuns(family, architecture, arrays["tokens"], arrays["lossu"], str(source))


@dataclass(frozen=True)
class VocabTerm:
    """A fitted vocabulary term: curvature (nats per (ln V)^2), optimal vocabulary at 1e8
    non-embedding parameters, and the exponent of its growth with N."""

    curvature: float
    optimum: float
    exponent: float

    def __call__(self, vocab: ArrayLike, non_embedding_params: ArrayLike) -> Array:
        """``g(V, N)`` in nats."""
        return vocab_term(vocab, non_embedding_params, self.curvature, self.optimum, self.exponent)


def base_offsets(law: ScalingLaw, runs: VocabRuns) -> Array:
    """The base law's loss of every run: what the runs' loss differences already owe to the
    embedding parameters the base law counts."""
    return predict_loss(law, runs.architecture, runs.tokens)


def fit_vocab_term(runs: VocabRuns, offsets: Array, size: Array | None = None) -> VocabTerm:
    """Least-squares term on the within-family differences of ``runs.loss - offsets``.

    ``size``: what the optimum grows with, per run (default the non-embedding parameter
    count, the law's `VocabTerm`; e.g. ``runs.tokens`` to ask whether the data can tell
    N from D). The optimum is reported at ``size = 1e8``.
    """
    from scipy.optimize import minimize  # here: importing the package (pages, CLI) skips scipy

    family = runs.family_index
    if np.any(np.bincount(family) < 3):
        raise InputError("the vocabulary term needs >= 3 runs in every family")
    target = _demean(runs.loss - offsets, family)
    log_vocab = np.log(np.asarray(runs.architecture.vocab, float))
    grows_with = runs.non_embedding_params if size is None else np.asarray(size, float)
    log_size = np.log(grows_with / VOCAB_PARAMS_REFERENCE)

    def profile(point: Array) -> tuple[float, float]:
        centre = point[0] + point[1] * log_size
        shape = _demean((log_vocab - centre) ** 2, family)
        curvature = max(0.0, float(shape @ target) / max(float(shape @ shape), 1e-300))
        return curvature, float(np.sum((target - curvature * shape) ** 2))

    best = min(
        (minimize(lambda p: profile(p)[1], start, method="Nelder-Mead") for start in _STARTS),
        key=lambda result: result.fun,
    )
    curvature, _ = profile(best.x)
    return VocabTerm(curvature, float(np.exp(best.x[0])), float(best.x[1]))


def predict_runs(
    train: VocabRuns, train_offsets: Array, test: VocabRuns, test_offsets: Array, term: bool
) -> Array:
    """Loss of ``test`` runs (families seen in ``train``) from a fit on ``train``; without
    ``term`` the base law alone (plus each family's offset)."""
    fitted = fit_vocab_term(train, train_offsets) if term else VocabTerm(0.0, 1.0, 0.0)
    seen = fitted(train.architecture.vocab, train.non_embedding_params)
    predicted = test_offsets + fitted(test.architecture.vocab, test.non_embedding_params)
    residual = train.loss - train_offsets - seen
    for name in np.unique(test.family):
        if not np.any(train.family == name):
            raise InputError(f"family {name!r} has no training run to set its offset")
        predicted[test.family == name] += residual[train.family == name].mean()
    return predicted


def held_out_errors(runs: VocabRuns, offsets: Array, scheme: str, term: bool = True) -> Array:
    """Predicted minus observed loss of every run, each from a fit without it (nats; for
    ``'family'`` both sides are deviations from the held-out family's mean)."""
    if scheme not in SCHEMES:
        raise InputError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    vocab = np.asarray(runs.architecture.vocab, float)
    keys = {"architecture": np.arange(len(runs.loss)), "vocab": vocab, "family": runs.family}
    groups = keys[scheme]
    errors = np.empty(len(runs.loss))
    for group in np.unique(groups):
        test = groups == group
        train = runs.take(np.flatnonzero(~test))
        if scheme == "family":
            fitted = fit_vocab_term(train, offsets[~test]) if term else VocabTerm(0.0, 1.0, 0.0)
            held = runs.take(np.flatnonzero(test))
            shift = offsets[test] + fitted(held.architecture.vocab, held.non_embedding_params)
            errors[test] = (shift - shift.mean()) - (held.loss - held.loss.mean())
        else:
            predicted = predict_runs(
                train, offsets[~test], runs.take(np.flatnonzero(test)), offsets[test], term
            )
            errors[test] = predicted - runs.loss[test]
    return errors


def bootstrap_terms(
    runs: VocabRuns, offsets: Array, replicates: int, seed: int = 0
) -> list[VocabTerm]:
    """Refits on resamples of runs drawn with replacement within each family."""
    if replicates < 1:
        raise InputError(f"replicates must be >= 1, got {replicates}")
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(runs.family_index == g) for g in np.unique(runs.family_index)]
    terms = []
    for _ in range(replicates):
        rows = np.concatenate([rng.choice(m, len(m)) for m in members])
        terms.append(fit_vocab_term(runs.take(rows), offsets[rows]))
    return terms


def _demean(values: Array, groups: NDArray[np.int64]) -> Array:
    """``values`` minus the mean of their group."""
    means = np.bincount(groups, weights=values) / np.bincount(groups)
    return values - means[groups]
