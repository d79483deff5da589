"""Attach a fitted vocabulary term to a ``chinchilla-shape`` base law.

The result is a ``chinchilla-shape-vocab`` law (`scaling_law.vocab_form`): the base law's
parameters, intervals and bootstrap samples unchanged, the term's three parameters (point
fit, percentile intervals and bootstrap refits paired one to one with the base law's
samples) and the reference vocabulary the base data held constant. Its domain adds the
vocabulary range of the sweep, so `ScalingLaw.unpriced` no longer lists ``vocab`` and a
prediction outside that range is flagged as extrapolated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from roofline import InputError

from .law import ScalingLaw
from .vocab_fit import VocabRuns, VocabTerm
from .vocab_form import CHINCHILLA_SHAPE_VOCAB, VOCAB_PUBLIC_NAMES


def attach_vocab_term(
    base: ScalingLaw,
    term: VocabTerm,
    samples: Sequence[VocabTerm],
    runs: VocabRuns,
    provenance: Mapping[str, Any],
) -> ScalingLaw:
    """``base`` plus the vocabulary term; ``samples`` must pair with its bootstrap samples.

    ``provenance`` (data hash, cross-validation...) is stored as ``metadata.vocab_term``.
    The reference vocabulary is the one ``base.metadata.dimensions`` says its data held.
    """
    if base.form != "chinchilla-shape":
        raise InputError(f"a vocabulary term attaches to a chinchilla-shape law, not {base.form!r}")
    dimensions = dict(base.metadata.get("dimensions", {}))
    held = dict(dimensions.get("held_constant", {}))
    if "vocab" not in held:
        raise InputError("base law: metadata.dimensions.held_constant has no vocab to refer to")
    if base.bootstrap_params and len(samples) != len(base.bootstrap_params):
        raise InputError(
            f"{len(samples)} vocabulary-term samples for {len(base.bootstrap_params)} base samples"
        )
    reference = float(held.pop("vocab"))
    point = (term.curvature, term.optimum, term.exponent, reference)
    values = np.array([(s.curvature, s.optimum, s.exponent) for s in samples], float)
    tail = (1 - base.confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail], axis=0)
    spread = values.std(axis=0, ddof=1)
    names = VOCAB_PUBLIC_NAMES[:3]
    vocab = np.asarray(runs.architecture.vocab, float)
    vocab_range = (float(vocab.min()), float(vocab.max()))
    not_recorded = [name for name in dimensions.get("not_recorded", []) if name != "vocab"]
    metadata = {
        **dict(base.metadata),
        "dimensions": {
            "varied": {**dimensions.get("varied", {}), "vocab": list(vocab_range)},
            "held_constant": held,
            "not_recorded": not_recorded,
        },
        "vocab_term": dict(provenance),
    }
    return ScalingLaw(
        form=CHINCHILLA_SHAPE_VOCAB.name,
        params={**base.params, **dict(zip(VOCAB_PUBLIC_NAMES, point, strict=True))},
        intervals={
            **base.intervals,
            **{n: (float(a), float(b)) for n, a, b in zip(names, low, high, strict=True)},
            "vocab_reference": None,
        },
        standard_errors={
            **base.standard_errors,
            **{n: float(s) for n, s in zip(names, spread, strict=True)},
            "vocab_reference": None,
        },
        fixed=(*base.fixed, "vocab_reference"),
        confidence=base.confidence,
        bootstrap_params=tuple(
            (*sample, s.curvature, s.optimum, s.exponent, reference)
            for sample, s in zip(base.bootstrap_params, samples, strict=True)
        ),
        include_embeddings=base.include_embeddings,
        moe_parameters=base.moe_parameters,
        gamma_w=base.gamma_w,
        reference_bits=base.reference_bits,
        metadata=metadata,
        domain={**base.domain, "vocab": vocab_range},
    )
