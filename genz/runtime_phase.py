"""One phase (prefill or decode) of a runtime profile: achieved fractions of peak and
the fixed costs of a forward step (part of `genz.runtime`'s schema)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from roofline import InputError, Platform

from .runtime_values import as_mapping, check_known, checked_value, efficiency_value

Array = NDArray[Any]

PHASES = ("prefill", "decode")
PHASE_KEYS = (
    "compute_efficiency",
    "memory_efficiency",
    "step_overhead_s",
    "sequence_overhead_s",
    "routing_independence",
    "kernel_launch_s",
    "sequence_overhead_exponent",
)
#: Phase keys whose value may be the platform preset's own (``value: platform``).
INHERITABLE = ("compute_efficiency", "memory_efficiency")
#: Phase keys a profile may leave out (each then takes its neutral value: 0 s or 1).
OPTIONAL_PHASE_KEYS = PHASE_KEYS[3:]


@dataclass(frozen=True)
class PhaseProfile:
    """Achieved fractions of peak (compute, memory bandwidth) and fixed costs of a step:
    ``step_overhead_s`` once per forward step, ``sequence_overhead_s`` per sequence in
    the step (scheduling, sampling), seconds.

    An efficiency of None is the platform preset's own (`RuntimeProfile.on_platform`).

    ``kernel_launch_s`` (optional, None: the profile's or its device's one value,
    `genz.RuntimeProfile.kernel_launch`): seconds per launched kernel in this phase
    only, e.g. a decode pass replayed as a CUDA graph next to an eager prefill.

    ``sequence_overhead_exponent`` ``theta`` (optional, default 1: a cost linear in
    the batch): a step of ``S`` sequences pays ``sequence_overhead_s x S ** theta``
    (`sequence_charge`), for host work per sequence that a scheduler vectorises over
    the batch (theta < 1). `genz.predict` charges it; the serving simulator
    (`genz.step_probes.step_cost`) refuses a profile whose exponent is not 1.

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
    kernel_launch_s: float | None = None
    sequence_overhead_exponent: float = 1.0

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
        return steps * (
            self.step_overhead_s
            + self.sequence_overhead_s * sequence_charge(sequences, self.sequence_overhead_exponent)
        )


def sequence_charge(sequences: Array, exponent: float) -> Array:
    """``sequences ** exponent`` (0 for no sequence): how many sequences' worth of
    per-sequence cost a step of ``sequences`` pays; exactly ``sequences`` at exponent 1."""
    sequences = np.asarray(sequences, float)
    if exponent == 1.0:
        return sequences
    return np.where(sequences > 0, np.maximum(sequences, 0.0) ** exponent, 0.0)


def phase_from_dict(entry: Any, label: str) -> PhaseProfile:
    check_known(as_mapping(entry, label), frozenset(PHASE_KEYS), label)
    missing = [key for key in PHASE_KEYS if key not in entry and key not in OPTIONAL_PHASE_KEYS]
    if missing:
        raise InputError(f"{label}: missing {missing[0]!r}")
    values = {
        key: checked_value(entry[key], key, f"{label}.{key}")
        for key in PHASE_KEYS
        if key in entry and key not in INHERITABLE
    }
    compute, memory = (efficiency_value(entry[key], key, f"{label}.{key}") for key in INHERITABLE)
    return PhaseProfile(compute, memory, **values)
