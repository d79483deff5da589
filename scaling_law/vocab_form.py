"""The vocabulary term and the ``chinchilla-shape-vocab`` form that adds it to a shape law.

Tao et al. (2024, "Scaling Laws with Vocabulary", arXiv 2407.13623) trained six model
families (33M-1.13B non-embedding parameters) at ten vocabulary sizes each (4,096-96,256),
every run of a family on the same number of tokens. Within a family the finished loss is
lowest at an intermediate vocabulary that grows with model size (data/scaling/vocab/). The
term that describes it is a parabola in log vocabulary about a size-dependent optimum:

``g(V, N) = c (ln V - m(N))^2``,  ``m(N) = ln V* + gamma ln(N / 1e8)``

with ``N`` the non-embedding parameter count (MoE: as the law counts, active or total),
``c`` the curvature (nats per (ln V)^2, >= 0), ``V*`` the optimal vocabulary of a model
of 1e8 non-embedding parameters and ``gamma`` how fast it grows with N. The embedding
matrices' parameters stay in the base law's N (they are counted there), so the term is
what the vocabulary does beyond adding parameters.

``chinchilla-shape-vocab`` is ``L = L_shape(N, D, shape) + g(V, N) - g(V_ref, N)``:
the shipped shape law `scaling_law.forms.CHINCHILLA_SHAPE` unchanged at the reference
vocabulary ``V_ref`` (the base table's: Gemstones 50,304), so the base law's numbers are
kept exactly there. Units: Tao et al.'s loss is unigram-normalised (``ln p(x) - ln
p_unigram(x)`` per token, Roh et al. 2020), which they use because raw per-token loss is
not comparable across tokenizers; the term transfers its *differences* to the base law's
nats per token. The sum is floored at 1e-9 nats so the log stays finite far outside the
data (where the prediction is flagged as extrapolated anyway).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline import InputError

from .forms import (
    CHINCHILLA_SHAPE,
    Array,
    Features,
    LawForm,
    _columns,
    _exp_scale,
    _log_scale,
    _shape_fixed,
    _shape_log_loss,
    register_form,
)

#: Non-embedding parameter count at which ``V*`` is the optimal vocabulary.
VOCAB_PARAMS_REFERENCE = 1e8
VOCAB_PUBLIC_NAMES = (
    "vocab_curvature",
    "vocab_optimum",
    "vocab_optimum_exponent",
    "vocab_reference",
)
_LOSS_FLOOR = 1e-9
_BASE_SIZE = len(CHINCHILLA_SHAPE.parameter_names)


def vocab_term(
    vocab: ArrayLike,
    non_embedding_params: ArrayLike,
    curvature: float,
    optimum: float,
    exponent: float,
) -> Array:
    """``g(V, N) = c (ln V - ln V* - gamma ln(N / 1e8))^2``, nats (see the module docstring)."""
    centre = np.log(optimum) + exponent * np.log(
        np.asarray(non_embedding_params, float) / VOCAB_PARAMS_REFERENCE
    )
    return curvature * (np.log(np.asarray(vocab, float)) - centre) ** 2


def optimal_vocab(non_embedding_params: ArrayLike, optimum: float, exponent: float) -> Array:
    """The term's optimal vocabulary ``V* (N / 1e8)^gamma`` at ``N`` non-embedding params."""
    ratio = np.asarray(non_embedding_params, float) / VOCAB_PARAMS_REFERENCE
    return optimum * ratio**exponent


def _vocab_log_loss(theta: Array, features: Features) -> Array:
    c, log_optimum, exponent, log_reference = _columns(theta, _BASE_SIZE + 4)[_BASE_SIZE:]
    centre = log_optimum + exponent * np.log(
        features["non_embedding_params"] / VOCAB_PARAMS_REFERENCE
    )
    log_vocab = np.log(features["vocab"])
    shift = c * ((log_vocab - centre) ** 2 - (log_reference - centre) ** 2)
    loss = np.exp(_shape_log_loss(theta, features)) + shift
    return np.log(np.maximum(loss, _LOSS_FLOOR))


def _to_public(theta: Array) -> Array:
    out = _exp_scale(theta)
    out[..., _BASE_SIZE + 1] = np.exp(out[..., _BASE_SIZE + 1])
    out[..., _BASE_SIZE + 3] = np.exp(out[..., _BASE_SIZE + 3])
    return out


def _from_public(values: Array) -> Array:
    out = _log_scale(values)
    for index in (_BASE_SIZE + 1, _BASE_SIZE + 3):
        if np.any(~(out[..., index] > 0)):
            raise InputError("vocab_optimum and vocab_reference must be > 0")
        out[..., index] = np.log(out[..., index])
    return out


def _vocab_fixed(features: Features) -> dict[int, float]:
    """The shape form's held coefficients; ``V_ref`` held at the data's median vocabulary,
    and the whole term held (curvature 0) when the vocabulary takes fewer than 3 values."""
    fixed = _shape_fixed(features)
    log_vocab = np.log(features["vocab"])
    reference = float(np.median(log_vocab))
    fixed[_BASE_SIZE + 3] = reference
    if np.unique(np.round(log_vocab, 9)).size < 3:
        fixed.update({_BASE_SIZE: 0.0, _BASE_SIZE + 1: reference, _BASE_SIZE + 2: 0.0})
    return fixed


CHINCHILLA_SHAPE_VOCAB = register_form(
    LawForm(
        name="chinchilla-shape-vocab",
        parameter_names=(
            *CHINCHILLA_SHAPE.parameter_names,
            "c_v",
            "log_vocab_optimum",
            "vocab_optimum_exponent",
            "log_vocab_reference",
        ),
        public_names=(*CHINCHILLA_SHAPE.public_names, *VOCAB_PUBLIC_NAMES),
        log_loss=_vocab_log_loss,
        initial_grid=np.hstack(
            [
                CHINCHILLA_SHAPE.initial_grid,
                np.tile(
                    [0.0, np.log(3e4), 0.0, np.log(3e4)], (len(CHINCHILLA_SHAPE.initial_grid), 1)
                ),
            ]
        ),
        required_features=(
            *CHINCHILLA_SHAPE.required_features,
            "vocab",
            "non_embedding_params",
        ),
        bounds=(
            *CHINCHILLA_SHAPE.bounds,  # type: ignore[misc]
            (0.0, None),
            (None, None),
            (None, None),
            (None, None),
        ),
        to_public=_to_public,
        from_public=_from_public,
        fixed_parameters=_vocab_fixed,
        batched=True,
        description=(
            "chinchilla-shape plus c [(ln V - m(N))^2 - (ln V_ref - m(N))^2], "
            "m(N) = ln V* + gamma ln(N_non-embedding / 1e8) (vocabulary term, Tao et al. 2024)"
        ),
    )
)
