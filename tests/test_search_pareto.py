"""Pareto extraction (`search.codesign.pareto.pareto_mask`) against an O(n^2) brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.errors import InputError
from search.codesign import pareto
from search.codesign.pareto import pareto_mask


def brute_force(values: np.ndarray, senses: list[str]) -> np.ndarray:
    """Row i is kept unless some row is no worse everywhere and better somewhere."""
    signed = np.where(np.array(senses) == "max", -values, values)
    keep = np.ones(len(signed), bool)
    for i, row in enumerate(signed):
        no_worse = np.all(signed <= row, axis=1)
        better = np.any(signed < row, axis=1)
        keep[i] = not np.any(no_worse & better)
    return keep


@st.composite
def tables(draw: st.DrawFn) -> tuple[np.ndarray, list[str]]:
    k = draw(st.integers(1, 4))
    n = draw(st.integers(0, 60))
    # Few distinct values, so ties and duplicate rows are common.
    levels = draw(st.integers(1, 6))
    cells = draw(st.lists(st.integers(0, levels), min_size=n * k, max_size=n * k))
    senses = draw(st.lists(st.sampled_from(["min", "max"]), min_size=k, max_size=k))
    return np.array(cells, float).reshape(n, k), senses


@settings(max_examples=300, deadline=None)
@given(tables())
def test_matches_brute_force(case: tuple[np.ndarray, list[str]]) -> None:
    values, senses = case
    assert np.array_equal(pareto_mask(values, senses), brute_force(values, senses))


@settings(max_examples=60, deadline=None)
@given(tables())
def test_no_kept_row_is_dominated_and_every_dropped_row_is(
    case: tuple[np.ndarray, list[str]],
) -> None:
    values, senses = case
    keep = pareto_mask(values, senses)
    signed = np.where(np.array(senses) == "max", -values, values)
    front = signed[keep]
    for row, kept in zip(signed, keep, strict=True):
        dominated = np.any(np.all(front <= row, axis=1) & np.any(front < row, axis=1))
        assert dominated != kept


@pytest.mark.parametrize("k", [3, 4])
def test_blocks_and_pruning_do_not_change_the_answer(
    k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tiny blocks force the staircase / chunk paths across many block boundaries.
    monkeypatch.setattr(pareto, "MAX_CHUNK", 7)
    monkeypatch.setattr(pareto, "PRUNE_LEADERS", 3)
    monkeypatch.setattr(pareto, "MAX_PAIRS", 50)
    rng = np.random.default_rng(k)
    values = rng.integers(0, 9, size=(400, k)).astype(float)
    # An anti-correlated column keeps the frontier large.
    values[:, -1] = 30 - values[:, :-1].sum(axis=1) + rng.integers(0, 3, 400)
    senses = ["min"] * k
    assert np.array_equal(pareto_mask(values, senses), brute_force(values, senses))


def test_two_objectives_by_hand() -> None:
    # (loss, time): (3, 1) and (1, 3) trade off; (2, 2) too; (3, 3) is beaten by (2, 2);
    # the two copies of (1, 3) do not dominate each other.
    values = [[3, 1], [1, 3], [2, 2], [3, 3], [1, 3]]
    assert pareto_mask(values).tolist() == [True, True, True, False, True]
    # Maximising the second column turns the order round: (3, 3) beats (3, 1) and (2, 2).
    assert pareto_mask(values, ["min", "max"]).tolist() == [False, True, False, False, True]


def test_bad_input_is_one_line_error() -> None:
    with pytest.raises(InputError, match="finite"):
        pareto_mask([[1.0, np.nan]])
    with pytest.raises(InputError, match="senses"):
        pareto_mask([[1.0, 2.0]], ["min", "up"])
    assert pareto_mask(np.zeros((0, 2))).shape == (0,)
