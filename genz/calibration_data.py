"""Measurements decomposed once, so a runtime profile's parameters can be fitted fast.

Each row is costed once on the physics platform (`genz.runtime_cost.physics_platform`)
with a *unit* profile (efficiencies 1, no step cost, no all-reduce latency). The
resulting per-operator compute and memory times, the all-reduce wire time and
count and the number of prefill steps turn any profile's parameters into TTFT, TPOT
and batch latency with a few numpy operations, by the same formula
(`genz.runtime_cost.scaled_terms`) the predictor's hook applies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from roofline import load_platform

from .graph import Array
from .inputs import GridInputs
from .measurements import Measurement
from .model import load_model
from .params import WEIGHT_GROUPS
from .predictor import evaluate
from .runtime import PhaseProfile, RuntimeProfile, WeightFormat
from .runtime_cost import scaled_terms

#: Efficiency 1, no step cost, no all-reduce latency: costs what the platform allows.
UNIT_PHASE = PhaseProfile(compute_efficiency=1.0, memory_efficiency=1.0, step_overhead_s=0.0)
UNIT_PROFILE = RuntimeProfile(
    name="unit", phases={"prefill": UNIT_PHASE, "decode": UNIT_PHASE}, all_reduce_latency_s=0.0
)


@dataclass(frozen=True)
class PassTerms:
    """One pass of every row at efficiency 1: arrays ``(operators, rows)`` and ``(rows,)``."""

    compute_s: Array
    memory_s: Array
    fixed_s: Array  # interconnect and anything the profile does not scale
    all_reduces: Array
    steps: Array
    sequences: Array

    def time_s(self, phase: PhaseProfile, scale: Array, latency_s: Array | float) -> Array:
        """Pass time at the phase's efficiencies (memory times ``scale``), seconds."""
        compute, memory = scaled_terms(self.compute_s, self.memory_s, phase, scale)
        return (
            np.maximum(compute, memory).sum(axis=0)
            + self.fixed_s
            + latency_s * self.all_reduces
            + phase.fixed_s(self.steps, self.sequences)
        )


@dataclass(frozen=True)
class CalibrationRows:
    """Rows of one runtime, decomposed; measured metrics with NaN where not measured."""

    rows: tuple[Measurement, ...]
    prefill: PassTerms
    decode: PassTerms
    output_tokens: Array
    nominal_bits: Array
    hw: tuple[str, ...]
    kinds: tuple[str, ...]
    measured: dict[str, Array]

    def subset(self, keep: Array) -> CalibrationRows:
        """The rows where ``keep`` (boolean, per row) is true."""
        index = np.flatnonzero(keep)

        def cut(terms: PassTerms) -> PassTerms:
            return PassTerms(
                terms.compute_s[:, index],
                terms.memory_s[:, index],
                terms.fixed_s[index],
                terms.all_reduces[index],
                terms.steps[index],
                terms.sequences[index],
            )

        return CalibrationRows(
            rows=tuple(self.rows[i] for i in index),
            prefill=cut(self.prefill),
            decode=cut(self.decode),
            output_tokens=self.output_tokens[index],
            nominal_bits=self.nominal_bits[index],
            hw=tuple(self.hw[i] for i in index),
            kinds=tuple(self.kinds[i] for i in index),
            measured={name: values[index] for name, values in self.measured.items()},
        )

    def predict(self, profile: RuntimeProfile) -> dict[str, Array]:
        """TTFT, TPOT (= inter-token latency) and batch latency per row, seconds; each
        row takes its device class's phases and all-reduce latency."""
        scale = np.ones(len(self.rows))
        for fmt in profile.weight_formats:
            hit = np.isclose(self.nominal_bits, fmt.nominal_bits)
            scale = np.where(hit, fmt.memory_efficiency_scale, scale)
        kinds = np.array(self.kinds)
        latency = np.array([profile.all_reduce_latency(kind) or 0.0 for kind in self.kinds])
        times = {}
        for phase, terms in (("prefill", self.prefill), ("decode", self.decode)):
            total = terms.time_s(profile.phases[phase], scale, latency)
            for kind, override in profile.device_classes.items():
                rows = kinds == kind
                if phase in override and np.any(rows):
                    total[rows] = terms.time_s(override[phase], scale, latency)[rows]
            times[phase] = total
        return {
            "ttft_s": times["prefill"],
            "itl_s": times["decode"],
            "batch_latency_s": times["prefill"] + (self.output_tokens - 1) * times["decode"],
        }


def measured_metrics(rows: Sequence[Measurement]) -> dict[str, Array]:
    """Batch latency (from throughput when only that is given), TTFT and ITL, s."""

    def column(values: list[float | None]) -> Array:
        return np.array([np.nan if v is None else v for v in values], float)

    latency = column(
        [
            row.batch_latency_s
            if row.batch_latency_s is not None
            else (
                row.batch * row.output_tokens / row.throughput_tok_s
                if row.throughput_tok_s is not None
                else None
            )
            for row in rows
        ]
    )
    return {
        "batch_latency_s": latency,
        "ttft_s": column([row.ttft_s for row in rows]),
        "itl_s": column([row.itl_s for row in rows]),
    }


def row_inputs(rows: Sequence[Measurement]) -> GridInputs:
    """The scenario axes of measured rows as arrays (weight bits: the row's, nominal)."""

    def column(name: str) -> Array:
        return np.array([float(getattr(row, name)) for row in rows])

    tokens = column("input_tokens")
    chunk = np.array([float(row.prefill_chunk or row.input_tokens) for row in rows])
    bits = column("weight_bits")
    return GridInputs(
        batch=column("batch"),
        input_tokens=tokens,
        output_tokens=column("output_tokens"),
        weight_bits={group: bits for group in WEIGHT_GROUPS},
        activation_bits=column("activation_bits"),
        kv_bits=column("kv_bits"),
        tp=column("tp"),
        pp=column("pp"),
        ep=column("ep"),
        dp=np.ones(len(rows)),
        chunk=np.minimum(chunk, tokens),
    )


def decompose(
    rows: Sequence[Measurement], formats: tuple[WeightFormat, ...] = ()
) -> CalibrationRows:
    """Cost every row at efficiency 1 (vectorised per model x hardware); ``formats`` say
    how the runtime stores each weight format (`RuntimeProfile`).

    Two costings with the unit profile, at all-reduce latency 0 s and 1 s, give the
    wire time and (their difference) the number of all-reduces each pass pays for.
    """
    unit = dataclasses.replace(UNIT_PROFILE, weight_formats=formats)
    counting = dataclasses.replace(unit, all_reduce_latency_s=1.0)
    n = len(rows)
    groups: dict[tuple[str, str], list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault((row.model, row.hw), []).append(index)
    parts = []
    for (model_name, hw), indices in groups.items():
        platform, model = load_platform(hw), load_model(model_name)
        inputs = row_inputs([rows[i] for i in indices])
        costed = evaluate(model, platform, inputs, runtime=unit)
        counted = evaluate(model, platform, inputs, runtime=counting)
        chunks = np.ceil(inputs.input_tokens / inputs.chunk)
        parts.append((indices, platform.device_class, costed, counted, chunks))
    width = {
        phase: max(getattr(part[2], phase).compute_s.shape[0] for part in parts)
        for phase in ("prefill", "decode")
    }
    batch = np.array([row.batch for row in rows], float)
    terms = {}
    for phase in ("prefill", "decode"):
        compute, memory = np.zeros((width[phase], n)), np.zeros((width[phase], n))
        fixed, reduces, steps = np.zeros(n), np.zeros(n), np.zeros(n)
        for indices, _, costed, counted, chunks in parts:
            cost, with_latency = getattr(costed, phase), getattr(counted, phase)
            size = cost.compute_s.shape[0]
            compute[:size, indices] = cost.compute_s
            memory[:size, indices] = cost.memory_s
            fixed[indices] = cost.interconnect_s.sum(axis=0) + cost.overhead_s.sum(axis=0)
            reduces[indices] = with_latency.interconnect_s.sum(axis=0) - cost.interconnect_s.sum(
                axis=0
            )
            steps[indices] = chunks if phase == "prefill" else 1.0
        terms[phase] = PassTerms(compute, memory, fixed, np.round(reduces), steps, batch)
    kinds = [""] * n
    for indices, kind, *_ in parts:
        for i in indices:
            kinds[i] = kind
    return CalibrationRows(
        rows=tuple(rows),
        prefill=terms["prefill"],
        decode=terms["decode"],
        output_tokens=np.array([row.output_tokens for row in rows], float),
        nominal_bits=np.array([row.weight_bits for row in rows], float),
        hw=tuple(row.hw for row in rows),
        kinds=tuple(kinds),
        measured=measured_metrics(rows),
    )
