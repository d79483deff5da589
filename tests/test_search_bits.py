"""Bit-allocation solvers: result contract, ILP vs exhaustive and greedy, infeasibility."""

import dataclasses
import itertools
import time

import numpy as np
import pytest

from roofline import InputError
from search.bits.heuristics import EXHAUSTIVE_LIMIT
from search.bits.problem import BitAllocationProblem, Budget
from search.bits.solvers import METHODS, allocate_bits


def random_problem(seed: int, units: int, options: int, budgets: int) -> BitAllocationProblem:
    """Costs grow with an option's bits and sensitivity falls (as for real formats),
    with per-unit noise; each limit lies between the cheapest and dearest totals."""
    rng = np.random.default_rng(seed)
    bits = np.sort(rng.uniform(2, 16, options))[::-1]
    size = rng.uniform(1, 10, (units, 1))
    sensitivity = size * rng.uniform(0.5, 2, (units, 1)) * 2.0 ** (-bits / 2)
    costs = {f"q{k}": size * bits * rng.uniform(0.8, 1.2, (units, options)) for k in range(budgets)}
    limits = []
    for k in range(budgets):
        low, high = costs[f"q{k}"].min(axis=1).sum(), costs[f"q{k}"].max(axis=1).sum()
        limits.append(Budget(f"q{k}", low + rng.uniform(0.2, 0.8) * (high - low)))
    return BitAllocationProblem(sensitivity, costs, {}, tuple(limits))


TWO_UNITS = BitAllocationProblem(
    # options: 16, 8, 4 bits; memory = bits, latency = bits / 2 (hand-checkable).
    sensitivity=[[0.0, 1.0, 4.0], [0.0, 2.0, 8.0]],
    costs={
        "memory": [[16.0, 8.0, 4.0], [16.0, 8.0, 4.0]],
        "latency": [[8.0, 4.0, 2.0], [8.0, 4.0, 2.0]],
    },
    constants={"memory": 2.0},
    budgets=(Budget("memory", 20.0, "max-memory-gb", 1.0, "GB"),),
    option_names=("16", "8", "4"),
)


def brute_force(problem: BitAllocationProblem) -> tuple[float, tuple[int, ...]] | None:
    """Least total sensitivity over every allocation meeting every budget, by plain
    enumeration written from the problem's definition (independent of the solvers)."""
    units, options = problem.shape
    best = None
    for allocation in itertools.product(range(options), repeat=units):
        totals = {
            name: problem.constants[name]
            + sum(costs[unit][option] for unit, option in enumerate(allocation))
            for name, costs in problem.costs.items()
        }
        if any(totals[b.quantity] > b.limit for b in problem.budgets):
            continue
        objective = sum(problem.sensitivity[unit][o] for unit, o in enumerate(allocation))
        if best is None or objective < best[0]:
            best = (objective, allocation)
    return best


@pytest.mark.parametrize("method", METHODS)
def test_every_method_returns_the_result_contract(method):
    problem = random_problem(seed=1, units=5, options=3, budgets=2)
    before = time.perf_counter()
    result = allocate_bits(problem, method=method)
    wall = time.perf_counter() - before
    assert result.method == method
    assert result.success and result.status in ("optimal", "feasible")
    expected_message = {
        "optimal": "optimal allocation found",
        "feasible": f"{method} allocation within the budgets (optimality not proven)",
    }[result.status]
    assert result.message.startswith(expected_message)
    assert len(result.allocation) == 5 and all(0 <= i < 3 for i in result.allocation)
    # The reported objective and totals are those of the reported allocation, summed here
    # from the problem's matrices: a solver that reported its LP value, or the totals of
    # another incumbent, would disagree.
    rows = range(5)
    objective = sum(problem.sensitivity[u, o] for u, o in zip(rows, result.allocation, strict=True))
    assert result.objective == pytest.approx(objective, rel=1e-12)
    for budget in problem.budgets:
        spent = sum(
            problem.costs[budget.quantity][u, o]
            for u, o in zip(rows, result.allocation, strict=True)
        )
        assert result.totals[budget.quantity] == pytest.approx(spent, rel=1e-12)
        assert spent <= budget.limit * (1 + 1e-9)
        # `binding` lists exactly the budgets spent to within 0.1 % of their limit.
        assert (budget.quantity in result.binding) == (spent >= budget.limit * (1 - 1e-3))
    # The solve time is measured around the solve: it cannot exceed the caller's wall clock.
    assert 0 <= result.solve_time_s <= wall
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.objective = 0.0  # type: ignore[misc]
    # The same contract when the budget is impossible: no allocation, one-line reason.
    impossible = dataclasses.replace(problem, budgets=(Budget("q0", 1e-3),))
    failed = allocate_bits(impossible, method=method)
    assert not failed.success and failed.status == "infeasible"
    assert failed.allocation == () and "\n" not in failed.message


def test_hand_solved_two_unit_problem():
    # Memory 2 + m0 + m1 <= 20: (8, 8) costs 18 at sensitivity 3; (16, 4) and (4, 16) cost 22.
    # (4, 8) = 14 would cost 6; the optimum is (8, 8), objective 1 + 2 = 3.
    for method in METHODS:
        result = allocate_bits(TWO_UNITS, method=method)
        assert result.allocation == (1, 1), method
        assert result.objective == 3.0
        assert result.totals == {"memory": 18.0, "latency": 8.0}


@pytest.mark.parametrize("seed", range(12))
def test_ilp_and_exhaustive_equal_an_independent_enumeration(seed):
    rng = np.random.default_rng(100 + seed)
    problem = random_problem(
        seed, units=int(rng.integers(2, 7)), options=int(rng.integers(2, 5)), budgets=1 + seed % 3
    )
    reference = brute_force(problem)
    assert reference is not None  # limits lie between the cheapest and dearest totals
    ilp = allocate_bits(problem, "ilp", mip_gap=0.0)
    exhaustive = allocate_bits(problem, "exhaustive")
    assert ilp.status == exhaustive.status == "optimal"
    assert ilp.objective == pytest.approx(reference[0], rel=1e-7, abs=1e-12)
    assert exhaustive.objective == pytest.approx(reference[0], rel=1e-12, abs=1e-12)
    assert ilp.lower_bound is not None and ilp.lower_bound <= ilp.objective * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(2))
def test_tighter_budget_never_gives_a_better_objective(seed):
    problem = random_problem(seed, units=12, options=4, budgets=1)
    (budget,) = problem.budgets
    results = []
    for fraction in (1.0, 0.85, 0.7):
        tighter = dataclasses.replace(
            problem, budgets=(Budget(budget.quantity, budget.limit * fraction),)
        )
        result = allocate_bits(tighter, "ilp", mip_gap=0.0)
        if not result.success:
            break
        results.append(result)
    objectives = [result.objective for result in results]
    assert len(objectives) >= 2
    assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(objectives))
    # The optimum's own total as the limit keeps the same optimum: the budget it reports is
    # met exactly and nothing better existed within the looser one.
    spent = results[0].totals[budget.quantity]
    exact = dataclasses.replace(problem, budgets=(Budget(budget.quantity, spent),))
    again = allocate_bits(exact, "ilp", mip_gap=0.0)
    assert again.objective == pytest.approx(results[0].objective, rel=1e-9)
    assert again.totals[budget.quantity] <= spent * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_ilp_is_never_worse_than_greedy(seed):
    problem = random_problem(seed, units=40, options=5, budgets=3)
    ilp = allocate_bits(problem, "ilp", mip_gap=0.0)
    greedy = allocate_bits(problem, "greedy")
    assert ilp.status == "optimal" and greedy.success
    assert ilp.objective <= greedy.objective * (1 + 1e-9)


def test_no_budgets_takes_each_units_least_sensitive_option():
    problem = dataclasses.replace(random_problem(3, 6, 4, 1), budgets=())
    result = allocate_bits(problem)
    assert result.allocation == tuple(np.argmin(problem.sensitivity, axis=1))
    assert result.binding == ()


def test_budget_below_smallest_achievable_names_it():
    # Smallest memory: 2 + 4 + 4 = 10 GB, reached with both units at 4 bits.
    problem = dataclasses.replace(
        TWO_UNITS, budgets=(Budget("memory", 8.0, "max-memory-gb", 1.0, "GB"),)
    )
    result = allocate_bits(problem)
    assert result.status == "infeasible"
    assert result.message == (
        "infeasible: max-memory-gb=8 is below the smallest achievable 10 GB with {16, 8, 4}"
    )
    assert result.smallest_totals == {"memory": 10.0}


def test_joint_infeasibility_reports_tightest_feasible_budgets():
    # Latency falls with bits here (dequantisation overhead): 16 -> 1, 8 -> 2, 4 -> 4.
    # Each budget holds alone (memory >= 2 + 4 + 4 = 10, latency >= 1 + 1 = 2), not together:
    # memory <= 14 needs m0 + m1 <= 12: (8, 4), (4, 8) or (4, 4), so latency >= 6;
    # latency <= 3 needs (16, 16), (16, 8) or (8, 16), so memory >= 2 + 16 + 8 = 26.
    problem = dataclasses.replace(
        TWO_UNITS,
        costs={
            "memory": [[16.0, 8.0, 4.0], [16.0, 8.0, 4.0]],
            "latency": [[1.0, 2.0, 4.0], [1.0, 2.0, 4.0]],
        },
        budgets=(
            Budget("memory", 14.0, "max-memory-gb", 1.0, "GB"),
            Budget("latency", 3.0, "max-tpot-ms", 1.0, "ms"),
        ),
    )
    for method in ("ilp", "exhaustive"):
        result = allocate_bits(problem, method)
        assert result.status == "infeasible"
        assert result.tightest_limits == {"memory": 26.0, "latency": 6.0}
        assert result.message == (
            "infeasible: the budgets cannot all hold together with {16, 8, 4}; feasible with "
            "the other budgets as given: max-memory-gb >= 26 GB, max-tpot-ms >= 6 ms"
        )


def test_exhaustive_refuses_large_problems():
    problem = random_problem(0, units=30, options=3, budgets=1)
    assert EXHAUSTIVE_LIMIT < 3**30
    with pytest.raises(InputError, match="exhaustive search is limited"):
        allocate_bits(problem, "exhaustive")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"sensitivity": [[-1.0, 0.0]]}, "sensitivity must be >= 0"),
        ({"costs": {"m": [[1.0, np.nan]]}}, "must be finite"),
        ({"costs": {"m": [[1.0, 2.0, 3.0]]}}, "has shape"),
        ({"budgets": (Budget("x", 1.0),)}, "unknown quantity 'x'"),
    ],
)
def test_problem_validation(change, match):
    fields = {"sensitivity": [[0.0, 1.0]], "costs": {"m": [[2.0, 1.0]]}, **change}
    with pytest.raises(InputError, match=match):
        BitAllocationProblem(**fields)


def test_bad_arguments():
    with pytest.raises(InputError, match="must be > 0"):
        Budget("m", -1.0, "max-memory-gb")
    with pytest.raises(InputError, match="method must be one of ilp, greedy, exhaustive"):
        allocate_bits(TWO_UNITS, method="simplex")
    with pytest.raises(InputError, match="mip_gap"):
        allocate_bits(TWO_UNITS, mip_gap=2.0)
