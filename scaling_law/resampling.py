"""Refits on resampled runs (bootstrap replicates, cross-validation folds).

Each refit starts from the distinct local minima found by the full fit
(`distinct_minima`) rather than from the whole start grid: the resampled
objective moves the minimum a little, and a warm start finds it in a few dozen
solver iterations.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from tqdm import tqdm

from .objective import HuberObjective, local_minimum, within_bounds

logger = logging.getLogger(__name__)
Array = NDArray[np.float64]
MAX_RESTART_MINIMA = 3
RESTART_OBJECTIVE_RATIO = 1.1


def distinct_minima(runs: list[tuple[Any, bool]], best: Any) -> list[Array]:
    """Start points for refits: the best minimum and other distinct converged minima.

    At most `MAX_RESTART_MINIMA`, each with an objective within
    `RESTART_OBJECTIVE_RATIO` of the best (far worse minima never win a refit
    and are slow to re-converge). ``runs`` pairs scipy results with their
    convergence flag.
    """
    minima = [best.x]
    values = [best.fun]
    for run, converged in sorted(runs, key=lambda pair: pair[0].fun):
        if len(minima) == MAX_RESTART_MINIMA:
            break
        if not converged or run.fun > RESTART_OBJECTIVE_RATIO * best.fun:
            continue
        if all(abs(run.fun - value) > 1e-6 * (1 + abs(value)) for value in values):
            minima.append(run.x)
            values.append(run.fun)
    return minima


@dataclass(frozen=True, eq=False)
class Refitter:
    """Refit ``objective`` on subsets of its points, from ``minima`` (free parameters).

    Every refit advances ``bar`` by `MAX_RESTART_MINIMA` steps whatever the number
    of minima, so the bar's total is known before the work starts.
    """

    objective: HuberObjective
    minima: list[Array]
    method: str
    maxiter: int | None
    bar: tqdm

    def refit(self, rows: NDArray[np.int64]) -> Array | None:
        """Full fit-space vector of the best converged refit on ``rows``; None if none."""
        subset = self.objective.subset(rows)
        best = None
        for start in self.minima:
            run, converged = local_minimum(subset, start, self.method, self.maxiter)
            self.bar.update()
            if converged and (best is None or run.fun < best.fun):
                best = run
        self.bar.update(MAX_RESTART_MINIMA - len(self.minima))
        return None if best is None else subset.full(best.x)

    def bootstrap(
        self,
        replicates: int,
        rng: np.random.Generator,
        groups: NDArray[np.int64] | None = None,
    ) -> tuple[list[Array], int]:
        """Refits on ``replicates`` resamples drawn with replacement: (samples, failures).

        Rows are drawn one by one, or, given ``groups`` (the run of every row), whole
        runs are drawn (as many as there are) and all their rows refitted: the
        checkpoints of one run are not independent draws. A replicate fails when no
        start converges or the estimate leaves the form's bounds (possible with the
        unbounded BFGS).
        """
        points = len(self.objective.observed_log_loss)
        members = (
            None if groups is None else [np.flatnonzero(groups == g) for g in np.unique(groups)]
        )
        samples, failures = [], 0
        for _ in range(replicates):
            if members is None:
                rows = rng.integers(0, points, points)
            else:
                drawn = rng.integers(0, len(members), len(members))
                rows = np.concatenate([members[index] for index in drawn])
            theta = self.refit(rows)
            if theta is None or not within_bounds(self.objective.form, theta):
                failures += 1
            else:
                samples.append(theta)
        if failures:
            logger.warning("%d of %d bootstrap refits did not converge", failures, replicates)
        return samples, failures

    def predict_held_out(self, train: NDArray[np.int64], test: NDArray[np.int64]) -> Array | None:
        """Loss at the ``test`` points predicted by a refit on ``train``; None if it failed."""
        theta = self.refit(train)
        if theta is None:
            return None
        held_out = {name: values[test] for name, values in self.objective.features.items()}
        return np.exp(self.objective.form.log_loss(theta, held_out))
