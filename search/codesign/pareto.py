"""Pareto frontiers: the non-dominated rows of an objective table, vectorised.

Row ``q`` dominates row ``p`` when ``q`` is no worse in every objective and better
in at least one. Rows with identical objective vectors do not dominate each other
(all of them are kept). Each column is minimised or maximised.

- Two objectives: sort the distinct rows by the first objective (ties by the
  second); a row is non-dominated when its second objective is below every
  earlier row's (a running minimum). O(n log n).
- Three: distinct rows in lexicographic order; an earlier row dominates a later
  one iff it is no worse in the last two columns, found for a block of rows at
  once by `np.searchsorted` on the staircase (2-D frontier) of the rows before
  the block. O(n log n) plus O(block^2) per block.
- Four: each column is replaced by its dense rank (an order-preserving
  map, so dominance is unchanged and sums are exact integers); a dominating row
  has a strictly smaller rank sum. Every row is first compared with the
  `PRUNE_LEADERS` rows of lowest rank sum (removing most dominated rows at once);
  the survivors are visited in rank-sum order in chunks, each chunk compared with
  the frontier so far and with itself (numpy broadcasting, memory bounded by
  `MAX_PAIRS`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError

#: Largest (chunk x frontier) boolean comparison held at once.
MAX_PAIRS = 1 << 24
MAX_CHUNK = 2048
#: Lowest-rank-sum rows used to prune every row before the exact pass.
PRUNE_LEADERS = 256


def pareto_mask(values: ArrayLike, senses: Sequence[str] | None = None) -> NDArray[np.bool_]:
    """Which rows of ``values`` (shape ``(n, k)``) are non-dominated.

    Parameters
    ----------
    values
        Objective table, one row per design, finite numbers.
    senses
        ``'min'`` or ``'max'`` per column (default: minimise every column).

    Returns
    -------
    numpy.ndarray
        Boolean mask of length n.
    """
    table = np.array(values, dtype=float, ndmin=2)
    if table.ndim != 2 or table.shape[1] < 1:
        raise InputError(f"objective table must have shape (n, k >= 1), got {table.shape}")
    senses = ["min"] * table.shape[1] if senses is None else list(senses)
    if len(senses) != table.shape[1] or any(s not in ("min", "max") for s in senses):
        raise InputError(f"senses must be {table.shape[1]} of 'min'/'max', got {senses!r}")
    if not np.all(np.isfinite(table)):
        raise InputError("objective values must be finite")
    if len(table) == 0:
        return np.zeros(0, bool)
    for column, sense in enumerate(senses):
        if sense == "max":
            table[:, column] = -table[:, column]
    unique, inverse = _unique_rows(table)
    if unique.shape[1] == 1:
        keep = unique[:, 0] == unique[0, 0]
    elif unique.shape[1] == 2:
        keep = _front_2d(unique)
    elif unique.shape[1] == 3:
        keep = _front_3d(unique)
    else:
        keep = _front_nd(unique)
    return keep[inverse]


def _unique_rows(table: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Distinct rows in lexicographic order and each row's index among them."""
    order = np.lexsort(table.T[::-1])
    ordered = table[order]
    new = np.ones(len(ordered), bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    inverse = np.empty(len(table), np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse


def _front_2d(unique: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Distinct rows sorted lexicographically (as `np.unique` returns them)."""
    running = np.minimum.accumulate(unique[:, 1])
    earlier = np.concatenate(([np.inf], running[:-1]))
    return unique[:, 1] < earlier


def _front_3d(unique: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Distinct rows in lexicographic order: only earlier rows can dominate a row, and
    an earlier row dominates it iff it is no worse in columns 1 and 2. Blocks of rows
    query the staircase (2-D frontier in columns 1, 2) of all earlier blocks with
    `np.searchsorted`, then compare among themselves."""
    keep = np.zeros(len(unique), bool)
    stair_x = np.empty(0)
    stair_y = np.empty(0)
    for start in range(0, len(unique), MAX_CHUNK):
        block = unique[start : start + MAX_CHUNK, 1:]
        alive = np.ones(len(block), bool)
        if len(stair_x):
            # The staircase entry with the largest x <= the row's x has the least y.
            position = np.searchsorted(stair_x, block[:, 0], side="right") - 1
            seen = position >= 0
            alive[seen] = stair_y[position[seen]] > block[seen, 1]
        candidates = block[alive]
        within = (candidates[:, None, 0] <= candidates[None, :, 0]) & (
            candidates[:, None, 1] <= candidates[None, :, 1]
        )
        earlier = np.tril(np.ones((len(candidates), len(candidates)), bool), k=-1)
        alive[np.flatnonzero(alive)[(within & earlier.T).any(axis=0)]] = False
        keep[start : start + len(block)] = alive
        stair_x, stair_y = _staircase(
            np.concatenate([stair_x, block[alive, 0]]), np.concatenate([stair_y, block[alive, 1]])
        )
    return keep


def _staircase(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
    """The 2-D frontier of points (x, y): x ascending, y strictly descending."""
    order = np.lexsort((y, x))
    x, y = x[order], y[order]
    running = np.minimum.accumulate(y)
    earlier = np.concatenate(([np.inf], running[:-1]))
    step = y < earlier
    return x[step], y[step]


def _front_nd(unique: NDArray[np.float64]) -> NDArray[np.bool_]:
    ranks = np.column_stack(
        [np.unique(unique[:, j], return_inverse=True)[1].ravel() for j in range(unique.shape[1])]
    ).astype(np.int32)
    order = np.argsort(ranks.sum(axis=1, dtype=np.int64), kind="stable")
    ranked = ranks[order]
    # Cheap first pass: drop what the lowest rank sums dominate (they are real rows, and
    # rows are distinct, so "no worse everywhere, not the same row" is domination).
    alive = np.ones(len(ranked), bool)
    leaders = ranked[:PRUNE_LEADERS]
    for start in range(0, len(ranked), max(1, MAX_PAIRS // len(leaders))):
        block = ranked[start : start + max(1, MAX_PAIRS // len(leaders))]
        beaten = _no_worse(leaders, block)
        beaten &= _not_same(leaders, block, start)
        alive[start : start + len(block)] = ~beaten.any(axis=0)
    survivors = np.flatnonzero(alive)
    keep_sorted = np.zeros(len(ranked), bool)
    keep_sorted[survivors[_front_sorted(ranked[survivors])]] = True
    keep = np.zeros(len(ranked), bool)
    keep[order] = keep_sorted
    return keep


def _no_worse(front: NDArray[np.int32], rows: NDArray[np.int32]) -> NDArray[np.bool_]:
    """``[i, j]``: front row i is no worse than row j in every column."""
    result = front[:, 0, None] <= rows[None, :, 0]
    for column in range(1, front.shape[1]):
        result &= front[:, column, None] <= rows[None, :, column]
    return result


def _not_same(front: NDArray[np.int32], rows: NDArray[np.int32], offset: int) -> NDArray[np.bool_]:
    """``[i, j]``: front row i (row i of the sorted table) is not row ``offset + j``."""
    return np.arange(len(front))[:, None] != offset + np.arange(len(rows))[None, :]


def _front_sorted(ranked: NDArray[np.int32]) -> NDArray[np.int64]:
    """Indices of the non-dominated rows of distinct rows sorted by rank sum."""
    keep = np.zeros(len(ranked), bool)
    front = np.empty((0, ranked.shape[1]), np.int32)
    start = 0
    while start < len(ranked):
        size = int(min(MAX_CHUNK, max(1, MAX_PAIRS // max(len(front), 1))))
        chunk = ranked[start : start + size]
        alive = np.ones(len(chunk), bool)
        step = max(1, MAX_PAIRS // len(chunk))
        for offset in range(0, len(front), step):
            alive &= ~_no_worse(front[offset : offset + step], chunk).any(axis=0)
        # Within the chunk (rows earlier in rank-sum order can dominate later ones only).
        candidates = chunk[alive]
        within = _no_worse(candidates, candidates)
        np.fill_diagonal(within, False)
        alive[np.flatnonzero(alive)[within.any(axis=0)]] = False
        keep[start : start + len(chunk)] = alive
        front = np.concatenate([front, chunk[alive]])
        start += len(chunk)
    return np.flatnonzero(keep)
