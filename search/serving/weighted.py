"""Exact statistics of (value, count) samples without expanding them: weighted
percentiles and the exactly rounded sum.

A run's inter-token latencies are kept as (gap, count) pairs (`emissions`), one per
decode step: a long run has tens of millions. Sorting them all to read three
percentiles, or summing them through a Python list for an exactly rounded mean, took
most of a long `serve` run. Here both are computed in a few linear passes and give
the same floats as the definitions they replace, bit for bit:

- `weighted_percentiles`: the inverted-CDF percentile (numpy's ``method=
  "inverted_cdf"`` over the expanded array) by a radix selection on the values' bits
  when the counts are whole numbers (their partial sums are then exact), else by a
  stable sort and cumulative sum.
- `exact_sum`: ``math.fsum`` (the correctly rounded sum) from integer sums of the
  values' 53-bit significands per binary exponent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

#: Bits of the value's key taken per selection pass (65,536 buckets).
DIGIT_BITS = 16
#: Total count of the candidates at or below which the selection sorts them (counts
#: are >= 1 there, so there are at most as many).
SORTED_BELOW = 1 << 16
#: Counts whose sum reaches this are not summed exactly in float64: sorted path.
EXACT_TOTAL = 2.0**53
#: Values per slice of the linear passes: temporaries stay small (no page faults on
#: arrays the size of the input), and `exact_sum`'s float64 sums of 27-bit halves of
#: significands over a slice stay below 2**53 (exact).
SLICE = 2**20
#: ``np.frexp``'s smallest exponent of a float64 (the smallest subnormal is 2**-1074).
LOWEST = -1073


def weighted_percentiles(
    values: NDArray[np.float64], weights: NDArray[np.float64], percentiles: Sequence[float]
) -> list[float]:
    """Percentiles of ``values`` each repeated ``weights`` times: the smallest value
    whose cumulative weight reaches ``p`` % of the total (the inverted-CDF definition;
    NaN when the total weight is 0)."""
    values, weights = np.asarray(values, np.float64), np.asarray(weights, np.float64)
    if not _whole(weights) or bool(np.isnan(values).any()):
        keep = weights > 0
        return _sorted_percentiles(values[keep], weights[keep], percentiles)
    if not bool(np.all(weights > 0)):
        keep = weights > 0
        values, weights = values[keep], weights[keep]
    total = float(weights.sum())  # whole numbers: exact below 2**53
    if total >= EXACT_TOTAL or not len(values):
        return _sorted_percentiles(values, weights, percentiles)
    signed = any(bool((values[part].view(np.int64) < 0).any()) for part in _slices(values))
    top = _histogram(values, weights, signed, 64 - DIGIT_BITS, None)  # shared first pass
    # whole counts: a cumulative weight reaches p % of the total iff it reaches it
    # rounded up, and at least 1 (the first value's count)
    return [_select(values, weights, signed, max(p / 100 * total, 1.0), top) for p in percentiles]


def _slices(values: NDArray[np.float64]) -> list[slice]:
    """``values`` cut in slices of `SLICE` (no temporary the size of the input)."""
    return [slice(a, a + SLICE) for a in range(0, len(values), SLICE)]


def _whole(weights: NDArray[np.float64]) -> bool:
    """Whether every weight is a whole number >= 0 (checked a slice at a time)."""
    for part in _slices(weights):
        w = weights[part]
        if not bool(np.all(w == np.floor(w))) or (len(w) and float(w.min()) < 0):
            return False
    return True


def _sorted_percentiles(
    values: NDArray[np.float64], weights: NDArray[np.float64], percentiles: Sequence[float]
) -> list[float]:
    """`weighted_percentiles` by a stable sort and a cumulative sum (any weights > 0;
    NaN when there are none)."""
    if not len(values):
        return [math.nan for _ in percentiles]
    order = np.argsort(values, kind="stable")
    values, cumulative = values[order], np.cumsum(weights[order])
    total = cumulative[-1]
    at = [int(np.searchsorted(cumulative, p / 100 * total, side="left")) for p in percentiles]
    return [float(values[min(k, len(values) - 1)]) for k in at]


def _keys(values: NDArray[np.float64], signed: bool) -> NDArray[np.uint64]:
    """Unsigned integers ordered as ``values`` (no NaN; -0.0 and 0.0 the same key): the
    bits themselves when no value has its sign bit set (``signed`` False: no copy),
    else sign-flipped bits."""
    if not signed:
        return values.view(np.uint64)
    bits = (values + 0.0).view(np.uint64)  # + 0.0 turns -0.0 into 0.0
    sign = np.uint64(1 << 63)
    return np.where(bits & sign, ~bits, bits | sign)


def _histogram(
    values: NDArray[np.float64],
    weights: NDArray[np.float64],
    signed: bool,
    shift: int,
    prefix: int | None,
) -> NDArray[np.float64]:
    """The weight of each `DIGIT_BITS`-bit digit at bit ``shift`` of the keys whose
    higher bits are ``prefix`` (None: every key), a slice at a time."""
    counts = np.zeros(1 << DIGIT_BITS)
    mask = np.uint64((1 << DIGIT_BITS) - 1)
    for part in _slices(values):
        keys, w = _keys(values[part], signed), weights[part]
        if prefix is not None:
            chosen = (keys >> np.uint64(shift + DIGIT_BITS)) == np.uint64(prefix)
            keys, w = keys[chosen], w[chosen]
        digits = ((keys >> np.uint64(shift)) & mask).view(np.int64)
        counts += np.bincount(digits, weights=w, minlength=1 << DIGIT_BITS)
    return counts


def _select(
    values: NDArray[np.float64],
    weights: NDArray[np.float64],
    signed: bool,
    threshold: float,
    top: NDArray[np.float64],
) -> float:
    """The smallest value whose cumulative weight in sorted order reaches ``threshold``
    (>= 1; whole weights >= 1): the first bucket of the keys' top digit whose cumulative
    weight (``top``: the digits' weights) reaches it holds the value; so does the first
    bucket of the next digit among its keys, and so on, until the bucket weighs little
    (its values are sorted) or the whole key is known (it is the value)."""
    done, prefix, shift, counts = 0.0, 0, 64 - DIGIT_BITS, top
    while True:
        cumulative = done + np.cumsum(counts)  # whole numbers below 2**53: exact
        bucket = int(np.searchsorted(cumulative, threshold, side="left"))
        if bucket:
            done = float(cumulative[bucket - 1])
        prefix = (prefix << DIGIT_BITS) | bucket
        if counts[bucket] <= SORTED_BELOW:  # weights >= 1: at most as many values
            break
        if shift == 0:  # the whole key: one value (both zeros when signed: sorted)
            if not signed or prefix != 1 << 63:
                return float(_value_of(prefix, signed))
            break
        shift -= DIGIT_BITS
        counts = _histogram(values, weights, signed, shift, prefix)
    kept = []
    for part in _slices(values):
        chosen = (_keys(values[part], signed) >> np.uint64(shift)) == np.uint64(prefix)
        kept.append((values[part][chosen], weights[part][chosen]))
    candidates = np.concatenate([v for v, _ in kept])
    order = np.argsort(candidates, kind="stable")
    reached = done + np.cumsum(np.concatenate([w for _, w in kept])[order])
    k = int(np.searchsorted(reached, threshold, side="left"))
    return float(candidates[order][min(k, len(candidates) - 1)])


def _value_of(key: int, signed: bool) -> float:
    """The value of a whole key (`_keys`)."""
    bits = key if not signed else (key ^ (1 << 63) if key >> 63 else ~key & ((1 << 64) - 1))
    return float(np.array([bits], np.uint64).view(np.float64)[0])


def exact_sum(values: NDArray[np.float64], weights: NDArray[np.float64] | None = None) -> float:
    """``math.fsum(values * weights)`` (``weights`` None: of ``values``): the sum of the
    products (each rounded, as numpy's ``*``) correctly rounded to float64, from exact
    integer sums of their significands per binary exponent, a slice at a time."""
    values = np.asarray(values, np.float64)
    total = 0  # the exact sum in units of 2**(LOWEST - 53)
    for part in _slices(values):
        terms = values[part] if weights is None else values[part] * weights[part]
        if not bool(np.all(np.isfinite(terms))):
            every = values if weights is None else values * weights
            return math.fsum(every.tolist())
        significand, exponent = np.frexp(terms)  # term = significand * 2**exponent
        whole = (significand * 2.0**53).astype(np.int64)  # exact: term = whole * 2**(e - 53)
        scale = exponent.astype(np.intp) - LOWEST
        # whole = high * 2**26 + low; a slice's sums of either stay below 2**53: exact
        high, low = whole >> 26, whole & ((1 << 26) - 1)
        highs, lows = np.bincount(scale, weights=high), np.bincount(scale, weights=low)
        for k in np.flatnonzero((highs != 0) | (lows != 0)).tolist():
            total += ((int(highs[k]) << 26) + int(lows[k])) << k
    return float(Fraction(total, 1 << (53 - LOWEST)))
