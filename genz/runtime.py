"""Serving-stack (runtime) profiles: what the physics model cannot know, as data.

A profile (``data/runtimes/<name>.yaml``) says, per phase (prefill, decode), the
fraction of the platform's peak compute and memory bandwidth the runtime's kernels
reach and the fixed cost of one forward step (scheduler, sampling, launches); the
small-message latency of one all-reduce; how each weight format is really stored
(effective bits of the layer weights, bits of embedding and LM head) and how much
slower its dequantising kernels stream weights; how a KV-cache format whose dtype the
device has no arithmetic for (FP8 on an A100) is streamed; for mixture-of-experts models, how
independently a step's tokens pick their experts. Values may be overridden per device
class (`roofline.Platform.device_class`, e.g. ``nvidia-gpu``; never a device's own numbers).

Every value carries ``source:`` (a citation) or ``calibrated_from:`` (the command
and data that fitted it). The ``ideal`` profile sets nothing: the platform preset's
own efficiencies and kernel overheads apply, so answers stay those of the physics.

YAML layout::

    name: vllm
    description: ...
    prefill: {compute_efficiency: V, memory_efficiency: V, step_overhead_s: V,
              sequence_overhead_s: V,            # optional (0)
              routing_independence: V}           # optional (1)
    decode: {...the same keys...}
    all_reduce_latency_s: V                      # optional (else ring latencies)
    weight_formats:                              # optional
      Q4_K_M: {nominal_bits: 4, stored_bits: V, embedding_bits: V, lm_head_bits: V,
               memory_efficiency_scale: V}
    kv_formats:                                  # optional
      fp8: {nominal_bits: V, native_dtype: {value: fp8, source: ...},
            emulated_memory_efficiency_scale: V} # optional (1)
    device_classes:                              # optional overrides per device class
      nvidia-gpu: {prefill: {...}, decode: {...}, all_reduce_latency_s: V}
    domain: {hardware: [...], device_classes: [...], batch: [lo, hi], ...}
                                                 # optional: what it was fitted on
                                                 # (genz.profile_domain)
    accuracy: {method: ..., hardware: [...], rows: N,
               ratio_quantiles: {"0.1": r, "0.5": r, "0.9": r},
               device_classes: {nvidia-gpu: {hardware: [...], rows: N, ratio_quantiles: ...}},
               metrics: {ttft_s: {rows: N, ratio_quantiles: ..., device_classes: ...},
                         itl_s: {...}},          # optional: TTFT, inter-token latency
               calibrated_from: ...}

where ``V`` is ``{value: x, source: "..."}`` or ``{value: x, calibrated_from:
"...", interval_95: [lo, hi]}``. A phase's ``compute_efficiency`` or
``memory_efficiency`` may be ``{value: platform, ...}``: the platform preset's own
efficiency (``efficiency.compute`` / ``.memory``) applies, as in ``ideal``: what
``codesign calibrate --inherit`` writes for a parameter no measured row depends on.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from roofline import (
    DTYPE_BITS,
    InputError,
    Platform,
    data_dir,
    is_preset_file,
    load_user_document,
    unknown_name,
)

from .profile_domain import ProfileDomain, domain_from_dict

Array = NDArray[Any]

#: Largest profile file read, bytes.
MAX_PROFILE_BYTES = 200_000

PHASES = ("prefill", "decode")
PHASE_KEYS = (
    "compute_efficiency",
    "memory_efficiency",
    "step_overhead_s",
    "sequence_overhead_s",
    "routing_independence",
)
#: Phase keys whose value may be the platform preset's own (``value: platform``).
INHERITABLE = ("compute_efficiency", "memory_efficiency")
INHERITED = "platform"
#: Phase keys a profile may leave out (each then takes its neutral value: 0 s or 1).
OPTIONAL_PHASE_KEYS = PHASE_KEYS[3:]
FORMAT_KEYS = (
    "nominal_bits",
    "stored_bits",
    "embedding_bits",
    "lm_head_bits",
    "memory_efficiency_scale",
)
KV_FORMAT_KEYS = ("nominal_bits", "native_dtype", "emulated_memory_efficiency_scale")
TOP_KEYS = frozenset(
    {
        "name",
        "description",
        "prefill",
        "decode",
        "all_reduce_latency_s",
        "weight_formats",
        "kv_formats",
        "device_classes",
        "accuracy",
        "domain",
    }
)
ACCURACY_KEYS = frozenset(
    {"method", "hardware", "device_classes", "rows", "ratio_quantiles", "calibrated_from"}
)
#: Optional accuracy key: held-out error of the metrics other than batch latency.
ACCURACY_METRICS = ("ttft_s", "itl_s")
METRIC_ACCURACY_KEYS = frozenset({"rows", "ratio_quantiles", "device_classes"})
#: Fewest held-out rows of a metric (overall, or of a device class) whose own error
#: quantiles give an interval; below it the batch-latency quantiles stand in.
MIN_METRIC_ROWS = 20
CLASS_ACCURACY_KEYS = frozenset(
    {"hardware", "rows", "ratio_quantiles", "in_sample_ratio_quantiles"}
)
VALUE_KEYS = frozenset({"value", "source", "calibrated_from", "interval_95"})
#: Accepted range of each value, inclusive.
RANGES = {
    "compute_efficiency": (1e-3, 1.0),
    "memory_efficiency": (1e-3, 1.0),
    "step_overhead_s": (0.0, 1.0),
    "sequence_overhead_s": (0.0, 0.1),
    "routing_independence": (0.0, 1.0),
    "all_reduce_latency_s": (0.0, 0.1),
    "nominal_bits": (1.0, 32.0),
    "stored_bits": (1.0, 32.0),
    "embedding_bits": (1.0, 32.0),
    "lm_head_bits": (1.0, 32.0),
    "memory_efficiency_scale": (0.05, 2.0),
    "emulated_memory_efficiency_scale": (0.01, 1.0),
}
#: Dtypes that stand in for each other when a platform lists one (`Platform.peak`).
_TWIN_DTYPES = {"bf16": "fp16", "fp16": "bf16"}


@dataclass(frozen=True)
class PhaseProfile:
    """Achieved fractions of peak (compute, memory bandwidth) and fixed costs of a step:
    ``step_overhead_s`` once per forward step, ``sequence_overhead_s`` per sequence in
    the step (scheduling, sampling), seconds.

    An efficiency of None is the platform preset's own (`RuntimeProfile.on_platform`).

    ``routing_independence`` ``s`` in [0, 1] (optional, default 1: the physics) sets
    how many of a step's ``T`` routed tokens choose their experts independently,
    ``1 + s (T - 1)``, in the uniform-routing expectation of distinct experts a
    mixture-of-experts layer touches (`genz.graph.expected_experts_touched`): 1 is
    independent uniform routing, 0 every token of the step picking the same experts
    (the expert weights a decode step streams then stop growing with batch).
    """

    compute_efficiency: float | None
    memory_efficiency: float | None
    step_overhead_s: float
    sequence_overhead_s: float = 0.0
    routing_independence: float = 1.0

    @property
    def inherits(self) -> bool:
        """True when an efficiency is the platform preset's own (None)."""
        return self.compute_efficiency is None or self.memory_efficiency is None

    def on_platform(self, platform: Platform) -> PhaseProfile:
        """This phase with each inherited efficiency set to ``platform``'s own."""
        if not self.inherits:
            return self
        return dataclasses.replace(
            self,
            compute_efficiency=(
                platform.efficiency.compute
                if self.compute_efficiency is None
                else self.compute_efficiency
            ),
            memory_efficiency=(
                platform.efficiency.memory
                if self.memory_efficiency is None
                else self.memory_efficiency
            ),
        )

    def fixed_s(self, steps: Array, sequences: Array) -> Array:
        """Fixed cost of ``steps`` forward steps of ``sequences`` sequences each, seconds."""
        return steps * (self.step_overhead_s + self.sequence_overhead_s * sequences)


@dataclass(frozen=True)
class WeightFormat:
    """How a runtime stores one weight format.

    ``nominal_bits`` is the width users name (4 for Q4_K_M) and selects the format;
    ``stored_bits`` the mean bits per layer weight actually stored (scales and
    higher-precision tensors included); ``embedding_bits`` / ``lm_head_bits`` those
    of the model-level tensors; ``memory_efficiency_scale`` multiplies the phase's
    memory efficiency (dequantising kernels stream weights slower than 16-bit ones),
    the product capped at 1 (`genz.runtime_cost.scaled_terms`).
    """

    name: str
    nominal_bits: float
    stored_bits: float
    embedding_bits: float
    lm_head_bits: float
    memory_efficiency_scale: float = 1.0


@dataclass(frozen=True)
class KVFormat:
    """How a runtime streams one KV-cache format.

    ``nominal_bits`` is the scenario's ``kv_bits`` that selects the format (8 for an FP8
    cache); ``native_dtype`` the dtype whose arithmetic its attention kernels use to
    convert cached elements (``fp8``). On a platform that lists no peak for that dtype
    (`emulated_on`) the kernels convert every cached element in software, and the KV
    cache's bytes (`genz.graph.OpTerms.kv_bytes`) stream at the phase's memory
    efficiency times ``emulated_memory_efficiency_scale`` (<= 1; 1: no slowdown);
    elsewhere, and for every other ``kv_bits``, nothing changes
    (`genz.runtime_cost.kv_format_memory_s`).
    """

    name: str
    nominal_bits: float
    native_dtype: str
    emulated_memory_efficiency_scale: float = 1.0

    def emulated_on(self, dtypes: Collection[str]) -> bool:
        """True when a platform listing peaks for ``dtypes`` has no ``native_dtype``
        arithmetic (bf16 and fp16 stand in for each other, as in `Platform.peak`)."""
        twin = _TWIN_DTYPES.get(self.native_dtype)
        return self.native_dtype not in dtypes and (twin is None or twin not in dtypes)


@dataclass(frozen=True)
class ClassAccuracy:
    """Error on one device class's rows, quantiles of measured / predicted: held out
    (``ratio_quantiles``) and by the fitted profile itself (``in_sample_...``)."""

    hardware: tuple[str, ...]
    rows: int
    ratio_quantiles: Mapping[float, float]
    in_sample_ratio_quantiles: Mapping[float, float]


@dataclass(frozen=True)
class MetricAccuracy:
    """Held-out error of one metric besides batch latency (``ttft_s``, ``itl_s``):
    quantiles of measured / predicted over its ``rows``, and per device class."""

    rows: int
    ratio_quantiles: Mapping[float, float]
    classes: Mapping[str, ClassAccuracy]


@dataclass(frozen=True)
class Accuracy:
    """Cross-validated error of a profile: quantiles of measured / predicted batch
    latency, over all rows and per device class; ``metrics``: the same of TTFT and
    inter-token latency where rows measure them. ``metric`` names what the top-level
    quantiles measure: batch latency, or, for a profile calibrated on rows without one
    (decode-only rows), the first of `ACCURACY_METRICS` its rows measure."""

    method: str
    hardware: tuple[str, ...]
    rows: int
    ratio_quantiles: Mapping[float, float]
    classes: Mapping[str, ClassAccuracy]
    calibrated_from: str
    metrics: Mapping[str, MetricAccuracy] = field(default_factory=dict)
    metric: str = "batch_latency_s"

    @property
    def device_classes(self) -> tuple[str, ...]:
        """The device classes measured."""
        return tuple(self.classes)


@dataclass(frozen=True)
class RuntimeProfile:
    """One serving stack; empty `phases` = the ``ideal`` runtime (physics only)."""

    name: str
    description: str = ""
    phases: Mapping[str, PhaseProfile] = field(default_factory=dict)
    all_reduce_latency_s: float | None = None
    weight_formats: tuple[WeightFormat, ...] = ()
    device_classes: Mapping[str, Mapping[str, PhaseProfile]] = field(default_factory=dict)
    class_all_reduce_latency_s: Mapping[str, float] = field(default_factory=dict)
    accuracy: Accuracy | None = None
    kv_formats: tuple[KVFormat, ...] = ()
    class_kv_scales: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    domain: ProfileDomain | None = None

    @property
    def is_ideal(self) -> bool:
        """True when the profile changes nothing (today's physics)."""
        return (
            not self.phases
            and not self.weight_formats
            and not self.kv_formats
            and self.all_reduce_latency_s is None
        )

    def phase(self, phase: str, platform: Platform) -> PhaseProfile:
        """The phase's values on ``platform``: its device class's override, else the
        default (inherited efficiencies unresolved: see `on_platform`)."""
        override = self.device_classes.get(platform.device_class, {})
        if phase in override:
            return override[phase]
        return self.phases[phase]

    def on_platform(self, platform: Platform) -> RuntimeProfile:
        """This profile with every inherited efficiency (None) set to ``platform``'s
        preset value; itself when none is inherited. Apply before costing on the physics
        platform (`genz.resolved.physics_platform`), which drops those values."""
        phases = [*self.phases.values()] + [
            phase for override in self.device_classes.values() for phase in override.values()
        ]
        if not any(phase.inherits for phase in phases):
            return self
        return dataclasses.replace(
            self,
            phases={name: phase.on_platform(platform) for name, phase in self.phases.items()},
            device_classes={
                kind: {name: phase.on_platform(platform) for name, phase in override.items()}
                for kind, override in self.device_classes.items()
            },
        )

    def all_reduce_latency(self, device_class: str) -> float | None:
        """Small-message all-reduce latency on a device class (its override, else the
        default; None: the platform's ring latencies), seconds."""
        return self.class_all_reduce_latency_s.get(device_class, self.all_reduce_latency_s)

    def kv_scale(self, fmt: KVFormat, device_class: str) -> float:
        """A KV format's emulated memory-efficiency scale on a device class (its
        override, else the format's own)."""
        return self.class_kv_scales.get(device_class, {}).get(
            fmt.name, fmt.emulated_memory_efficiency_scale
        )

    def format_for_bits(self, bits: float) -> WeightFormat | None:
        """The weight format whose ``nominal_bits`` is ``bits``, if the profile lists one."""
        for fmt in self.weight_formats:
            if math.isclose(fmt.nominal_bits, bits):
                return fmt
        return None


def runtimes_dir() -> Path:
    """Folder of the shipped runtime profiles."""
    return data_dir() / "runtimes"


#: Serving stacks the issue names that have no shipped profile yet (data/runtimes/README.md
#: gives the published row counts); `load_runtime` says how to calibrate one.
UNCALIBRATED_RUNTIMES = frozenset({"mlc", "sglang", "mlx"})


def list_runtimes() -> list[str]:
    """Names of the shipped runtime profiles."""
    return sorted(path.stem for path in runtimes_dir().glob("*.yaml"))


def load_runtime(name_or_path: str | Path) -> RuntimeProfile:
    """Load a shipped profile by name (``'vllm'``) or a YAML file by path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = runtimes_dir() / f"{name_or_path}.yaml"
        if not is_preset_file(path) and str(name_or_path) in UNCALIBRATED_RUNTIMES:
            raise InputError(
                f"runtime {str(name_or_path)!r}: no calibrated profile ships (too few published "
                f"measurements); make one: codesign calibrate --measurements runs.csv "
                f"--runtime {name_or_path} --out {name_or_path}.yaml (decode-only runs: add "
                f"--inherit compute_efficiency), then --runtime {name_or_path}.yaml"
            )
        if not is_preset_file(path):
            raise unknown_name("runtime", str(name_or_path), list_runtimes(), "or a .yaml file")
    document = load_user_document(
        path, kind="runtime profile", max_bytes=MAX_PROFILE_BYTES, fmt="yaml"
    )
    return runtime_from_dict(document, origin=str(path))


def runtime_from_dict(document: Any, origin: str = "<dict>") -> RuntimeProfile:
    """Build a `RuntimeProfile` from its mapping, rejecting unknown keys by name."""
    where = f"{origin}:"
    _mapping(document, origin)
    _known(document, TOP_KEYS, origin)
    name = document.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where} name must be a non-empty string")
    phases = {
        phase: _phase(document[phase], f"{origin}: {phase}")
        for phase in PHASES
        if phase in document
    }
    if len(phases) == 1:
        missing = next(phase for phase in PHASES if phase not in phases)
        raise InputError(f"{where} {missing} missing (give both prefill and decode, or neither)")
    classes: dict[str, dict[str, PhaseProfile]] = {}
    class_latency: dict[str, float] = {}
    class_kv: dict[str, dict[str, float]] = {}
    kv_formats = kv_formats_from_dict(document.get("kv_formats", {}), f"{origin}: kv_formats")
    for kind, override in _mapping(
        document.get("device_classes", {}), f"{origin}: device_classes"
    ).items():
        label = f"{origin}: device_classes.{kind}"
        _known(
            _mapping(override, label),
            frozenset({*PHASES, "all_reduce_latency_s", "kv_formats"}),
            label,
        )
        if not phases:
            raise InputError(f"{label}: needs default prefill and decode values")
        classes[str(kind)] = {
            phase: _phase(values, f"{label}.{phase}")
            for phase, values in override.items()
            if phase in PHASES
        }
        if "all_reduce_latency_s" in override:
            class_latency[str(kind)] = _value(
                override["all_reduce_latency_s"],
                "all_reduce_latency_s",
                f"{label}.all_reduce_latency_s",
            )
        if "kv_formats" in override:
            class_kv[str(kind)] = _class_kv_scales(
                override["kv_formats"], kv_formats, f"{label}.kv_formats"
            )
    latency = document.get("all_reduce_latency_s")
    if latency is not None and not phases:
        raise InputError(f"{where} all_reduce_latency_s needs prefill and decode values")
    formats = tuple(
        weight_format_from_dict(str(fmt), values, f"{origin}: weight_formats.{fmt}")
        for fmt, values in _mapping(
            document.get("weight_formats", {}), f"{origin}: weight_formats"
        ).items()
    )
    nominal = [fmt.nominal_bits for fmt in formats]
    if len(set(nominal)) < len(nominal):
        raise InputError(f"{origin}: weight_formats: two formats share nominal_bits")
    if kv_formats and not phases:
        raise InputError(f"{where} kv_formats needs prefill and decode values")
    return RuntimeProfile(
        name=name,
        description=str(document.get("description", "")),
        phases=phases,
        all_reduce_latency_s=None
        if latency is None
        else _value(latency, "all_reduce_latency_s", f"{origin}: all_reduce_latency_s"),
        weight_formats=formats,
        device_classes=classes,
        class_all_reduce_latency_s=class_latency,
        accuracy=None
        if "accuracy" not in document
        else _accuracy(document["accuracy"], f"{origin}: accuracy"),
        kv_formats=kv_formats,
        class_kv_scales=class_kv,
        domain=None
        if "domain" not in document
        else domain_from_dict(document["domain"], f"{origin}: domain"),
    )


def _mapping(value: Any, label: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{label}: expected a mapping, got {type(value).__name__}")
    return value


def _known(document: Mapping[str, Any], accepted: frozenset[str], label: str) -> None:
    unknown = sorted(set(map(str, document)) - accepted)
    if unknown:
        raise InputError(
            f"{label}: unknown key {unknown[0]!r}; accepted: {', '.join(sorted(accepted))}"
        )


def _value(entry: Any, key: str, label: str) -> float:
    """A value mapping's number after checking its range and provenance."""
    _provenance(entry, label)
    number = entry["value"]
    low, high = RANGES[key]
    if isinstance(number, bool) or not isinstance(number, int | float) or not low <= number <= high:
        raise InputError(f"{label}: value must be a number in [{low:g}, {high:g}], got {number!r}")
    return float(number)


def _provenance(entry: Any, label: str) -> None:
    _known(_mapping(entry, label), VALUE_KEYS, label)
    if "value" not in entry:
        raise InputError(f"{label}: missing 'value'")
    if not ("source" in entry or "calibrated_from" in entry):
        raise InputError(f"{label}: needs 'source' or 'calibrated_from'")


def _efficiency(entry: Any, key: str, label: str) -> float | None:
    """An efficiency value, or None for ``value: platform`` (the preset's own)."""
    _provenance(entry, label)
    if entry["value"] == INHERITED:
        return None
    if isinstance(entry["value"], str):
        low, high = RANGES[key]
        raise InputError(
            f"{label}: value must be a number in [{low:g}, {high:g}] or {INHERITED!r} "
            f"(the platform preset's own), got {entry['value']!r}"
        )
    return _value(entry, key, label)


def _phase(entry: Any, label: str) -> PhaseProfile:
    _known(_mapping(entry, label), frozenset(PHASE_KEYS), label)
    missing = [key for key in PHASE_KEYS if key not in entry and key not in OPTIONAL_PHASE_KEYS]
    if missing:
        raise InputError(f"{label}: missing {missing[0]!r}")
    values = {
        key: _value(entry[key], key, f"{label}.{key}")
        for key in PHASE_KEYS
        if key in entry and key not in INHERITABLE
    }
    compute, memory = (_efficiency(entry[key], key, f"{label}.{key}") for key in INHERITABLE)
    return PhaseProfile(compute, memory, **values)


def weight_format_from_dict(name: str, entry: Any, label: str) -> WeightFormat:
    _known(_mapping(entry, label), frozenset(FORMAT_KEYS), label)
    missing = [key for key in FORMAT_KEYS[:4] if key not in entry]
    if missing:
        raise InputError(f"{label}: missing {missing[0]!r}")
    values = {key: _value(entry[key], key, f"{label}.{key}") for key in FORMAT_KEYS if key in entry}
    return WeightFormat(name=name, **values)


def kv_formats_from_dict(entry: Any, label: str) -> tuple[KVFormat, ...]:
    """The ``kv_formats`` mapping of a profile or formats file (name -> entry), each
    entry checked by `kv_format_from_dict`; two formats may not share nominal_bits."""
    formats = tuple(
        kv_format_from_dict(str(name), values, f"{label}.{name}")
        for name, values in _mapping(entry, label).items()
    )
    nominal = [fmt.nominal_bits for fmt in formats]
    if len(set(nominal)) < len(nominal):
        raise InputError(f"{label}: two formats share nominal_bits")
    return formats


def _class_kv_scales(entry: Any, formats: tuple[KVFormat, ...], label: str) -> dict[str, float]:
    """A device class's override of KV formats' emulated scales (format name ->
    ``{emulated_memory_efficiency_scale: V}``); each format must be a top-level one."""
    names = {fmt.name for fmt in formats}
    scales = {}
    for name, values in _mapping(entry, label).items():
        where = f"{label}.{name}"
        if str(name) not in names:
            raise InputError(
                f"{where}: not a format of kv_formats; accepted: {', '.join(sorted(names))}"
            )
        key = KV_FORMAT_KEYS[2]
        _known(_mapping(values, where), frozenset({key}), where)
        if key not in values:
            raise InputError(f"{where}: missing {key!r}")
        scales[str(name)] = _value(values[key], key, f"{where}.{key}")
    return scales


def kv_format_from_dict(name: str, entry: Any, label: str) -> KVFormat:
    """One KV-cache format: ``nominal_bits`` and the optional scale are values with
    provenance; ``native_dtype`` is ``{value: <dtype name>, source: ...}``."""
    _known(_mapping(entry, label), frozenset(KV_FORMAT_KEYS), label)
    missing = [key for key in KV_FORMAT_KEYS[:2] if key not in entry]
    if missing:
        raise InputError(f"{label}: missing {missing[0]!r}")
    dtype_label = f"{label}.native_dtype"
    dtype_entry = _mapping(entry["native_dtype"], dtype_label)
    _known(dtype_entry, VALUE_KEYS - {"interval_95"}, dtype_label)
    if not ("source" in dtype_entry or "calibrated_from" in dtype_entry):
        raise InputError(f"{dtype_label}: needs 'source' or 'calibrated_from'")
    dtype = dtype_entry.get("value")
    if dtype not in DTYPE_BITS:
        raise InputError(
            f"{dtype_label}: value must be a dtype name ({', '.join(sorted(DTYPE_BITS))}), "
            f"got {dtype!r}"
        )
    values = {
        key: _value(entry[key], key, f"{label}.{key}")
        for key in (KV_FORMAT_KEYS[0], KV_FORMAT_KEYS[2])
        if key in entry
    }
    return KVFormat(name=name, native_dtype=str(dtype), **values)


def _accuracy(entry: Any, label: str) -> Accuracy:
    _known(_mapping(entry, label), ACCURACY_KEYS | {"metrics", "metric"}, label)
    headline = str(entry.get("metric", "batch_latency_s"))
    if headline not in ("batch_latency_s", *ACCURACY_METRICS):
        raise InputError(
            f"{label}.metric: one of batch_latency_s, {', '.join(ACCURACY_METRICS)}; "
            f"got {headline!r}"
        )
    missing = sorted(ACCURACY_KEYS - set(entry))
    if missing:
        raise InputError(f"{label}: missing {missing[0]!r}")
    metrics = {}
    for metric, part in _mapping(entry.get("metrics", {}), f"{label}.metrics").items():
        where = f"{label}.metrics.{metric}"
        if metric not in ACCURACY_METRICS:
            raise InputError(f"{where}: unknown metric; accepted: {', '.join(ACCURACY_METRICS)}")
        _known(_mapping(part, where), METRIC_ACCURACY_KEYS, where)
        missing = sorted(METRIC_ACCURACY_KEYS - set(part))
        if missing:
            raise InputError(f"{where}: missing {missing[0]!r}")
        metrics[str(metric)] = MetricAccuracy(
            rows=_count(part["rows"], f"{where}.rows"),
            ratio_quantiles=_quantiles(part["ratio_quantiles"], f"{where}.ratio_quantiles"),
            classes=_classes(part["device_classes"], f"{where}.device_classes"),
        )
    return Accuracy(
        method=str(entry["method"]),
        hardware=tuple(map(str, entry["hardware"])),
        rows=_count(entry["rows"], f"{label}.rows"),
        ratio_quantiles=_quantiles(entry["ratio_quantiles"], f"{label}.ratio_quantiles"),
        classes=_classes(entry["device_classes"], f"{label}.device_classes"),
        calibrated_from=str(entry["calibrated_from"]),
        metrics=metrics,
        metric=headline,
    )


def _count(value: Any, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{label}: must be a whole number >= 1, got {value!r}")
    return value


def _classes(entry: Any, label: str) -> dict[str, ClassAccuracy]:
    """Per device class: its hardware, rows and held-out and in-sample quantiles."""
    classes = {}
    for kind, part in _mapping(entry, label).items():
        where = f"{label}.{kind}"
        _known(_mapping(part, where), CLASS_ACCURACY_KEYS, where)
        missing = sorted(CLASS_ACCURACY_KEYS - set(part))
        if missing:
            raise InputError(f"{where}: missing {missing[0]!r}")
        classes[str(kind)] = ClassAccuracy(
            hardware=tuple(map(str, part["hardware"])),
            rows=_count(part["rows"], f"{where}.rows"),
            ratio_quantiles=_quantiles(part["ratio_quantiles"], f"{where}.ratio_quantiles"),
            in_sample_ratio_quantiles=_quantiles(
                part["in_sample_ratio_quantiles"], f"{where}.in_sample_ratio_quantiles"
            ),
        )
    return classes


def _quantiles(entry: Any, label: str) -> dict[float, float]:
    """Quantile levels in (0, 1) to ratios > 0; 0.1 and 0.9 required."""
    quantiles = _mapping(entry, label)
    parsed: dict[float, float] = {}
    for level, ratio in quantiles.items():
        try:
            level_f, ratio_f = float(level), float(ratio)
        except (TypeError, ValueError):
            raise InputError(f"{label}: numbers expected, got {level!r}: {ratio!r}") from None
        if not (0 < level_f < 1 and ratio_f > 0):
            raise InputError(
                f"{label}: levels must be in (0, 1) and ratios > 0, got {level!r}: {ratio!r}"
            )
        parsed[level_f] = ratio_f
    if not {0.1, 0.9} <= set(parsed):
        raise InputError(f"{label}: needs the 0.1 and 0.9 quantiles")
    return dict(sorted(parsed.items()))
