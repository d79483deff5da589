"""`serving.weighted`: weighted percentiles equal numpy's inverted-CDF percentile of the
expanded array and the stable-sort definition bit for bit; `exact_sum` equals
``math.fsum``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from search.serving import weighted
from search.serving.metrics import PERCENTILES
from search.serving.weighted import _sorted_percentiles, exact_sum, weighted_percentiles

CASES = (PERCENTILES, (0, 0.1, 1, 25, 33.3, 50, 66.7, 75, 99.9, 100))


def samples(seed: int, n: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, counts) of a kind: ITL-like gaps, many ties, signs and zeros, a wide
    exponent range."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 40, n).astype(float)  # zeros: dropped
    if kind == "units":  # count 1: the thresholds of round percentiles are reached exactly
        return rng.lognormal(-4.0, 0.5, n), np.ones(n)
    if kind == "gaps":
        values = rng.lognormal(-4.0, 0.5, n)
    elif kind == "ties":
        values = rng.integers(0, 7, n) * 0.125
    elif kind == "signs":
        values = rng.normal(0.0, 1.0, n)
        values[::5] = 0.0
        values[1::10] = -0.0
    else:
        values = rng.normal(0.0, 1.0, n) * 2.0 ** rng.integers(-1070, 1000, n)
    return values, counts


@pytest.mark.parametrize("kind", ["gaps", "ties", "signs", "wide", "units"])
@pytest.mark.parametrize("selecting", [False, True])
def test_weighted_percentiles_equal_the_expanded_array(monkeypatch, kind, selecting):
    """Against np.percentile(..., method="inverted_cdf") on the values repeated their
    counts, and the stable-sort path, on several draws; ``selecting`` lowers the
    sorting cut so every draw runs the radix selection through all its passes."""
    if selecting:
        monkeypatch.setattr(weighted, "SORTED_BELOW", 1)
    for seed in range(3):
        values, counts = samples(seed, 3000, kind)
        expanded = np.repeat(values, counts.astype(np.int64))
        for percentiles in CASES:
            got = weighted_percentiles(values, counts, percentiles)
            want = np.percentile(expanded, percentiles, method="inverted_cdf")
            assert np.array_equal(np.array(got), want), (kind, seed, percentiles)
            keep = counts > 0
            reference = _sorted_percentiles(values[keep], counts[keep], percentiles)
            assert np.array_equal(np.array(got), np.array(reference))
            assert all(
                math.copysign(1, a) == math.copysign(1, b)
                for a, b in zip(got, reference, strict=True)
            )


def test_weighted_percentiles_fall_back_when_counts_are_not_whole():
    """Fractional counts (or NaN values) take the stable-sort path: same numbers."""
    values, counts = samples(4, 500, "gaps")
    halves = counts / 2
    assert weighted_percentiles(values, halves, CASES[1]) == _sorted_percentiles(
        values[halves > 0], halves[halves > 0], CASES[1]
    )
    values[3] = math.nan
    keep = counts > 0
    assert np.array_equal(
        weighted_percentiles(values, counts, CASES[1]),
        _sorted_percentiles(values[keep], counts[keep], CASES[1]),
        equal_nan=True,
    )
    assert math.isnan(weighted_percentiles(values, np.zeros(len(values)), (50,))[0])


@pytest.mark.parametrize("kind", ["gaps", "signs", "wide"])
def test_exact_sum_is_fsum(monkeypatch, kind):
    """Bit for bit ``math.fsum``, with cancellations, subnormals and several slices."""
    monkeypatch.setattr(weighted, "SLICE", 700)
    for seed in range(4):
        values, counts = samples(seed, 2500, kind)
        products = values * counts
        assert exact_sum(products) == math.fsum(products.tolist())
        assert exact_sum(values, counts) == math.fsum(products.tolist())
    cancelling = np.array([1e308, 1.0, -1e308, 2.0**-1074, 3.0, -(2.0**-1074)])
    assert exact_sum(cancelling) == math.fsum(cancelling.tolist()) == 4.0
    halfway = np.array([1.0, 2.0**-53, 2.0**-105])  # rounds up only because of the last
    assert exact_sum(halfway) == math.fsum(halfway.tolist()) == 1.0 + 2.0**-52
    assert exact_sum(np.zeros(0)) == 0.0
    assert math.isinf(exact_sum(np.array([1.0, math.inf])))
