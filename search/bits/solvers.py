"""`allocate_bits`: solve a `BitAllocationProblem` by ILP (PuLP + bundled CBC), greedy
or exhaustive enumeration; explain infeasible budgets in one line.

The ILP scales every budget row by its limit and the objective by its largest
coefficient (CBC's tolerances are absolute, ~1e-7) and recomputes objective and
totals from the chosen allocation in float64 (re-solving with rows tightened by
`ROW_MARGIN` if a total came out above its limit). Its LP relaxation (scipy HiGHS)
gives the lower bound reported as ``lower_bound`` and the optimality gap.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Mapping

import numpy as np
import pulp
from numpy.typing import NDArray

from roofline import InputError

from .heuristics import exhaustive, greedy
from .problem import (
    FEASIBILITY_RTOL,
    BitAllocationProblem,
    BitAllocationResult,
    Budget,
    make_result,
)

logger = logging.getLogger(__name__)

METHODS = ("ilp", "greedy", "exhaustive")
DEFAULT_MIP_GAP = 1e-3
#: Tightening of every scaled budget row when CBC's 1e-7 primal tolerance returned a
#: total above its limit (1 kB per GB of budget).
ROW_MARGIN = 1e-6
Allocation = NDArray[np.int_]
Solver = Callable[[BitAllocationProblem], tuple[Allocation | None, str]]


def allocate_bits(
    problem: BitAllocationProblem,
    method: str = "ilp",
    time_limit_s: float = 60.0,
    mip_gap: float = DEFAULT_MIP_GAP,
) -> BitAllocationResult:
    """Choose one option per unit minimising total sensitivity within the budgets.

    Parameters
    ----------
    problem
        Units, options, costs and budgets.
    method
        'ilp' (optimal; PuLP with its bundled CBC), 'greedy' (fast baseline, no
        guarantee) or 'exhaustive' (enumerates every allocation; small problems only).
    time_limit_s
        CBC wall-clock limit, seconds; past it the best solution found is returned
        with status 'feasible'.
    mip_gap
        CBC stops once ``(incumbent - best bound) / incumbent <= mip_gap``; status
        'optimal' means optimal within it. 0 asks for a proof of optimality, which
        can take minutes on 1,000 units whose costs repeat layer after layer (the
        LP bound closes slowly under that symmetry); the default 1e-3 (0.1 % of the
        total sensitivity) is far below the resolution of any sensitivity estimate.
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not (np.isfinite(time_limit_s) and time_limit_s > 0):
        raise InputError(f"time_limit_s must be > 0, got {time_limit_s!r}")
    if not (np.isfinite(mip_gap) and 0 <= mip_gap < 1):
        raise InputError(f"mip_gap must be in [0, 1), got {mip_gap!r}")
    start = time.perf_counter()
    smallest = problem.smallest_totals()
    if any(smallest[b.quantity] > b.limit * (1 + FEASIBILITY_RTOL) for b in problem.budgets):
        message = infeasible_message(problem.budgets, _braces(problem), smallest, {})
        return make_result(
            problem,
            method,
            None,
            "infeasible",
            message,
            time.perf_counter() - start,
            smallest_totals=smallest,
        )
    solver = _solver(method, time_limit_s, mip_gap)
    allocation, status = solver(problem)
    lower_bound = lp_relaxation_bound(problem) if method == "ilp" else None
    if allocation is not None:
        message = {
            "optimal": "optimal allocation found"
            + (
                f" (within mip_gap {mip_gap:g} of CBC's bound)"
                if method == "ilp" and mip_gap
                else ""
            ),
            "feasible": f"{method} allocation within the budgets (optimality not proven)",
        }[status]
        return make_result(
            problem, method, allocation, status, message, time.perf_counter() - start, lower_bound
        )
    if status == "infeasible":
        tightest = tightest_limits(problem, solver)
        message = infeasible_message(problem.budgets, _braces(problem), smallest, tightest)
        return make_result(
            problem,
            method,
            None,
            status,
            message,
            time.perf_counter() - start,
            lower_bound,
            smallest,
            tightest,
        )
    message = (
        "greedy found no allocation within the budgets (method='ilp' is exact)"
        if method == "greedy"
        else f"CBC found no allocation within {time_limit_s:g} s; raise the time limit"
    )
    return make_result(
        problem, method, None, "not_solved", message, time.perf_counter() - start, lower_bound
    )


def _braces(problem: BitAllocationProblem) -> str:
    return "{" + ", ".join(problem.option_names) + "}"


def _solver(method: str, time_limit_s: float, mip_gap: float) -> Solver:
    if method == "ilp":
        return lambda problem: solve_ilp(problem, time_limit_s, mip_gap)
    if method == "exhaustive":

        def run_exhaustive(problem: BitAllocationProblem) -> tuple[Allocation | None, str]:
            found = exhaustive(problem)
            return found, "optimal" if found is not None else "infeasible"

        return run_exhaustive

    def run_greedy(problem: BitAllocationProblem) -> tuple[Allocation | None, str]:
        found = greedy(problem)
        return found, "feasible" if found is not None else "not_solved"

    return run_greedy


def solve_ilp(
    problem: BitAllocationProblem, time_limit_s: float, mip_gap: float = DEFAULT_MIP_GAP
) -> tuple[Allocation | None, str]:
    """CBC on the scaled ILP; returns (allocation or None, status).

    If CBC's tolerance lets a total exceed its limit (checked in float64), solves
    again with every row tightened by `ROW_MARGIN`.
    """
    allocation, status = _cbc(problem, time_limit_s, mip_gap, margin=0.0)
    if allocation is not None and problem.violated(problem.totals(allocation)):
        allocation, status = _cbc(problem, time_limit_s, mip_gap, margin=ROW_MARGIN)
    return allocation, status


def _cbc(
    problem: BitAllocationProblem, time_limit_s: float, mip_gap: float, margin: float
) -> tuple[Allocation | None, str]:
    n, m = problem.shape
    model = pulp.LpProblem("bit_allocation", pulp.LpMinimize)
    # PuLP >= 3.3 owns variables through the model; 2.x has only the constructor.
    variable = getattr(model, "add_variable", None) or pulp.LpVariable
    x = [variable(f"x_{i}_{j}", cat=pulp.LpBinary) for i in range(n) for j in range(m)]
    scale = float(problem.sensitivity.max()) or 1.0
    model += pulp.LpAffineExpression(
        zip(x, (problem.sensitivity / scale).ravel().tolist(), strict=True)
    )
    for i in range(n):
        model += pulp.LpAffineExpression([(x[i * m + j], 1.0) for j in range(m)]) == 1
    for budget in problem.budgets:
        row = (problem.costs[budget.quantity] / budget.limit).ravel().tolist()
        rhs = (budget.limit - problem.constants[budget.quantity]) / budget.limit
        model += pulp.LpAffineExpression(zip(x, row, strict=True)) <= rhs - margin
    with warnings.catch_warnings():
        # PuLP 3.3 warns that the bundled CBC goes away in PuLP 4; it is what we ship on.
        warnings.simplefilter("ignore", DeprecationWarning)
        solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s, gapRel=mip_gap)
    model.solve(solver)
    logger.debug("CBC status %s, solution status %s", model.status, model.sol_status)
    if model.sol_status == pulp.LpSolutionInfeasible or model.status == pulp.LpStatusInfeasible:
        return None, "infeasible"
    if model.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return None, "not_solved"
    values = np.array([v.varValue or 0.0 for v in x]).reshape(n, m)
    status = "optimal" if model.sol_status == pulp.LpSolutionOptimal else "feasible"
    return np.argmax(values, axis=1), status


def lp_relaxation_bound(problem: BitAllocationProblem) -> float | None:
    """Objective of the LP relaxation (0 <= x <= 1), a lower bound on the ILP's."""
    import scipy.sparse as sparse  # here: importing search.bits (pages, CLI) skips scipy
    from scipy.optimize import linprog

    n, m = problem.shape
    equalities = sparse.kron(sparse.eye(n), np.ones((1, m)), format="csr")
    rows = [(problem.costs[b.quantity] / b.limit).ravel() for b in problem.budgets]
    rhs = [(b.limit - problem.constants[b.quantity]) / b.limit for b in problem.budgets]
    solution = linprog(
        problem.sensitivity.ravel(),
        A_ub=np.array(rows) if rows else None,
        b_ub=np.array(rhs) if rows else None,
        A_eq=equalities,
        b_eq=np.ones(n),
        bounds=(0.0, 1.0),
        method="highs",
    )
    return float(solution.fun) if solution.status == 0 else None


def tightest_limits(problem: BitAllocationProblem, solver: Solver) -> dict[str, float]:
    """For each budget, the smallest total reachable while the other budgets hold.

    Solves one allocation problem per budget with that quantity as the objective
    (shifted by each unit's minimum so coefficients stay >= 0).
    """
    tightest = {}
    for budget in problem.budgets:
        cost = problem.costs[budget.quantity]
        floor = cost.min(axis=1, keepdims=True)
        others = tuple(b for b in problem.budgets if b is not budget)
        sub = BitAllocationProblem(
            sensitivity=cost - floor,
            costs=problem.costs,
            constants=problem.constants,
            budgets=others,
            unit_names=problem.unit_names,
            option_names=problem.option_names,
        )
        allocation, _ = solver(sub)
        if allocation is not None:
            tightest[budget.quantity] = sub.totals(allocation)[budget.quantity]
    return tightest


def infeasible_message(
    budgets: tuple[Budget, ...],
    options: str,
    smallest: Mapping[str, float],
    tightest: Mapping[str, float],
) -> str:
    """One line: which budget is below what any allocation with ``options`` (text such
    as ``'{fp16, int8}'``) reaches, or the tightest feasible value of each budget with
    the others as given."""
    below = [b for b in budgets if smallest[b.quantity] > b.limit * (1 + FEASIBILITY_RTOL)]
    if below:
        parts = [
            f"{b.name}={b.limit / b.display_scale:g} is below the smallest achievable "
            f"{b.show(smallest[b.quantity])}"
            for b in below
        ]
        return f"infeasible: {'; '.join(parts)} with {options}"
    feasible = [
        f"{b.name} >= {b.show(tightest[b.quantity])}" for b in budgets if b.quantity in tightest
    ]
    advice = (
        "feasible with the other budgets as given: " + ", ".join(feasible)
        if feasible
        else "relax at least two of them"
    )
    return f"infeasible: the budgets cannot all hold together with {options}; {advice}"
