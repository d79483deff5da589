"""``codesign calibrate`` as a function: filter, physics-check, fit, cross-validate."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genz import KVFormat, Parallelism, RuntimeProfile, WeightFormat, check_parallelism, load_model
from genz.fitting import (
    FORMAT_KEYS,
    KV_FORMAT_KEYS,
    MAX_PROFILE_BYTES,
    kv_formats_from_dict,
    weight_format_from_dict,
)
from roofline import InputError, data_dir, load_user_document

from .cross_validation import CrossValidation, RuntimeFit, cross_validate, fit_runtime
from .measurements import Measurement
from .physics_check import check_measurements
from .profile_io import profile_document
from .rows import UNIT_PROFILE, CalibrationRows, decompose
from .store import load_tagged_measurements


@dataclass(frozen=True)
class Calibration:
    """What `calibrate_runtime` did: rows used and excluded, the fit, its error."""

    fit: RuntimeFit
    cv: CrossValidation
    data: CalibrationRows
    excluded: tuple[tuple[Measurement, str], ...]
    document: dict[str, Any]

    def excluded_by_kind(self) -> dict[str, int]:
        """How many rows were left out, by kind of reason (`exclusion_kind`), most first."""
        counts: dict[str, int] = {}
        for _, reason in self.excluded:
            kind = exclusion_kind(reason)
            counts[kind] = counts.get(kind, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: -item[1]))

    def errors_pct(self, out_of_sample: bool, metric: str = "batch_latency_s") -> np.ndarray:
        """Signed percentage errors (predicted vs measured) of the rows measuring ``metric``."""
        measured = self.data.measured[metric]
        predicted = (
            self.cv.predicted[metric]
            if out_of_sample
            else self.data.predict(self.fit.profile)[metric]
        )
        have = np.isfinite(measured) & np.isfinite(predicted)
        return 100 * (predicted[have] - measured[have]) / measured[have]


#: The metrics whose measured value may beat the efficiency-1 bound, as reasons name them.
_BOUND_METRICS = ("batch latency", "TTFT", "inter-token latency")


def exclusion_kind(reason: str) -> str:
    """The kind of an exclusion reason of `calibration_rows`: ``'a mesh the model cannot
    split'`` or ``'<metric> faster than the efficiency-1 bound'``."""
    for metric in _BOUND_METRICS:
        if reason.startswith(f"{metric} ") and " < bound " in reason:
            return f"{metric} faster than the efficiency-1 bound"
    return "a mesh the model cannot split"


#: Top-level keys of a formats file (``codesign calibrate --formats``), at least one.
FORMATS_FILE_KEYS = frozenset({"weight_formats", "kv_formats"})


def _formats_document(path: str | Path) -> dict[str, Any]:
    document = load_user_document(path, kind="weight formats file", max_bytes=MAX_PROFILE_BYTES)
    if not isinstance(document, dict) or not document or not set(document) <= FORMATS_FILE_KEYS:
        raise InputError(
            f"{path}: expected top-level keys {' and/or '.join(sorted(FORMATS_FILE_KEYS))}"
        )
    return document


def load_formats(path: str | Path) -> tuple[tuple[WeightFormat, ...], dict[str, str]]:
    """Weight formats of a runtime (a ``weight_formats`` mapping as in a profile) and the
    source of each; none when the file lists only ``kv_formats``."""
    document = _formats_document(path)
    formats, sources = [], {}
    for name, entry in document.get("weight_formats", {}).items():
        fmt = weight_format_from_dict(str(name), entry, f"{path}: weight_formats.{name}")
        formats.append(fmt)
        sources[fmt.name] = str(entry[FORMAT_KEYS[1]].get("source", ""))
    return tuple(formats), sources


def load_kv_formats(
    path: str | Path,
) -> tuple[tuple[KVFormat, ...], dict[str, dict[str, str]]]:
    """KV-cache formats of a runtime (a ``kv_formats`` mapping as in a profile) and, per
    format, the source of its ``nominal_bits`` and ``native_dtype``; none when absent."""
    document = _formats_document(path)
    entries = document.get("kv_formats", {})
    formats = kv_formats_from_dict(entries, f"{path}: kv_formats")
    sources = {
        fmt.name: {key: str(entries[fmt.name][key].get("source", "")) for key in KV_FORMAT_KEYS[:2]}
        for fmt in formats
    }
    return formats, sources


def calibration_rows(
    measurements: Sequence[Measurement],
    runtime: str,
    *,
    hardware: Sequence[str] = (),
    formats: tuple[WeightFormat, ...] = (),
    kv_formats: tuple[KVFormat, ...] = (),
) -> tuple[CalibrationRows, tuple[tuple[Measurement, str], ...]]:
    """The rows of ``runtime`` (of ``hardware`` if given) that calibration fits,
    decomposed (`decompose`), and those left out with the reason: rows the model
    cannot express (a mesh splitting heads) or physics forbids (faster than the
    efficiency-1 bound)."""
    chosen = [
        row
        for row in measurements
        if row.runtime == runtime and (not hardware or row.hw in hardware)
    ]
    if not chosen:
        names = sorted({row.runtime for row in measurements})
        on = sorted({row.hw for row in measurements if row.runtime == runtime})
        if hardware and on:  # the runtime is there, on other hardware: name that
            raise InputError(
                f"no measured row of runtime {runtime!r} on --hw {', '.join(hardware)} "
                f"(its rows are on: {', '.join(on)})"
            )
        raise InputError(f"no measured row of runtime {runtime!r} (file has: {', '.join(names)})")
    unsplittable = _unsplittable(chosen)
    excluded: list[tuple[Measurement, str]] = [(chosen[i], unsplittable[i]) for i in unsplittable]
    chosen = [row for i, row in enumerate(chosen) if i not in unsplittable]
    verdicts = check_measurements(chosen).rows
    excluded += [
        (row, f"batch latency {v.measured_s:.3g} s < bound {v.bound_s:.3g} s")
        for row, v in zip(chosen, verdicts, strict=True)
        if v.impossible
    ]
    possible = [row for row, v in zip(chosen, verdicts, strict=True) if not v.impossible]
    if not possible:  # nothing left to fit: say why, not max() of an empty sequence
        raise InputError(
            f"no row of runtime {runtime!r} can be fitted: all {len(excluded)} excluded "
            f"(first: {excluded[0][1]})"
        )
    data = decompose(possible, formats, kv_formats)
    fast = _faster_than_bound(data)
    excluded += [(data.rows[i], reason) for i, reason in fast.items()]
    if fast:
        data = data.subset(np.array([i not in fast for i in range(len(data.rows))]))
    return data, tuple(excluded)


def calibrate_runtime(
    measurements: Sequence[Measurement],
    runtime: str,
    *,
    hardware: Sequence[str] = (),
    command: str,
    formats: tuple[WeightFormat, ...] = (),
    format_sources: dict[str, str] | None = None,
    description: str = "",
    inherit: Sequence[str] = (),
    kv_formats: tuple[KVFormat, ...] = (),
    kv_format_sources: dict[str, dict[str, str]] | None = None,
) -> Calibration:
    """Fit profile ``runtime`` to its rows (of ``hardware`` if given); rows the model
    cannot express (a mesh splitting heads) or physics forbids (faster than the
    efficiency-1 bound) are left out and listed in ``excluded`` with the reason
    (`calibration_rows`). ``inherit``: efficiencies not fitted, each platform preset's
    own applying."""
    data, excluded = calibration_rows(
        measurements, runtime, hardware=hardware, formats=formats, kv_formats=kv_formats
    )
    fit = fit_runtime(
        data, runtime, formats, inherit=inherit, description=description, kv_formats=kv_formats
    )
    cv = cross_validate(data, runtime, formats, inherit, kv_formats)
    document = profile_document(
        fit,
        command,
        cv,
        data,
        formats,
        format_sources or {},
        kv_formats=kv_formats,
        kv_format_sources=kv_format_sources or {},
    )
    return Calibration(fit=fit, cv=cv, data=data, excluded=excluded, document=document)


def _unsplittable(rows: Sequence[Measurement]) -> dict[int, str]:
    """Rows whose tp / pp / ep mesh the model cannot be split over (fractional heads),
    with the reason (`genz.scenario_checks.check_parallelism`, once per model and mesh)."""
    reasons: dict[tuple[str, int, int, int], str] = {}
    found = {}
    for index, row in enumerate(rows):
        key = (row.model, row.tp, row.pp, row.ep)
        if key not in reasons:
            try:
                check_parallelism(load_model(row.model), Parallelism(row.tp, row.pp, row.ep))
                reasons[key] = ""
            except InputError as error:
                reasons[key] = str(error)
        if reasons[key]:
            found[index] = reasons[key]
    return found


def _faster_than_bound(data: CalibrationRows) -> dict[int, str]:
    """Rows whose measured TTFT or inter-token latency beats the efficiency-1 bound
    (`genz.physics_check` covers batch latency), with the reason."""
    bound = data.predict(UNIT_PROFILE)
    found = {}
    for metric, label in (("ttft_s", "TTFT"), ("itl_s", "inter-token latency")):
        measured = data.measured[metric]
        for index in np.flatnonzero(np.isfinite(measured) & (measured < bound[metric])):
            found[int(index)] = (
                f"{label} {measured[index]:.3g} s < bound {bound[metric][index]:.3g} s"
            )
    return found


def calibration_inputs(command: str) -> dict[str, Any]:
    """Measurement files, runtime, hardware and formats file of a ``codesign calibrate``
    command (a profile's ``calibrated_from``); paths under ``data/`` resolve to the
    installed data folder."""
    words = shlex.split(command)
    if words[:2] != ["codesign", "calibrate"]:
        raise InputError(f"not a codesign calibrate command: {command!r}")
    found: dict[str, list[str]] = {}
    flag = ""
    for word in words[2:]:
        if word.startswith("--"):
            flag = word[2:]
            found.setdefault(flag, [])
        elif flag:
            found[flag].append(word)

    def resolve(path: str) -> Path:
        return data_dir() / path[len("data/") :] if path.startswith("data/") else Path(path)

    return {
        "measurements": [resolve(path) for path in found.get("measurements", [])],
        "runtime": found.get("runtime", [""])[0],
        "hardware": tuple(",".join(found.get("hw", [])).split(",")) if "hw" in found else (),
        "formats": resolve(found["formats"][0]) if "formats" in found else None,
        "inherit": tuple(",".join(found.get("inherit", [])).split(","))
        if "inherit" in found
        else (),
    }


def recalibrate(profile: RuntimeProfile) -> Calibration:
    """Re-run the calibration that produced ``profile`` (its ``accuracy.calibrated_from``)."""
    if profile.accuracy is None:
        raise InputError(f"runtime {profile.name!r} was not produced by codesign calibrate")
    command = profile.accuracy.calibrated_from
    inputs = calibration_inputs(command)
    formats, sources = load_formats(inputs["formats"]) if inputs["formats"] else ((), {})
    kv_formats, kv_sources = load_kv_formats(inputs["formats"]) if inputs["formats"] else ((), {})
    return calibrate_runtime(
        [row for path in inputs["measurements"] for row in load_tagged_measurements(path)],
        inputs["runtime"],
        hardware=inputs["hardware"],
        command=command,
        formats=formats,
        format_sources=sources,
        description=profile.description,
        inherit=inputs["inherit"],
        kv_formats=kv_formats,
        kv_format_sources=kv_sources,
    )
