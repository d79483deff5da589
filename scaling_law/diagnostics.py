"""Fit diagnostics: residual summary and held-out error (k-fold, leave-one-out, and
leave-one-architecture-out: every row of one run held out together, reported per run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


@dataclass(frozen=True)
class ResidualReport:
    """Residuals ``observed - predicted`` of a law on the points it was fitted to.

    ``*_log_loss`` are in log-loss units (the fitted scale, about relative error);
    ``*_loss`` in nats per token. ``worst`` lists ``(row, observed, predicted)``
    of the largest absolute log residuals, rows numbered as in the data source.
    """

    points: int
    rmse_log_loss: float
    mae_log_loss: float
    max_abs_log_loss: float
    rmse_loss: float
    mae_loss: float
    r_squared_loss: float
    worst: tuple[tuple[int, float, float], ...]
    mape_loss: float = float("nan")

    def to_dict(self) -> dict[str, object]:
        """Plain values for JSON."""
        payload = asdict(self)
        payload["worst"] = [
            {"row": row, "observed": observed, "predicted": predicted}
            for row, observed, predicted in self.worst
        ]
        return payload


@dataclass(frozen=True)
class GroupError:
    """Held-out error of one run (architecture): ``mape`` in percent of loss,
    ``bias`` the mean of ``predicted - observed``, nats per token (NaN if its fold failed)."""

    label: str
    points: int
    mape: float
    bias: float


@dataclass(frozen=True)
class CrossValidationReport:
    """Held-out error: every point predicted by a law fitted without it.

    ``kind`` is ``'k-fold'``, ``'leave-one-out'`` or ``'leave-one-architecture-out'``;
    ``failed_folds`` counts folds whose refit did not converge (their points are
    left out of the errors). ``mape_loss`` is the mean absolute percentage error of
    loss; ``per_group`` holds one `GroupError` per held-out run for
    leave-one-architecture-out (empty otherwise).
    """

    kind: str
    folds: int
    points: int
    rmse_log_loss: float
    mae_log_loss: float
    rmse_loss: float
    mae_loss: float
    failed_folds: int
    mape_loss: float = float("nan")
    per_group: tuple[GroupError, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """Plain values for JSON (``per_group`` as a list of objects)."""
        payload = asdict(self)
        payload["per_group"] = [asdict(group) for group in self.per_group]
        return payload


def residual_report(
    observed_loss: Array, predicted_loss: Array, rows: NDArray[np.int64], worst: int = 5
) -> ResidualReport:
    """Summarise ``observed - predicted`` in log and linear units."""
    log_residual = np.log(observed_loss) - np.log(predicted_loss)
    residual = observed_loss - predicted_loss
    spread = float(np.sum((observed_loss - observed_loss.mean()) ** 2))
    order = np.argsort(-np.abs(log_residual), kind="stable")[:worst]
    return ResidualReport(
        points=len(observed_loss),
        rmse_log_loss=_rms(log_residual),
        mae_log_loss=float(np.mean(np.abs(log_residual))),
        max_abs_log_loss=float(np.max(np.abs(log_residual))),
        rmse_loss=_rms(residual),
        mae_loss=float(np.mean(np.abs(residual))),
        r_squared_loss=1.0 - float(np.sum(residual**2)) / spread if spread > 0 else float("nan"),
        worst=tuple(
            (int(rows[i]), float(observed_loss[i]), float(predicted_loss[i])) for i in order
        ),
        mape_loss=_mape(observed_loss, predicted_loss),
    )


def fold_indices(
    points: int,
    folds: int | str,
    rng: np.random.Generator,
    groups: NDArray[np.int64] | None = None,
) -> list[NDArray[np.int64]]:
    """Held-out index sets: ``'loo'`` gives one per point, an int k gives k shuffled
    folds, ``'architecture'`` one per distinct value of ``groups`` (all its rows)."""
    if folds == "loo":
        return [np.array([index]) for index in range(points)]
    if folds == "architecture":
        if groups is None:
            raise ValueError("architecture folds need the run index of every row")
        return [np.flatnonzero(groups == group) for group in np.unique(groups)]
    return [np.sort(part) for part in np.array_split(rng.permutation(points), int(folds))]


def cross_validate(
    observed_loss: Array,
    folds: list[NDArray[np.int64]],
    refit_predict: Callable[[NDArray[np.int64], NDArray[np.int64]], Array | None],
    kind: str,
    fold_labels: list[str] | None = None,
) -> CrossValidationReport:
    """Run ``refit_predict(train_rows, test_rows) -> predicted loss`` for every fold;
    with ``fold_labels`` (one per fold) the error of each fold is reported too."""
    predicted = np.full(len(observed_loss), np.nan)
    everything = np.arange(len(observed_loss))
    failed = 0
    for test in folds:
        train = np.setdiff1d(everything, test)
        result = refit_predict(train, test)
        if result is None:
            failed += 1
        else:
            predicted[test] = result
    done = np.isfinite(predicted)
    if not np.any(done):
        nan = float("nan")
        return CrossValidationReport(kind, len(folds), 0, nan, nan, nan, nan, failed)
    log_residual = np.log(observed_loss[done]) - np.log(predicted[done])
    residual = observed_loss[done] - predicted[done]
    per_group: tuple[GroupError, ...] = ()
    if fold_labels is not None:
        per_group = tuple(
            GroupError(
                label,
                len(test),
                _mape(observed_loss[test], predicted[test]),
                float(np.mean(predicted[test] - observed_loss[test])),
            )
            for label, test in zip(fold_labels, folds, strict=True)
        )
    return CrossValidationReport(
        kind=kind,
        folds=len(folds),
        points=int(done.sum()),
        rmse_log_loss=_rms(log_residual),
        mae_log_loss=float(np.mean(np.abs(log_residual))),
        rmse_loss=_rms(residual),
        mae_loss=float(np.mean(np.abs(residual))),
        failed_folds=failed,
        mape_loss=_mape(observed_loss[done], predicted[done]),
        per_group=per_group,
    )


def _mape(observed: Array, predicted: Array) -> float:
    """Mean absolute percentage error, percent (NaN for no points)."""
    if len(observed) == 0 or not np.all(np.isfinite(predicted)):
        return float("nan")
    return float(np.mean(np.abs(predicted - observed) / observed) * 100)


def _rms(values: Array) -> float:
    return float(np.sqrt(np.mean(values**2)))
