"""The result type of `scaling_law.fit.fit_law` (one frozen type for every form and method)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .diagnostics import CrossValidationReport, ResidualReport
from .law import ScalingLaw


@dataclass(frozen=True)
class FitResult:
    """Outcome of `fit_law` (the same type for every form and method).

    ``status``: 0 converged; 1 the best start did not converge (iteration limit
    or line-search failure); 2 the estimate left the form's bounds (BFGS is
    unbounded). ``success`` is ``status == 0``. ``objective`` is the minimum of
    the Huber objective; ``nfev`` counts its evaluations over the grid starts
    (not the refits); ``points`` and ``excluded`` count the runs fitted and left out.
    """

    success: bool
    status: int
    message: str
    method: str
    law: ScalingLaw
    objective: float
    nfev: int
    starts: int
    points: int
    excluded: int
    bootstrap_replicates: int
    bootstrap_failures: int
    residuals: ResidualReport
    cross_validation: CrossValidationReport | None

    @property
    def params(self) -> dict[str, float]:
        """Fitted values by public name."""
        return dict(self.law.params)

    @property
    def intervals(self) -> dict[str, tuple[float, float] | None]:
        """Bootstrap percentile intervals at ``law.confidence`` (None when fixed)."""
        return dict(self.law.intervals)

    @property
    def standard_errors(self) -> dict[str, float | None]:
        """Bootstrap standard deviations (None when fixed)."""
        return dict(self.law.standard_errors)

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON (the law's metadata holds the same diagnostics)."""
        return {
            "success": self.success,
            "status": self.status,
            "message": self.message,
            "method": self.method,
            "form": self.law.form,
            "params": self.params,
            "intervals": {k: None if v is None else list(v) for k, v in self.intervals.items()},
            "standard_errors": self.standard_errors,
            "fixed": list(self.law.fixed),
            "confidence": self.law.confidence,
            "objective": self.objective,
            "nfev": self.nfev,
            "starts": self.starts,
            "points": self.points,
            "excluded": self.excluded,
            "bootstrap_replicates": self.bootstrap_replicates,
            "bootstrap_failures": self.bootstrap_failures,
            "residuals": self.residuals.to_dict(),
            "cross_validation": None
            if self.cross_validation is None
            else self.cross_validation.to_dict(),
        }
