"""Write a fitted runtime profile as YAML, every value with the command that fitted it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml

from genz import KVFormat, ProfileDomain, WeightFormat, load_model, parameter_count
from genz.fitting import ACCURACY_METRICS, INHERITED, PHASE_KEYS, PHASES
from roofline import InputError

from .cross_validation import CrossValidation, RuntimeFit
from .fit import Fit, kv_scale_name
from .rows import CalibrationRows

#: Quantiles of measured / predicted stored in a profile's accuracy block.
LEVELS = (0.1, 0.5, 0.9)


def _quantiles(ratios: np.ndarray) -> dict[str, float]:
    return {str(level): _number(float(np.quantile(ratios, level))) for level in LEVELS}


def _number(value: float) -> float:
    return float(f"{value:.4g}")


def _phases(fit: Fit, command: str) -> dict[str, Any]:
    """The fitted phase values (shared by prefill and decode) with provenance: the three
    always fitted, then those the rows identified (`genz.runtime.OPTIONAL_PHASE_KEYS`)."""
    return {
        key: _fitted(fit, key, command)
        for key in PHASE_KEYS
        if key in PHASE_KEYS[:3] or key in fit.values
    }


def _fitted(fit: Fit, name: str, command: str) -> dict[str, Any]:
    if name in fit.inherited:  # not fitted: each platform preset's own
        return {"value": INHERITED, "calibrated_from": command}
    if name in fit.capped:  # no row moves with it (at the bandwidth cap): its upper bound
        return {
            "value": _number(fit.values[name]),
            "calibrated_from": f"{command} (upper bound: at the bandwidth cap)",
        }
    if name in fit.held:  # not identifiable from the class's rows: the default's value
        return {"value": _number(fit.values[name]), "calibrated_from": f"{command} (default)"}
    low, high = fit.intervals[name]
    return {
        "value": _number(fit.values[name]),
        "interval_95": [_number(low), _number(high)],
        "calibrated_from": command,
    }


def profile_document(
    runtime_fit: RuntimeFit,
    command: str,
    cv: CrossValidation,
    data: CalibrationRows,
    formats: tuple[WeightFormat, ...],
    format_sources: dict[str, str],
    kv_formats: tuple[KVFormat, ...] = (),
    kv_format_sources: dict[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The YAML mapping of a fitted profile (`genz.runtime.runtime_from_dict` reads it)."""

    fit = runtime_fit.default

    def fitted(name: str) -> dict[str, Any]:
        return _fitted(fit, name, command)

    phase = _phases(fit, command)
    document: dict[str, Any] = {"name": fit.profile.name}
    if fit.profile.description:
        document["description"] = fit.profile.description
    document.update({name: phase for name in PHASES})
    if "all_reduce_latency_s" in fit.values:
        document["all_reduce_latency_s"] = fitted("all_reduce_latency_s")
    if formats:
        document["weight_formats"] = {
            fmt.name: {
                **{
                    key: {"value": getattr(fmt, key), "source": format_sources[fmt.name]}
                    for key in ("nominal_bits", "stored_bits", "embedding_bits", "lm_head_bits")
                },
                **(
                    {"memory_efficiency_scale": fitted(f"{fmt.name}.memory_efficiency_scale")}
                    if f"{fmt.name}.memory_efficiency_scale" in fit.values
                    else {}
                ),
            }
            for fmt in formats
        }
    if kv_formats:
        document["kv_formats"] = _kv_formats(fit, command, kv_formats, kv_format_sources or {})
    if runtime_fit.classes:
        document["device_classes"] = {
            kind: {
                **{name: _phases(class_fit, command) for name in PHASES},
                **(
                    {"all_reduce_latency_s": _fitted(class_fit, "all_reduce_latency_s", command)}
                    if "all_reduce_latency_s" in class_fit.values
                    else {}
                ),
                **_class_kv_formats(class_fit, command, kv_formats),
            }
            for kind, class_fit in runtime_fit.classes.items()
        }
    document["domain"] = domain_of(data).to_dict()
    fitted_times = data.predict(runtime_fit.profile)
    measured = [m for m in ("batch_latency_s", *ACCURACY_METRICS) if np.any(cv.scored(data, m))]
    headline = measured[0]  # batch latency when measured (`genz.runtime.Accuracy.metric`)
    document["accuracy"] = {
        "method": cv.method,
        "hardware": sorted(set(data.hw)),
        **({} if headline == "batch_latency_s" else {"metric": headline}),
        **_metric_accuracy(cv, data, fitted_times, headline),
        "metrics": {
            metric: _metric_accuracy(cv, data, fitted_times, metric) for metric in measured[1:]
        },
        "calibrated_from": command,
    }
    if not document["accuracy"]["metrics"]:
        del document["accuracy"]["metrics"]
    return document


def domain_of(data: CalibrationRows) -> ProfileDomain:
    """What the rows of a fit span (`genz.ProfileDomain`): hardware and classes, the
    harnesses, versions and dates they state, weight bits, and the ranges of batch,
    lengths, model parameters and tensor-parallel degree."""
    rows = data.rows
    sizes = {name: parameter_count(load_model(name)).total for name in {r.model for r in rows}}

    def span(values: list[float]) -> tuple[float, float]:
        return (_number(min(values)), _number(max(values)))

    def names(values: list[str]) -> tuple[str, ...]:
        return tuple(sorted({value for value in values if value}))

    return ProfileDomain(
        hardware=names(list(data.hw)),
        device_classes=names(list(data.kinds)),
        harnesses=names([row.harness for row in rows]),
        runtime_versions=names([row.runtime_version for row in rows]),
        dates=names([row.date for row in rows]),
        weight_bits=tuple(sorted({float(row.weight_bits) for row in rows})),
        batch=span([row.batch for row in rows]),
        input_tokens=span([row.input_tokens for row in rows]),
        output_tokens=span([row.output_tokens for row in rows]),
        parameters=span([sizes[row.model] for row in rows]),
        tp=span([row.tp for row in rows]),
    )


def _kv_formats(
    fit: Fit,
    command: str,
    kv_formats: tuple[KVFormat, ...],
    sources: dict[str, dict[str, str]],
) -> dict[str, Any]:
    """Each KV format with its sources and, when the rows identified it, its fitted
    emulated memory-efficiency scale (else none: the neutral 1)."""
    document = {}
    for fmt in kv_formats:
        cited = sources.get(fmt.name, {})
        entry: dict[str, Any] = {
            "nominal_bits": {"value": fmt.nominal_bits, "source": cited.get("nominal_bits", "")},
            "native_dtype": {"value": fmt.native_dtype, "source": cited.get("native_dtype", "")},
        }
        if kv_scale_name(fmt) in fit.values:
            entry["emulated_memory_efficiency_scale"] = _fitted(fit, kv_scale_name(fmt), command)
        document[fmt.name] = entry
    return document


def _class_kv_formats(
    class_fit: Fit, command: str, kv_formats: tuple[KVFormat, ...]
) -> dict[str, Any]:
    """A device class's own fitted KV-format scales (none held at the default's)."""
    own = {
        fmt.name: {
            "emulated_memory_efficiency_scale": _fitted(class_fit, kv_scale_name(fmt), command)
        }
        for fmt in kv_formats
        if kv_scale_name(fmt) in class_fit.values and kv_scale_name(fmt) not in class_fit.held
    }
    return {"kv_formats": own} if own else {}


def _metric_accuracy(
    cv: CrossValidation, data: CalibrationRows, fitted: dict[str, np.ndarray], metric: str
) -> dict[str, Any]:
    """Rows and quantiles of measured / held-out predicted ``metric``, overall and per
    device class (with the fitted profile's in-sample quantiles beside them)."""
    ratios = cv.ratios(data, metric)
    scored = cv.scored(data, metric)
    kinds = np.array(data.kinds)[scored]
    hardware = np.array(data.hw)[scored]
    in_sample = data.measured[metric][scored] / fitted[metric][scored]
    return {
        "rows": int(ratios.size),
        "ratio_quantiles": _quantiles(ratios),
        "device_classes": {
            str(kind): {
                "hardware": sorted(set(hardware[kinds == kind].tolist())),
                "rows": int(np.sum(kinds == kind)),
                "ratio_quantiles": _quantiles(ratios[kinds == kind]),
                "in_sample_ratio_quantiles": _quantiles(in_sample[kinds == kind]),
            }
            for kind in sorted(set(kinds.tolist()))
        },
    }


class _NoAliases(yaml.SafeDumper):
    """Safe YAML without anchors: the phases share one mapping, written out twice."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def write_profile(document: dict[str, Any], out: str | Path) -> Path:
    """Write ``document`` to ``out`` (a ``.yaml`` file in an existing folder), nowhere else."""
    path = Path(out)
    if path.suffix not in (".yaml", ".yml"):
        raise InputError(f"--out must name a .yaml file, got {str(out)!r}")
    if not path.parent.is_dir():
        raise InputError(f"--out folder does not exist: {path.parent}")
    text = yaml.dump(document, Dumper=_NoAliases, sort_keys=False, width=100)
    path.write_text(text, encoding="utf-8")
    return path
