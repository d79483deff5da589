"""Sampled co-design search for spaces too big to grid.

1. Draw ``samples`` points: a Latin hypercube over the axes' value indices (each
   axis's range cut into ``samples`` equal strata, one point per stratum, strata
   paired at random) or independent uniform indices.
2. Evaluate them (grouped by architecture, one genz call per architecture and
   timing variant; invalid shapes and meshes dropped).
3. Refine ``refine_rounds`` times: evaluate every not-yet-seen neighbour of the
   current frontier (one axis moved one value up or down), recompute the frontier;
   stop early when no new neighbour is left.

The result is a subset of the grid's points, evaluated identically, so every
sampled frontier design is on the grid frontier or dominated by it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from tqdm import tqdm

from roofline import InputError

from .evaluate import Outcome, Plan, Points, evaluate_points, frontier_mask, merge


def initial_points(
    sizes: NDArray[np.int64], samples: int, method: str, rng: np.random.Generator
) -> Points:
    """``samples`` index vectors over axes of ``sizes`` values (duplicates removed)."""
    columns = []
    for size in sizes:
        if method == "lhs":
            strata = (rng.permutation(samples) + rng.random(samples)) / samples
            columns.append(np.minimum((strata * size).astype(np.int64), size - 1))
        else:
            columns.append(rng.integers(0, size, samples))
    return np.unique(np.column_stack(columns).astype(np.int32), axis=0)


def neighbours(front: Points, sizes: NDArray[np.int64]) -> Points:
    """Points one step up or down one axis from a frontier point, inside the space."""
    moves = []
    for axis, size in enumerate(sizes):
        if size < 2:
            continue
        for step in (-1, 1):
            moved = front.copy()
            moved[:, axis] += step
            inside = (moved[:, axis] >= 0) & (moved[:, axis] < size)
            moves.append(moved[inside])
    if not moves:
        return np.zeros((0, len(sizes)), np.int32)
    return np.unique(np.concatenate(moves), axis=0)


def run_sampling(
    plan: Plan,
    samples: int | None = None,
    refine_rounds: int | None = None,
    seed: int | None = None,
    progress: bool = False,
) -> Outcome:
    """Sample, evaluate and refine near the frontier (see module doc)."""
    spec = plan.space.sampling
    samples = _count("samples", spec.samples if samples is None else samples, 1)
    rounds = _count(
        "refine_rounds", spec.refine_rounds if refine_rounds is None else refine_rounds, 0
    )
    seed = _count("seed", spec.seed if seed is None else seed, 0)
    sizes = np.array([len(values) for values in plan.space.axes.values()], np.int64)
    rng = np.random.default_rng(seed)
    points = initial_points(sizes, samples, spec.method, rng)
    seen = _keys(points, sizes)
    with tqdm(total=rounds + 1, desc="co-design sample", unit="round", disable=not progress) as bar:
        outcomes = [evaluate_points(plan, points)]
        bar.update()
        for _ in range(rounds):
            merged = merge(plan, outcomes)
            if merged.feasible == 0:
                break
            front = merged.points[frontier_mask(plan.objectives, merged.metrics)]
            candidates = neighbours(front, sizes)
            keys = _keys(candidates, sizes)
            fresh = ~np.isin(keys, seen)
            if not fresh.any():
                break
            seen = np.union1d(seen, keys[fresh])
            outcomes.append(evaluate_points(plan, candidates[fresh]))
            bar.update()
    return merge(plan, outcomes)


def _keys(points: Points, sizes: NDArray[np.int64]) -> NDArray[np.int64]:
    if len(points) == 0:
        return np.zeros(0, np.int64)
    return np.ravel_multi_index(tuple(points.T), tuple(int(s) for s in sizes))


def _count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
