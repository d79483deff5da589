"""Serving-stack (runtime) profiles: what the physics model cannot know, as data.

A profile (``data/runtimes/<name>.yaml``) says, per phase (prefill, decode), the
fraction of the platform's peak compute and memory bandwidth the runtime's kernels
reach and the fixed cost of one forward step (scheduler, sampling, launches); the
small-message latency of one all-reduce; how each weight format is really stored
(effective bits of the layer weights, bits of embedding and LM head) and how much
slower its dequantising kernels stream weights; how a KV-cache format whose dtype the
device has no arithmetic for (FP8 on an A100) is streamed; for mixture-of-experts models, how
independently a step's tokens pick their experts; optionally a launch cost per kernel
and a fixed cost per request. Values may be overridden per device class
(`roofline.Platform.device_class`, e.g. ``nvidia-gpu``) and per hardware preset
(``devices``: what a fit across devices, `calibration.transfer`, gives each one).

Every value carries ``source:`` (a citation) or ``calibrated_from:`` (the command
and data that fitted it). The ``ideal`` profile sets nothing: the platform preset's
own efficiencies and kernel overheads apply, so answers stay those of the physics.

YAML layout::

    name: vllm
    description: ...
    prefill: {compute_efficiency: V, memory_efficiency: V, step_overhead_s: V,
              sequence_overhead_s: V,            # optional (0)
              routing_independence: V,           # optional (1)
              kernel_launch_s: V,                # optional (the top-level one)
              sequence_overhead_exponent: V}     # optional (1; predict only)
    decode: {...the same keys...}
    all_reduce_latency_s: V                      # optional (else ring latencies)
    weight_formats:                              # optional
      Q4_K_M: {nominal_bits: 4, stored_bits: V, embedding_bits: V, lm_head_bits: V,
               memory_efficiency_scale: V,      # optional (1)
               compute_efficiency_scale: V}     # optional (1)
    kv_formats:                                  # optional
      fp8: {nominal_bits: V, native_dtype: {value: fp8, source: ...},
            emulated_memory_efficiency_scale: V} # optional (1)
    device_classes:                              # optional overrides per device class
      nvidia-gpu: {prefill: {...}, decode: {...}, all_reduce_latency_s: V}
    kernel_launch_s: V                           # optional (0): s per launched kernel,
                                                 # in every phase without its own
    request_overhead_s: V                        # optional (0): s once per request (TTFT)
    devices:                                     # optional overrides per hardware preset
      h100-sxm: {prefill: {...}, decode: {...}, kernel_launch_s: V,  # phases may
                                                 # set their own kernel_launch_s
                 weight_formats: {Q4_K_M: {memory_efficiency_scale: V,
                                           compute_efficiency_scale: V}}}
                                                 # (genz.runtime_devices)
    stack: {runtime: R, harness: H, version_family: F}  # optional: what it was fitted for
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from roofline import (
    InputError,
    Platform,
    data_dir,
    is_preset_file,
    load_user_document,
    unknown_name,
)

from .profile_domain import ProfileDomain, domain_from_dict
from .runtime_accuracy import (
    ACCURACY_KEYS,
    ACCURACY_METRICS,
    MIN_METRIC_ROWS,
    Accuracy,
    ClassAccuracy,
    MetricAccuracy,
    accuracy_from_dict,
)
from .runtime_devices import DeviceOverride, StackKey, devices_from_dict, stack_from_dict
from .runtime_formats import (
    FORMAT_KEYS,
    KV_FORMAT_KEYS,
    KVFormat,
    WeightFormat,
    class_kv_scales,
    kv_format_from_dict,
    kv_formats_from_dict,
    weight_format_from_dict,
)
from .runtime_phase import (
    INHERITABLE,
    OPTIONAL_PHASE_KEYS,
    PHASE_KEYS,
    PHASES,
    PhaseProfile,
    phase_from_dict,
)
from .runtime_values import (
    INHERITED,
    RANGES,
    VALUE_KEYS,
    as_mapping,
    check_known,
    checked_value,
)

__all__ = [
    "ACCURACY_KEYS",
    "ACCURACY_METRICS",
    "FORMAT_KEYS",
    "INHERITABLE",
    "INHERITED",
    "KV_FORMAT_KEYS",
    "MIN_METRIC_ROWS",
    "OPTIONAL_PHASE_KEYS",
    "PHASES",
    "PHASE_KEYS",
    "RANGES",
    "VALUE_KEYS",
    "Accuracy",
    "ClassAccuracy",
    "DeviceOverride",
    "KVFormat",
    "MetricAccuracy",
    "PhaseProfile",
    "RuntimeProfile",
    "StackKey",
    "WeightFormat",
    "kv_format_from_dict",
    "kv_formats_from_dict",
    "list_runtimes",
    "load_runtime",
    "runtime_from_dict",
    "runtimes_dir",
    "weight_format_from_dict",
]

Array = NDArray[Any]

#: Largest profile file read, bytes.
MAX_PROFILE_BYTES = 200_000

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
        "kernel_launch_s",
        "request_overhead_s",
        "devices",
        "stack",
    }
)


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
    kernel_launch_s: float = 0.0
    request_overhead_s: float = 0.0
    devices: Mapping[str, DeviceOverride] = field(default_factory=dict)
    stack: StackKey | None = None

    @property
    def is_ideal(self) -> bool:
        """True when the profile changes nothing (today's physics)."""
        return (
            not self.phases
            and not self.weight_formats
            and not self.kv_formats
            and self.all_reduce_latency_s is None
        )

    def kernel_launch(self, platform: Platform, phase: str | None = None) -> float:
        """Seconds per launched kernel on ``platform`` (`genz.costing.cost_pass` counts
        kernels: busy operators x layers), in ``phase`` (None: the value every phase
        without its own uses). The most specific value set wins: the preset's phase
        (``devices.<preset>.<phase>.kernel_launch_s``), the preset's, its device class's
        phase, the default phase, the profile's top-level ``kernel_launch_s`` (0)."""
        device = self.devices.get(platform.name)
        if phase is not None and device is not None:
            own = device.phases[phase].kernel_launch_s
            if own is not None:
                return own
        if device is not None and device.kernel_launch_s is not None:
            return device.kernel_launch_s
        if phase is not None:
            for values in (
                self.device_classes.get(platform.device_class, {}).get(phase),
                self.phases.get(phase),
            ):
                if values is not None and values.kernel_launch_s is not None:
                    return values.kernel_launch_s
        return self.kernel_launch_s

    def format_scale(self, fmt: WeightFormat, platform: Platform) -> float:
        """A weight format's memory-efficiency scale on ``platform`` (its preset's
        override, else the format's own)."""
        device = self.devices.get(platform.name)
        if device is None:
            return fmt.memory_efficiency_scale
        return device.format_scales.get(fmt.name, fmt.memory_efficiency_scale)

    def compute_format_scale(self, fmt: WeightFormat, platform: Platform) -> float:
        """A weight format's compute-efficiency scale on ``platform`` (its preset's
        override, else the format's own)."""
        device = self.devices.get(platform.name)
        if device is None:
            return fmt.compute_efficiency_scale
        return device.compute_format_scales.get(fmt.name, fmt.compute_efficiency_scale)

    def phase(self, phase: str, platform: Platform) -> PhaseProfile:
        """The phase's values on ``platform``: its preset's override (``devices``), else
        its device class's, else the default (inherited efficiencies unresolved: see
        `on_platform`)."""
        device = self.devices.get(platform.name)
        if device is not None:
            return device.phases[phase]
        override = self.device_classes.get(platform.device_class, {})
        if phase in override:
            return override[phase]
        return self.phases[phase]

    def on_platform(self, platform: Platform) -> RuntimeProfile:
        """This profile with every inherited efficiency (None) set to ``platform``'s
        preset value; itself when none is inherited. Apply before costing on the physics
        platform (`genz.resolved.physics_platform`), which drops those values."""
        phases = (
            [*self.phases.values()]
            + [phase for override in self.device_classes.values() for phase in override.values()]
            + [phase for device in self.devices.values() for phase in device.phases.values()]
        )
        if not any(phase.inherits for phase in phases):
            return self
        return dataclasses.replace(
            self,
            phases={name: phase.on_platform(platform) for name, phase in self.phases.items()},
            device_classes={
                kind: {name: phase.on_platform(platform) for name, phase in override.items()}
                for kind, override in self.device_classes.items()
            },
            devices={
                name: dataclasses.replace(
                    device,
                    phases={
                        key: phase.on_platform(platform) for key, phase in device.phases.items()
                    },
                )
                for name, device in self.devices.items()
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


#: Shipped profiles kept in a folder of their own (``data/runtimes/<name>/<name>.yaml``,
#: written with their siblings by one command), loadable by name but not listed with the
#: per-runtime profiles: ``transfer``, the transfer model's generic profile.
FOLDER_RUNTIMES = frozenset({"transfer"})


def list_runtimes() -> list[str]:
    """Names of the shipped runtime profiles."""
    return sorted(path.stem for path in runtimes_dir().glob("*.yaml"))


def load_runtime(name_or_path: str | Path) -> RuntimeProfile:
    """Load a shipped profile by name (``'vllm'``) or a YAML file by path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = runtimes_dir() / f"{name_or_path}.yaml"
        if str(name_or_path) in FOLDER_RUNTIMES:
            path = runtimes_dir() / str(name_or_path) / f"{name_or_path}.yaml"
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
    as_mapping(document, origin)
    check_known(document, TOP_KEYS, origin)
    name = document.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where} name must be a non-empty string")
    phases = {
        phase: phase_from_dict(document[phase], f"{origin}: {phase}")
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
    for kind, override in as_mapping(
        document.get("device_classes", {}), f"{origin}: device_classes"
    ).items():
        label = f"{origin}: device_classes.{kind}"
        check_known(
            as_mapping(override, label),
            frozenset({*PHASES, "all_reduce_latency_s", "kv_formats"}),
            label,
        )
        if not phases:
            raise InputError(f"{label}: needs default prefill and decode values")
        classes[str(kind)] = {
            phase: phase_from_dict(values, f"{label}.{phase}")
            for phase, values in override.items()
            if phase in PHASES
        }
        if "all_reduce_latency_s" in override:
            class_latency[str(kind)] = checked_value(
                override["all_reduce_latency_s"],
                "all_reduce_latency_s",
                f"{label}.all_reduce_latency_s",
            )
        if "kv_formats" in override:
            class_kv[str(kind)] = class_kv_scales(
                override["kv_formats"], kv_formats, f"{label}.kv_formats"
            )
    latency = document.get("all_reduce_latency_s")
    if latency is not None and not phases:
        raise InputError(f"{where} all_reduce_latency_s needs prefill and decode values")
    formats = tuple(
        weight_format_from_dict(str(fmt), values, f"{origin}: weight_formats.{fmt}")
        for fmt, values in as_mapping(
            document.get("weight_formats", {}), f"{origin}: weight_formats"
        ).items()
    )
    nominal = [fmt.nominal_bits for fmt in formats]
    if len(set(nominal)) < len(nominal):
        raise InputError(f"{origin}: weight_formats: two formats share nominal_bits")
    if kv_formats and not phases:
        raise InputError(f"{where} kv_formats needs prefill and decode values")
    extra = {
        key: checked_value(document[key], key, f"{origin}: {key}")
        for key in ("kernel_launch_s", "request_overhead_s")
        if key in document
    }
    if (extra or "devices" in document) and not phases:
        raise InputError(f"{where} {next(iter(extra), 'devices')} needs prefill and decode values")
    return RuntimeProfile(
        name=name,
        description=str(document.get("description", "")),
        phases=phases,
        all_reduce_latency_s=None
        if latency is None
        else checked_value(latency, "all_reduce_latency_s", f"{origin}: all_reduce_latency_s"),
        weight_formats=formats,
        device_classes=classes,
        class_all_reduce_latency_s=class_latency,
        accuracy=None
        if "accuracy" not in document
        else accuracy_from_dict(document["accuracy"], f"{origin}: accuracy"),
        kv_formats=kv_formats,
        class_kv_scales=class_kv,
        domain=None
        if "domain" not in document
        else domain_from_dict(document["domain"], f"{origin}: domain"),
        devices=devices_from_dict(
            document.get("devices", {}), {fmt.name for fmt in formats}, f"{origin}: devices"
        ),
        stack=None
        if "stack" not in document
        else stack_from_dict(document["stack"], f"{origin}: stack"),
        **extra,
    )
