"""The bit-allocation problem (a multiple-choice knapsack) and its result type.

Every unit ``u`` (a layer's weight group, the LM head, ...) takes exactly one of
``m`` options ``o``; binary ``x[u, o]`` with ``sum_o x[u, o] = 1``. Minimise
``sum sensitivity[u, o] x[u, o]`` subject to, for each budget ``k``,
``constant[k] + sum cost_k[u, o] x[u, o] <= limit[k]``. This is the HAWQ-V3 ILP
(Yao et al. 2021, "HAWQ-V3: Dyadic Neural Network Quantization", Eq. 5); nothing
here knows about LLMs or hardware.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

Matrix = NDArray[np.float64]

#: Relative slack when checking a total against its limit (float rounding only).
FEASIBILITY_RTOL = 1e-9
STATUSES = ("optimal", "feasible", "infeasible", "not_solved")


@dataclass(frozen=True)
class Budget:
    """An upper bound on one quantity, with how to print it.

    ``label`` names the limit as the user gave it (``'max-tpot-ms'``); printed
    values are ``value / display_scale`` followed by ``display_unit``.
    """

    quantity: str
    limit: float
    label: str = ""
    display_scale: float = 1.0
    display_unit: str = ""

    def __post_init__(self) -> None:
        if not (np.isfinite(self.display_scale) and self.display_scale > 0):
            raise InputError(f"display_scale of {self.quantity} must be > 0")
        if not (np.isfinite(self.limit) and self.limit > 0):
            shown = self.limit / self.display_scale
            raise InputError(f"{self.label or self.quantity} must be > 0, got {shown:g}")

    @property
    def name(self) -> str:
        """Label if given, else the quantity name."""
        return self.label or self.quantity

    def show(self, value: float) -> str:
        """``value`` (SI) in display units, 4 significant digits."""
        unit = f" {self.display_unit}" if self.display_unit else ""
        return f"{value / self.display_scale:.4g}{unit}"


def _frozen_matrix(values: object, label: str, shape: tuple[int, ...] | None) -> Matrix:
    array = np.array(values, dtype=float)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise InputError(f"{label} must be a non-empty (units x options) matrix")
    if shape is not None and array.shape != shape:
        raise InputError(f"{label} has shape {array.shape}, expected {shape}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{label} must be finite")
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class BitAllocationProblem:
    """Units x options costs, fixed constants and budgets (see module doc).

    Parameters
    ----------
    sensitivity
        ``(n_units, n_options)`` objective coefficients, >= 0.
    costs
        Quantity name -> ``(n_units, n_options)`` contribution of each choice.
    constants
        Quantity name -> part of the total no choice changes (default 0).
    budgets
        Upper bounds; each names a quantity in ``costs``. Any subset, or none.
    unit_names, option_names
        Labels for messages and tables (default ``u0...``, ``o0...``).
    """

    sensitivity: Matrix
    costs: Mapping[str, Matrix]
    constants: Mapping[str, float] = field(default_factory=dict)
    budgets: tuple[Budget, ...] = ()
    unit_names: tuple[str, ...] = ()
    option_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        sens = _frozen_matrix(self.sensitivity, "sensitivity", None)
        if np.any(sens < 0):
            raise InputError("sensitivity must be >= 0")
        object.__setattr__(self, "sensitivity", sens)
        costs = {
            name: _frozen_matrix(matrix, f"costs[{name}]", sens.shape)
            for name, matrix in self.costs.items()
        }
        object.__setattr__(self, "costs", MappingProxyType(costs))
        constants = {name: float(self.constants.get(name, 0.0)) for name in costs}
        unknown = sorted(set(self.constants) - set(costs))
        if unknown:
            raise InputError(f"constants names unknown quantity {unknown[0]!r}")
        if not all(np.isfinite(v) for v in constants.values()):
            raise InputError("constants must be finite")
        object.__setattr__(self, "constants", MappingProxyType(constants))
        object.__setattr__(self, "budgets", tuple(self.budgets))
        seen = set()
        for budget in self.budgets:
            if budget.quantity not in costs:
                raise InputError(
                    f"budget {budget.name} names unknown quantity {budget.quantity!r}; "
                    f"accepted: {', '.join(costs) or '(none)'}"
                )
            if budget.quantity in seen:
                raise InputError(f"two budgets on {budget.quantity!r}")
            seen.add(budget.quantity)
        n, m = sens.shape
        units = tuple(self.unit_names) or tuple(f"u{i}" for i in range(n))
        options = tuple(self.option_names) or tuple(f"o{j}" for j in range(m))
        if len(units) != n or len(options) != m:
            raise InputError(f"unit_names/option_names must have {n} and {m} entries")
        object.__setattr__(self, "unit_names", units)
        object.__setattr__(self, "option_names", options)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_units, n_options)``."""
        return self.sensitivity.shape  # type: ignore[return-value]

    def totals(self, allocation: NDArray[np.int_]) -> dict[str, float]:
        """Every quantity's total (constant + chosen costs) for an allocation."""
        rows = np.arange(self.shape[0])
        return {
            name: self.constants[name] + float(matrix[rows, allocation].sum())
            for name, matrix in self.costs.items()
        }

    def objective(self, allocation: NDArray[np.int_]) -> float:
        """Total sensitivity of an allocation."""
        return float(self.sensitivity[np.arange(self.shape[0]), allocation].sum())

    def violated(self, totals: Mapping[str, float]) -> tuple[Budget, ...]:
        """Budgets an allocation's totals exceed (beyond `FEASIBILITY_RTOL`)."""
        return tuple(
            b for b in self.budgets if totals[b.quantity] > b.limit * (1 + FEASIBILITY_RTOL)
        )

    def binding(self, totals: Mapping[str, float], rtol: float = 1e-3) -> tuple[str, ...]:
        """Quantities whose total is within ``rtol`` of their limit."""
        return tuple(b.quantity for b in self.budgets if totals[b.quantity] >= b.limit * (1 - rtol))

    def smallest_totals(self) -> dict[str, float]:
        """Each budgeted quantity minimised alone (costs are separable: per-unit minima)."""
        return {
            b.quantity: self.constants[b.quantity] + float(self.costs[b.quantity].min(axis=1).sum())
            for b in self.budgets
        }


@dataclass(frozen=True)
class BitAllocationResult:
    """What `allocate_bits` returns (scipy.optimize shape).

    ``status`` is one of 'optimal' (proven), 'feasible' (a solution, optimality not
    proven: greedy, or a time limit), 'infeasible' (proven: no allocation meets the
    budgets; ``message`` names the tightest feasible budgets), 'not_solved'.
    ``allocation`` holds one option index per unit (empty unless ``success``);
    ``totals`` every quantity of that allocation; ``lower_bound`` the LP-relaxation
    objective (ILP only), a bound on any allocation's objective. When infeasible,
    ``smallest_totals`` holds each budgeted quantity minimised alone and
    ``tightest_limits`` the smallest limit of each budget that is feasible with the
    other budgets as given (absent where the others alone are infeasible).
    """

    success: bool
    status: str
    message: str
    method: str
    objective: float
    allocation: tuple[int, ...]
    totals: Mapping[str, float]
    budgets: tuple[Budget, ...]
    binding: tuple[str, ...]
    solve_time_s: float
    lower_bound: float | None = None
    smallest_totals: Mapping[str, float] = field(default_factory=dict)
    tightest_limits: Mapping[str, float] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        """Relative gap to the LP-relaxation bound, ``(objective - bound) / |objective|``."""
        if self.lower_bound is None or not self.success:
            return None
        if self.objective == 0:
            return 0.0
        return max(0.0, (self.objective - self.lower_bound) / abs(self.objective))


def make_result(
    problem: BitAllocationProblem,
    method: str,
    allocation: NDArray[np.int_] | None,
    status: str,
    message: str,
    solve_time_s: float,
    lower_bound: float | None = None,
    smallest_totals: Mapping[str, float] | None = None,
    tightest_limits: Mapping[str, float] | None = None,
) -> BitAllocationResult:
    """Fill a result, recomputing objective and totals from ``allocation`` in float64."""
    assert status in STATUSES
    if allocation is None:
        return BitAllocationResult(
            success=False,
            status=status,
            message=message,
            method=method,
            objective=float("nan"),
            allocation=(),
            totals=MappingProxyType({}),
            budgets=problem.budgets,
            binding=(),
            solve_time_s=solve_time_s,
            lower_bound=lower_bound,
            smallest_totals=MappingProxyType(dict(smallest_totals or {})),
            tightest_limits=MappingProxyType(dict(tightest_limits or {})),
        )
    chosen = np.asarray(allocation, dtype=int)
    totals = problem.totals(chosen)
    broken = problem.violated(totals)
    if broken:
        budget = broken[0]
        return make_result(
            problem,
            method,
            None,
            "not_solved",
            f"{method} returned an allocation with {budget.name} at "
            f"{budget.show(totals[budget.quantity])} (> {budget.show(budget.limit)})",
            solve_time_s,
            lower_bound,
        )
    return BitAllocationResult(
        success=True,
        status=status,
        message=message,
        method=method,
        objective=problem.objective(chosen),
        allocation=tuple(int(i) for i in chosen),
        totals=MappingProxyType(totals),
        budgets=problem.budgets,
        binding=problem.binding(totals),
        solve_time_s=solve_time_s,
        lower_bound=lower_bound,
    )
