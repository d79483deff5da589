"""Exhaustive enumeration (reference for tests) and a greedy baseline for `allocate_bits`.

Both are vectorised over units and options with numpy; they return an allocation
(one option index per unit) or None, never a result type (`bits_solvers` wraps them).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

from .problem import FEASIBILITY_RTOL, BitAllocationProblem

#: Largest number of allocations the exhaustive method enumerates.
EXHAUSTIVE_LIMIT = 5_000_000
_CHUNK = 1 << 16


def _limits(problem: BitAllocationProblem) -> tuple[list[str], NDArray[np.float64]]:
    names = [b.quantity for b in problem.budgets]
    slack = np.array([b.limit * (1 + FEASIBILITY_RTOL) for b in problem.budgets])
    return names, slack


def exhaustive(problem: BitAllocationProblem) -> NDArray[np.int_] | None:
    """The optimal allocation by enumerating all ``m^n`` of them (None if infeasible).

    Raises `InputError` beyond `EXHAUSTIVE_LIMIT` allocations.
    """
    n, m = problem.shape
    count = m**n
    if count > EXHAUSTIVE_LIMIT:
        raise InputError(
            f"exhaustive search is limited to {EXHAUSTIVE_LIMIT:,} allocations; "
            f"this problem has {m}^{n} = {count:.3g}; use method='ilp'"
        )
    names, slack = _limits(problem)
    radix = m ** np.arange(n)
    best_value, best = np.inf, None
    for start in range(0, count, _CHUNK):
        index = np.arange(start, min(start + _CHUNK, count))
        choice = (index[:, None] // radix[None, :]) % m
        units = np.arange(n)[None, :]
        feasible = np.ones(len(index), dtype=bool)
        for name, limit in zip(names, slack, strict=True):
            total = problem.constants[name] + problem.costs[name][units, choice].sum(axis=1)
            feasible &= total <= limit
        if not feasible.any():
            continue
        value = np.where(feasible, problem.sensitivity[units, choice].sum(axis=1), np.inf)
        at = int(np.argmin(value))
        if value[at] < best_value:
            best_value, best = float(value[at]), choice[at].copy()
    return best


def greedy(problem: BitAllocationProblem) -> NDArray[np.int_] | None:
    """Greedy baseline: start at each unit's least sensitive option, then repeatedly
    apply the single-unit change that removes the most budget excess per unit of
    added sensitivity until every budget holds; then apply sensitivity-reducing
    changes that keep every budget while any exist. None if it gets stuck.
    """
    n, m = problem.shape
    sens = problem.sensitivity
    names, slack = _limits(problem)
    limits = np.array([b.limit for b in problem.budgets])
    cost = (
        np.stack([problem.costs[name] for name in names])
        if names
        else np.zeros((0, n, m), dtype=float)
    )
    constant = np.array([problem.constants[name] for name in names])
    rows = np.arange(n)
    choice = np.argmin(sens, axis=1)
    for _ in range(4 * n * m + 1):
        totals = constant + cost[:, rows, choice].sum(axis=1)
        excess = np.maximum(totals - slack, 0.0) / limits
        if not excess.any():
            break
        delta = cost - cost[:, rows, choice][:, :, None]
        after = np.maximum(totals[:, None, None] + delta - slack[:, None, None], 0.0)
        gain = excess.sum() - (after / limits[:, None, None]).sum(axis=0)
        added = sens - sens[rows, choice][:, None]
        useful = gain > 1e-12
        if not useful.any():
            return None
        score = np.where(useful, added / np.where(useful, gain, 1.0), np.inf)
        unit, option = np.unravel_index(int(np.argmin(score)), score.shape)
        choice[unit] = option
    else:
        return None
    for _ in range(4 * n * m + 1):
        totals = constant + cost[:, rows, choice].sum(axis=1)
        delta = cost - cost[:, rows, choice][:, :, None]
        keeps = np.all(totals[:, None, None] + delta <= slack[:, None, None], axis=0)
        saved = sens[rows, choice][:, None] - sens
        saved = np.where(keeps, saved, 0.0)
        unit, option = np.unravel_index(int(np.argmax(saved)), saved.shape)
        if saved[unit, option] <= 0:
            break
        choice[unit] = option
    return choice
