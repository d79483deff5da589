"""The fitting objective (Huber loss on log-loss residuals) and one local solve.

``objective(theta) = sum_i Huber_delta(log_loss(theta, x_i) - log L_i) / delta``.
Dividing by ``delta`` changes nothing about the minimiser but keeps the value
O(number of points): Besiroglu et al. (2024) traced Hoffmann et al.'s early
optimiser stops to a tiny objective scale (a mean instead of a sum).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .forms import Features, LawForm

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

Array = NDArray[np.float64]
SUPPORTED_METHODS = ("L-BFGS-B", "BFGS", "Nelder-Mead")
_GRID_CHUNK = 256
RESTARTS = 2
STABLE_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class HuberObjective:
    """Huber objective over the free parameters of ``form`` on one set of points.

    ``template`` is a full fit-space vector whose fixed entries stay put;
    ``free`` indexes the entries the optimiser moves.
    """

    form: LawForm
    features: Features
    observed_log_loss: Array
    delta: float
    free: NDArray[np.int64]
    template: Array

    def full(self, free_values: Array) -> Array:
        """Fit-space vector with ``free_values`` placed into the template."""
        theta = self.template.copy()
        theta[self.free] = free_values
        return theta

    def subset(self, rows: NDArray[np.int64]) -> HuberObjective:
        """The same objective on the points ``rows`` (repeats allowed: bootstrap)."""
        return HuberObjective(
            self.form,
            {name: values[rows] for name, values in self.features.items()},
            self.observed_log_loss[rows],
            self.delta,
            self.free,
            self.template,
        )

    def value(self, free_values: Array) -> float:
        """Objective at ``free_values`` (inf when the form gives non-finite values)."""
        residual = (
            self.form.log_loss(self.full(free_values), self.features) - self.observed_log_loss
        )
        total = float(np.sum(_huber(residual, self.delta))) / self.delta
        return total if np.isfinite(total) else np.inf

    def value_and_gradient(self, free_values: Array) -> tuple[float, Array]:
        """Objective and its analytic gradient (needs ``form.jacobian``)."""
        predicted, jacobian = self.form.jacobian(self.full(free_values), self.features)  # type: ignore[misc]
        residual = predicted - self.observed_log_loss
        total = float(np.sum(_huber(residual, self.delta))) / self.delta
        slope = np.clip(residual, -self.delta, self.delta) / self.delta
        gradient = slope @ jacobian[:, self.free]
        if not (np.isfinite(total) and np.all(np.isfinite(gradient))):
            return np.inf, np.zeros_like(free_values)
        return total, gradient

    def values_at(self, grid: Array) -> Array:
        """Objective at every row of ``grid`` (full fit-space vectors), vectorised if possible."""
        if not self.form.batched:
            return np.array([self.value(row[self.free]) for row in grid])
        out = np.empty(len(grid))
        for start in range(0, len(grid), _GRID_CHUNK):
            chunk = grid[start : start + _GRID_CHUNK]
            residual = self.form.log_loss(chunk, self.features) - self.observed_log_loss
            out[start : start + len(chunk)] = np.sum(_huber(residual, self.delta), axis=-1)
        out /= self.delta
        out[~np.isfinite(out)] = np.inf
        return out

    def bounds(self) -> list[tuple[float | None, float | None]] | None:
        """Bounds of the free parameters, or None when the form has none."""
        if self.form.bounds is None:
            return None
        return [self.form.bounds[index] for index in self.free]


def _huber(residual: Array, delta: float) -> Array:
    magnitude = np.abs(residual)
    return np.where(
        magnitude <= delta, 0.5 * residual * residual, delta * (magnitude - 0.5 * delta)
    )


def solve(
    objective: HuberObjective, start: Array, method: str, maxiter: int | None = None
) -> OptimizeResult:
    """One local minimisation from ``start`` (free parameters) with scipy.

    L-BFGS-B and BFGS use the analytic gradient when the form has a Jacobian
    (finite differences otherwise); Nelder-Mead uses values only. L-BFGS-B and
    Nelder-Mead respect the form's bounds; BFGS is unbounded (the caller checks).
    Tolerances are tight because the Huber objective is nearly flat near its
    minimum for small ``delta``.
    """
    from scipy.optimize import minimize  # here: importing the package (pages, CLI) skips scipy

    size = len(start)
    bounds = objective.bounds()
    start = _inside(start, bounds)
    with_gradient = objective.form.jacobian is not None
    function = objective.value_and_gradient if with_gradient else objective.value
    jac = True if with_gradient else None
    if method == "L-BFGS-B":
        options = {"maxiter": maxiter or 2000, "ftol": 1e-14, "gtol": 1e-9, "maxcor": 20}
        return minimize(function, start, jac=jac, method=method, bounds=bounds, options=options)
    if method == "BFGS":
        options = {"maxiter": maxiter or 2000, "gtol": 1e-7}
        return minimize(function, start, jac=jac, method=method, options=options)
    options = {
        "maxiter": maxiter or 1000 * size,
        "maxfev": 2000 * size,
        "xatol": 1e-9,
        "fatol": 1e-11,
        "adaptive": True,
    }
    return minimize(objective.value, start, method="Nelder-Mead", bounds=bounds, options=options)


def local_minimum(
    objective: HuberObjective, start: Array, method: str, maxiter: int | None = None
) -> tuple[OptimizeResult, bool]:
    """`solve`, restarted from its end point while that still lowers the objective.

    Quasi-Newton line searches often stop with a failure flag at a kink of the
    Huber objective although the point is a minimum. The run counts as
    converged when scipy reports success, or when up to `RESTARTS` restarts
    from the end point improve the objective by less than `STABLE_RTOL`
    (relative) in the last restart.
    """
    result = solve(objective, start, method, maxiter)
    for _ in range(RESTARTS):
        if result.success or not np.isfinite(result.fun):
            return result, bool(result.success)
        again = solve(objective, result.x, method, maxiter)
        improved = result.fun - again.fun
        evaluations = result.nfev + again.nfev
        if again.fun <= result.fun:
            result = again
        result.nfev = evaluations
        if improved <= STABLE_RTOL * (1 + abs(result.fun)):
            return result, bool(np.isfinite(result.fun))
    return result, bool(result.success)


def _inside(start: Array, bounds: list[tuple[float | None, float | None]] | None) -> Array:
    if bounds is None:
        return start
    low = np.array([-np.inf if lo is None else lo for lo, _ in bounds])
    high = np.array([np.inf if hi is None else hi for _, hi in bounds])
    return np.clip(start, low, high)


def within_bounds(form: LawForm, theta: Array) -> bool:
    """True when every entry of ``theta`` lies inside the form's bounds."""
    if form.bounds is None:
        return True
    for value, (low, high) in zip(theta, form.bounds, strict=True):
        if (low is not None and value < low - 1e-12) or (high is not None and value > high + 1e-12):
            return False
    return True
