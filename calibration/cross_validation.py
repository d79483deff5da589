"""Device-class fits and cross-validation of runtime profiles.

`fit_runtime` fits the default phases on every row, then, when the rows span
several device classes (`Platform.device_class`: vendor-kind), each class's phases on that class's rows
alone (a class whose rows cannot identify its parameters keeps the default, and
says so). `cross_validate` holds out one hardware at a time (or one of 5 folds when
there is one hardware), fits `fit_runtime` on the rest and predicts the held-out
rows: the held-out rows never enter their own fit (``data.subset(labels != fold)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from genz import KVFormat, RuntimeProfile, WeightFormat
from genz.fitting import Array
from roofline import InputError

from .fit import METRICS, Fit, fit_profile, is_optional, kv_scale_name
from .rows import CalibrationRows


@dataclass(frozen=True)
class RuntimeFit:
    """The default fit, one fit per device class, and the classes left at the default
    (a class's KV-format scales: those its own rows fitted, `_class_fit`)."""

    default: Fit
    classes: dict[str, Fit]
    skipped: dict[str, str]

    @property
    def profile(self) -> RuntimeProfile:
        """The default profile with each fitted class's phases as its override."""
        return dataclasses.replace(
            self.default.profile,
            device_classes={kind: fit.profile.phases for kind, fit in self.classes.items()},
            class_all_reduce_latency_s={
                kind: fit.values["all_reduce_latency_s"]
                for kind, fit in self.classes.items()
                if "all_reduce_latency_s" in fit.values
            },
            class_kv_scales={
                kind: scales for kind, fit in self.classes.items() if (scales := _kv_scales(fit))
            },
        )


def _kv_scales(fit: Fit) -> dict[str, float]:
    """KV format -> the emulated scale a class fit fitted itself (not held)."""
    return {
        fmt.name: fit.values[kv_scale_name(fmt)]
        for fmt in fit.profile.kv_formats
        if kv_scale_name(fmt) in fit.values and kv_scale_name(fmt) not in fit.held
    }


def fit_runtime(
    data: CalibrationRows,
    name: str,
    formats: Sequence[WeightFormat] = (),
    *,
    inherit: Sequence[str] = (),
    check: bool = True,
    description: str = "",
    kv_formats: Sequence[KVFormat] = (),
) -> RuntimeFit:
    """Default phases from every row; per device class from its own rows (``inherit``:
    efficiencies taken from each platform preset, `genz.calibration.fit_profile`;
    weight-format scales: the default fit's; KV-format scales: also the class's, see
    `_class_fit`)."""
    default = fit_profile(
        data,
        name,
        formats,
        inherit=inherit,
        check=check,
        description=description,
        kv_formats=kv_formats,
    )
    kinds = sorted(set(data.kinds))
    classes, skipped = {}, {}
    if len(kinds) > 1:
        for kind in kinds:
            rows = data.subset(np.array(data.kinds) == kind)
            fitted = _class_fit(rows, name, formats, default, inherit, kv_formats)
            if isinstance(fitted, str):
                skipped[kind] = fitted
            else:
                classes[kind] = fitted
    return RuntimeFit(default=default, classes=classes, skipped=skipped)


def _class_fit(
    rows: CalibrationRows,
    name: str,
    formats: Sequence[WeightFormat],
    default: Fit,
    inherit: Sequence[str] = (),
    kv_formats: Sequence[KVFormat] = (),
) -> Fit | str:
    """Fit a device class; a parameter its rows cannot identify is held at the default's
    value and the rest refitted. Returns the reason when nothing can be fitted.

    Weight-format scales are the default's; a KV format's emulated scale is fitted
    with the class's own phases when the class has rows it applies to (they are
    predicted with those phases), else held at the default's."""
    held = {n: v for n, v in default.values.items() if n.endswith(".memory_efficiency_scale")}
    held |= {
        kv_scale_name(fmt): default.values[kv_scale_name(fmt)]
        for fmt in kv_formats
        if kv_scale_name(fmt) in default.values and not np.any(rows.emulated(fmt))
    }
    while True:
        try:
            fit = fit_profile(
                rows, name, formats, held=held, inherit=inherit, kv_formats=kv_formats
            )
        except InputError as error:
            culprit = next((n for n in default.values if n in str(error) and n not in held), None)
            if culprit is None or len(held) >= len(default.values) - 1:
                return str(error)
            held[culprit] = default.values[culprit]
            continue
        # Optional terms the class's rows leave out take the default's fitted value.
        from_default = {
            n: default.values[n]
            for n in (*fit.unused, *fit.refused)
            if is_optional(n) and n in default.values and n not in held
        }
        if not from_default:
            return fit
        held.update(from_default)


@dataclass(frozen=True)
class CrossValidation:
    """Out-of-sample predictions of every row: ``method`` is ``leave-one-hardware-out``
    when the rows span two or more hardware, else ``5-fold`` (rows dealt in turn)."""

    method: str
    predicted: dict[str, Array]
    folds: int

    def scored(self, data: CalibrationRows, metric: str = "batch_latency_s") -> np.ndarray:
        """Rows with both a measured and an out-of-sample value of ``metric``."""
        return np.isfinite(data.measured[metric]) & np.isfinite(self.predicted[metric])

    def ratios(self, data: CalibrationRows, metric: str = "batch_latency_s") -> Array:
        """Measured / out-of-sample predicted, `scored` rows."""
        have = self.scored(data, metric)
        return data.measured[metric][have] / self.predicted[metric][have]


def fold_labels(data: CalibrationRows) -> tuple[str, np.ndarray]:
    """Fold of every row: its hardware when there are several, else ``index mod 5``."""
    hardware = sorted(set(data.hw))
    if len(hardware) > 1:
        return "leave-one-hardware-out", np.array([hardware.index(hw) for hw in data.hw])
    return "5-fold", np.arange(len(data.rows)) % 5


def cross_validate(
    data: CalibrationRows,
    name: str,
    formats: Sequence[WeightFormat] = (),
    inherit: Sequence[str] = (),
    kv_formats: Sequence[KVFormat] = (),
) -> CrossValidation:
    """Fit on all folds but one and predict that one, for every fold."""
    method, labels = fold_labels(data)
    predicted = {metric: np.full(len(data.rows), np.nan) for metric in METRICS}
    for fold in np.unique(labels):
        train, test = data.subset(labels != fold), data.subset(labels == fold)
        fitted = fit_runtime(
            train, name, formats, inherit=inherit, check=False, kv_formats=kv_formats
        ).profile
        for metric, values in test.predict(fitted).items():
            predicted[metric][labels == fold] = values
    return CrossValidation(method=method, predicted=predicted, folds=len(np.unique(labels)))
