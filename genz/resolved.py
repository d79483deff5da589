"""A runtime profile resolved once: ``(platform, profile, scenario formats)`` -> one
frozen description the cost path reads, and nothing else of the profile.

`resolve` is the only place the costing reads a `genz.RuntimeProfile`: it settles the
device-class overrides, inherited efficiencies (the platform preset's own), the weight
format a scenario's bits select, whether the platform has arithmetic for a KV format's
dtype, and which all-reduce latency applies, and returns a `ResolvedProfile`:

- ``platform``: what operators are costed on. With phases, the *physics platform*
  (compute and memory efficiency 1, no per-operator kernel overhead: the profile's step
  cost replaces it; interconnect as the preset's); without, the preset itself;
- ``weight_bits``: per weight group, the bits the runtime stores for the scenario's
  format (scales and higher-precision tensors included; embedding and LM head their own);
- ``phases``: per phase (prefill, decode) the effective compute and memory efficiency
  (one value for every operator kind: the profile schema has no per-kind values), the
  fixed costs of a step (``step_overhead_s`` once, ``sequence_overhead_s`` per
  sequence, to the power ``sequence_overhead_exponent``) and the expert-routing independence;
- ``memory_scale``: per scenario, the weight format's multiplier on memory efficiency;
- ``compute_scale``: per scenario, its multiplier on compute efficiency (None: no format
  of the profile has one, nothing changes);
- ``kv_memory_factor``: per scenario, the factor on the memory time of the KV cache's
  bytes (``1 / emulated scale`` where a KV format's dtype has no arithmetic on the
  platform; None when no scenario has one);
- ``all_reduce_latency_s``: the small-message latency of one all-reduce that replaces the
  ring's per-hop latencies (None: the platform's ring latencies);
- ``request_overhead_s``: the fixed cost of one request, added once to the prefill pass
  (the time to first token) by `genz.predictor.evaluate`; the serving simulator's step
  probes do not charge it.

A preset's own values (the profile's ``devices``) win over its device class's; its
per-kernel launch cost becomes the physics platform's kernel overhead, so a pass pays
it once per busy operator and layer (`genz.costing.cost_pass`); a phase with a launch
cost of its own (``kernel_launch_s`` in ``prefill:`` / ``decode:``) carries it in its
`ResolvedPhase`, and `genz.runtime_cost.apply_phase` charges that one instead.

The cost path (`genz.predictor.evaluate`, `genz.step_probes.step_cost`) then makes one
pass over it: the graph with the stored bits and routing, every operator costed on
``platform``, and the phase's terms applied to the costed pass (`genz.runtime_cost`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from roofline import Efficiency, Platform

from .inputs import GridInputs
from .op_terms import Array
from .runtime import PHASES, RuntimeProfile, WeightFormat
from .runtime_phase import sequence_charge


@dataclass(frozen=True)
class ResolvedPhase:
    """One phase of a resolved profile: effective efficiencies (fractions of the
    platform's peak compute and memory bandwidth), fixed costs of a step, seconds, and
    the expert-routing independence (`genz.PhaseProfile`); ``kernel_launch_s``: the
    phase's own seconds per launched kernel where it differs from the kernel overhead of
    the platform operators are costed on (None: that one)."""

    compute_efficiency: float
    memory_efficiency: float
    step_overhead_s: float = 0.0
    sequence_overhead_s: float = 0.0
    routing_independence: float = 1.0
    kernel_launch_s: float | None = None
    sequence_overhead_exponent: float = 1.0

    def fixed_s(self, steps: Array, sequences: Array) -> Array:
        """Fixed cost of ``steps`` forward steps of ``sequences`` sequences each, seconds
        (``sequence_overhead_s x sequences ** sequence_overhead_exponent`` per step,
        `genz.runtime_phase.sequence_charge`)."""
        return steps * (
            self.step_overhead_s
            + self.sequence_overhead_s * sequence_charge(sequences, self.sequence_overhead_exponent)
        )


@dataclass(frozen=True)
class ResolvedProfile:
    """``(platform, runtime profile, scenario formats)`` resolved for costing (module doc).

    ``retimes`` is False for a profile without phases (``ideal``, None, or weight formats
    only): operators then cost what ``platform`` (the preset) gives, its own efficiencies
    and kernel overhead, and ``phases`` only describes them (no step cost, routing 1).
    """

    name: str
    platform: Platform
    weight_bits: Mapping[str, Array]
    phases: Mapping[str, ResolvedPhase]
    retimes: bool
    memory_scale: Array | float = 1.0
    compute_scale: Array | None = None
    kv_memory_factor: Array | None = None
    all_reduce_latency_s: float | None = None
    request_overhead_s: float = 0.0

    @property
    def kernel_overhead_s(self) -> float:
        """Fixed cost of every launched operator, seconds (with phases: the profile's
        per-kernel launch cost, 0 unless it sets one)."""
        return self.platform.kernel_overhead_s

    def stored(self, inputs: GridInputs) -> GridInputs:
        """``inputs`` with the weight bits the runtime stores."""
        if self.weight_bits is inputs.weight_bits:
            return inputs
        return dataclasses.replace(inputs, weight_bits=self.weight_bits)


@functools.lru_cache(maxsize=64)
def _preset_phases(compute: float, memory: float) -> Mapping[str, ResolvedPhase]:
    """Both phases at a platform preset's own efficiencies (no step cost, routing 1),
    read-only; one instance per pair of values (predict's warm path builds none)."""
    phase = ResolvedPhase(compute, memory)
    return MappingProxyType({"prefill": phase, "decode": phase})


#: Physics platforms already built, by the preset's id and kernel overhead (the preset is
#: kept beside it, so an id is never reused while its entry lives); at most
#: `_PHYSICS_KEPT` entries.
_PHYSICS: dict[tuple[int, float], tuple[Platform, Platform]] = {}
_PHYSICS_KEPT = 64


def physics_platform(platform: Platform, kernel_overhead_s: float = 0.0) -> Platform:
    """``platform`` with compute and memory efficiency 1 and ``kernel_overhead_s`` per
    launched operator (default none; built once per preset object and overhead:
    platforms are frozen)."""
    key = (id(platform), kernel_overhead_s)
    known = _PHYSICS.get(key)
    if known is not None and known[0] is platform:
        return known[1]
    efficiency = Efficiency(compute=1.0, memory=1.0, interconnect=platform.efficiency.interconnect)
    physics = dataclasses.replace(
        platform, efficiency=efficiency, kernel_overhead_s=kernel_overhead_s
    )
    if len(_PHYSICS) >= _PHYSICS_KEPT:
        _PHYSICS.clear()
    _PHYSICS[key] = (platform, physics)
    return physics


def resolve(
    platform: Platform, runtime: RuntimeProfile | None, inputs: GridInputs
) -> ResolvedProfile:
    """The one resolution of ``runtime`` on ``platform`` for the formats of ``inputs``
    (its nominal weight bits, ``weight_bits["attn_qkv"]``, select the weight format; its
    ``kv_bits`` the KV format); None: physics only. Pure: the same arguments give an equal
    description, and nothing is mutated."""
    if runtime is None or not runtime.phases:
        return ResolvedProfile(
            name="ideal" if runtime is None else runtime.name,
            platform=platform,
            weight_bits=inputs.weight_bits
            if runtime is None or not runtime.weight_formats
            else stored_weight_bits(runtime, inputs.weight_bits),
            phases=_preset_phases(platform.efficiency.compute, platform.efficiency.memory),
            retimes=False,
        )
    profile = runtime.on_platform(platform)  # inherited efficiencies: the preset's
    launch = runtime.kernel_launch(platform)
    phases = {}
    for name in PHASES:
        phase = profile.phase(name, platform)
        if phase.compute_efficiency is None or phase.memory_efficiency is None:
            raise ValueError("an inherited efficiency reached the costing")  # on_platform set it
        phases[name] = ResolvedPhase(
            phase.compute_efficiency,
            phase.memory_efficiency,
            phase.step_overhead_s,
            phase.sequence_overhead_s,
            phase.routing_independence,
            _own_launch(runtime.kernel_launch(platform, name), launch),
            phase.sequence_overhead_exponent,
        )
    return ResolvedProfile(
        name=runtime.name,
        platform=physics_platform(platform, launch),
        weight_bits=stored_weight_bits(runtime, inputs.weight_bits)
        if runtime.weight_formats
        else inputs.weight_bits,
        phases=phases,
        retimes=True,
        memory_scale=memory_scale(runtime, inputs.weight_bits["attn_qkv"], platform),
        compute_scale=compute_scale(runtime, inputs.weight_bits["attn_qkv"], platform),
        kv_memory_factor=kv_slowdown(runtime, platform, inputs.kv_bits),
        all_reduce_latency_s=runtime.all_reduce_latency(platform.device_class),
        request_overhead_s=runtime.request_overhead_s,
    )


def _own_launch(phase_launch: float, launch: float) -> float | None:
    """A phase's launch cost where it differs from the profile's one (None: the same)."""
    return None if phase_launch == launch else phase_launch


def stored_weight_bits(
    profile: RuntimeProfile, weight_bits: Mapping[str, Array]
) -> dict[str, Array]:
    """Weight group -> the bits the runtime stores, per scenario.

    A scenario's format is the profile's format whose ``nominal_bits`` equal the
    scenario's layer-weight bits (``attn_qkv``); every group then takes that format's
    stored bits (embedding and LM head: its ``embedding_bits`` and ``lm_head_bits``);
    bits matching no format are stored as given.
    """
    if not profile.weight_formats:
        return dict(weight_bits)
    layer_bits = weight_bits["attn_qkv"]
    if isinstance(layer_bits, float):  # one scenario as floats (predict's fast path)
        fmt = profile.format_for_bits(layer_bits)
        if fmt is None:
            return dict(weight_bits)
        model_level = {"embedding": fmt.embedding_bits, "lm_head": fmt.lm_head_bits}
        floats: dict[str, Any] = {g: model_level.get(g, fmt.stored_bits) for g in weight_bits}
        return floats
    bits = dict(weight_bits)
    nominal = np.asarray(layer_bits, float)
    for fmt in profile.weight_formats:
        hit = np.isclose(nominal, fmt.nominal_bits)
        for group in weight_bits:
            target = {"embedding": fmt.embedding_bits, "lm_head": fmt.lm_head_bits}.get(
                group, fmt.stored_bits
            )
            bits[group] = np.where(hit, target, np.asarray(bits[group], float))
    return bits


def memory_scale(
    profile: RuntimeProfile, nominal_bits: Array | float, platform: Platform | None = None
) -> Array:
    """Per scenario, the weight format's multiplier on memory efficiency (1 if unlisted;
    on ``platform``, its preset's override, `RuntimeProfile.format_scale`)."""

    def scale_of(fmt: WeightFormat) -> float:
        if platform is None:
            return fmt.memory_efficiency_scale
        return profile.format_scale(fmt, platform)

    if isinstance(nominal_bits, float):  # one scenario as floats (predict's fast path)
        hits = [fmt for fmt in profile.weight_formats if _isclose(nominal_bits, fmt.nominal_bits)]
        return np.asarray(scale_of(hits[-1]) if hits else 1.0)
    scale = np.ones(np.shape(nominal_bits))
    for fmt in profile.weight_formats:
        scale = np.where(np.isclose(nominal_bits, fmt.nominal_bits), scale_of(fmt), scale)
    return scale


def compute_scale(
    profile: RuntimeProfile, nominal_bits: Array | float, platform: Platform
) -> Array | None:
    """Per scenario, the weight format's multiplier on compute efficiency on
    ``platform`` (its preset's override, `RuntimeProfile.compute_format_scale`; 1 if
    unlisted); None when it is 1 for every format (nothing changes)."""
    scales = [(fmt, profile.compute_format_scale(fmt, platform)) for fmt in profile.weight_formats]
    if all(scale == 1.0 for _, scale in scales):
        return None
    if isinstance(nominal_bits, float):  # one scenario as floats (predict's fast path)
        hits = [scale for fmt, scale in scales if _isclose(nominal_bits, fmt.nominal_bits)]
        return np.asarray(hits[-1] if hits else 1.0)
    factor = np.ones(np.shape(nominal_bits))
    for fmt, scale in scales:
        factor = np.where(np.isclose(nominal_bits, fmt.nominal_bits), scale, factor)
    return factor


def kv_slowdown(
    profile: RuntimeProfile, platform: Platform, kv_bits: Array | float
) -> Array | None:
    """Per scenario, the factor on the KV cache's memory time at a given efficiency:
    ``1 / emulated_memory_efficiency_scale`` (the device class's, `RuntimeProfile.
    kv_scale`) where the scenario's ``kv_bits`` select a KV format
    (`genz.runtime.KVFormat`) whose native dtype ``platform`` lists no peak for, else
    1. None when no scenario has such a format (nothing changes)."""
    emulated = [fmt for fmt in profile.kv_formats if fmt.emulated_on(platform.peak_flops_per_s)]
    if not emulated:
        return None
    if isinstance(kv_bits, float):  # one scenario as floats (predict's fast path)
        hits = [fmt for fmt in emulated if _isclose(kv_bits, fmt.nominal_bits)]
        one = 1.0 if not hits else 1.0 / profile.kv_scale(hits[-1], platform.device_class)
        return None if one == 1.0 else np.asarray(one)
    factor = np.ones(np.shape(kv_bits))
    for fmt in emulated:
        scale = profile.kv_scale(fmt, platform.device_class)
        factor = np.where(np.isclose(kv_bits, fmt.nominal_bits), 1.0 / scale, factor)
    return None if np.all(factor == 1.0) else factor


def _isclose(value: float, target: float) -> bool:
    """`numpy.isclose` of two finite floats (its default tolerances), without numpy."""
    return abs(value - target) <= 1e-08 + 1e-05 * abs(target)
