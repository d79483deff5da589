"""Sliding-window attention counts, exact sums over query positions (docs/model.md,
"Attention windows").

A query at 1-based position ``p`` attends to ``min(p, w)`` keys on a windowed layer
(``p`` on a full layer). For a pass of ``q`` queries ending at context ``c`` (positions
``c - q + 1 ... c``):

- full pairs ``q c - q (q - 1) / 2``;
- windowed pairs: the full pairs less ``sum (p - w)`` over the ``m = clip(c - w, 0, q)``
  positions past the window, ``m (c - w) - m (m - 1) / 2``;
- keys read once per sequence: ``min(c, q + w - 1)`` (the span the chunk's queries see).

The predictor costs chunked prefill and decode at one representative pass; these give
the exact means of the windowed terms over the chunks and the decode steps, which are
not linear in the context (`prefill_means`, `decode_mean_keys`).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def causal_pairs(q: Array | float, c: Array | float) -> Array:
    """(query, key) pairs of ``q`` causal queries ending at context ``c``."""
    return cast(Array, q * c - q * (q - 1) / 2)


def window_pairs(q: Array | float, c: Array | float, w: float) -> Array:
    """Pairs of ``q`` queries ending at context ``c`` on a layer of window ``w``."""
    past = np.clip(c - w, 0.0, q)
    return causal_pairs(q, c) - (past * (c - w) - past * (past - 1) / 2)


def window_keys(q: Array | float, c: Array | float, w: float) -> Array:
    """Keys a pass of ``q`` queries ending at ``c`` reads per sequence on a windowed layer."""
    return np.minimum(c, q + w - 1)


def prefill_means(prompt: Array | float, chunks: Array | float, w: float) -> tuple[Array, Array]:
    """Mean pairs and mean keys read per chunk (per sequence) when ``prompt`` tokens run
    in ``chunks`` equal chunks from an empty cache on a layer of window ``w``."""
    q = prompt / chunks
    pairs = window_pairs(prompt, prompt, w) / chunks
    span = q + w - 1
    # chunks i = 1..C end at i q and read min(i q, span) keys: the first j = min(floor(span /
    # q), C) read i q, the rest read span.
    j = np.minimum(np.floor(span / q), chunks)
    keys = (q * j * (j + 1) / 2 + (chunks - j) * span) / chunks
    return pairs, keys


def decode_mean_keys(input_tokens: Array | float, output_tokens: Array | float, w: float) -> Array:
    """Mean of ``min(c, w)`` over the decode steps' contexts ``c = input + 1 ... input +
    output - 1`` (one query per step: pairs equal keys); ``min(input + output / 2, w)``
    when there is no decode step."""
    first = input_tokens + 1
    last = input_tokens + output_tokens - 1
    steps = output_tokens - 1
    total = (first + last) * steps / 2
    start = np.maximum(first, w + 1)
    over = np.maximum(last - start + 1, 0.0)
    excess = over * (start - w) + over * (over - 1) / 2
    mean = (total - excess) / np.maximum(steps, 1.0)
    return np.where(steps > 0, mean, np.minimum(input_tokens + output_tokens / 2, w))
