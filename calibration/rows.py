"""Measurements decomposed once, so a runtime profile's parameters can be fitted fast.

Each row is costed once on the physics platform (`genz.resolved.physics_platform`)
with a *unit* profile (efficiencies 1, no step cost, no all-reduce latency). The
resulting per-operator compute and memory times (and the KV cache's part of the
memory time, for a runtime with KV formats), the all-reduce wire time and
count and the number of prefill steps turn any profile's parameters into TTFT, TPOT
and batch latency with a few numpy operations, by the same formula
(`genz.runtime_cost.scaled_terms`) the predictor's cost path applies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from genz import WEIGHT_GROUPS, KVFormat, PhaseProfile, RuntimeProfile, WeightFormat, load_model
from genz.fitting import (
    EXPERT_GROUP,
    Array,
    GridInputs,
    evaluate,
    expected_experts_touched,
    kv_format_memory_s,
    scaled_terms,
)
from roofline import load_platform

from .measurements import Measurement

#: Efficiency 1, no step cost, no all-reduce latency: costs what the platform allows.
UNIT_PHASE = PhaseProfile(compute_efficiency=1.0, memory_efficiency=1.0, step_overhead_s=0.0)
UNIT_PROFILE = RuntimeProfile(
    name="unit", phases={"prefill": UNIT_PHASE, "decode": UNIT_PHASE}, all_reduce_latency_s=0.0
)
#: The unit profile with every token of a step routed alike (independence 0).
_ALIKE = dataclasses.replace(UNIT_PHASE, routing_independence=0.0)
ALIKE_PROFILE = dataclasses.replace(UNIT_PROFILE, phases={"prefill": _ALIKE, "decode": _ALIKE})
#: A native dtype no platform lists: the KV probe of `decompose` is emulated everywhere.
_NO_DTYPE = "(none)"


@dataclass(frozen=True)
class PassTerms:
    """One pass of every row at efficiency 1: arrays ``(operators, rows)`` and ``(rows,)``.

    ``experts`` marks the routed-expert GEMM of each row, ``expert_weight_s`` is the
    memory time of one touched expert's weights (per pass, efficiency 1; 0 for dense
    models), ``routed_tokens`` the tokens a step routes and ``num_experts`` /
    ``top_k`` the model's routing, so the routed experts' memory time follows any
    routing independence in closed form (`genz.ffn_ops.expected_experts_touched`).
    ``kv_s`` is the part of ``memory_s`` that moves KV-cache bytes (rows whose
    ``kv_bits`` select one of the runtime's KV formats, else 0), so a KV format's
    emulated scale applies in closed form (`genz.runtime_cost.kv_format_memory_s`).
    """

    compute_s: Array
    memory_s: Array
    fixed_s: Array  # interconnect and anything the profile does not scale
    all_reduces: Array
    steps: Array
    sequences: Array
    experts: Array
    expert_weight_s: Array
    routed_tokens: Array
    num_experts: Array
    top_k: Array
    preset_compute_efficiency: Array  # (rows,): the row's platform preset's own, for
    preset_memory_efficiency: Array  # a profile that inherits them (None in the phase)
    kv_s: Array

    def touched(self, independence: float) -> Array:
        """Expected distinct experts a step touches per MoE layer (0 for dense rows)."""
        moe = self.num_experts > 0
        experts = np.where(moe, self.num_experts, 1.0)
        return np.where(
            moe,
            expected_experts_touched(experts, self.top_k, self.routed_tokens, independence),
            0.0,
        )

    def time_s(
        self,
        phase: PhaseProfile,
        scale: Array,
        latency_s: Array | float,
        kv_slowdown: Array | None = None,
    ) -> Array:
        """Pass time at the phase's efficiencies (memory times ``scale``; the KV cache's
        memory time times ``kv_slowdown`` per row, `genz.resolved.kv_slowdown`), s."""
        memory_s = self.memory_s
        if phase.routing_independence != 1.0:
            extra = (self.touched(phase.routing_independence) - self.touched(1.0)) * (
                self.expert_weight_s
            )
            memory_s = memory_s + self.experts * extra
        memory_s = kv_format_memory_s(memory_s, self.kv_s, kv_slowdown)
        compute, memory = scaled_terms(
            self.compute_s,
            memory_s,
            self.preset_compute_efficiency
            if phase.compute_efficiency is None
            else phase.compute_efficiency,
            self.preset_memory_efficiency
            if phase.memory_efficiency is None
            else phase.memory_efficiency,
            scale,
        )
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
    kv_bits: Array
    dtypes: tuple[frozenset[str], ...]

    def emulated(self, fmt: KVFormat) -> Array:
        """Per row: its ``kv_bits`` select ``fmt`` and its platform (``dtypes``: those
        it lists peaks for) has no arithmetic for the format's native dtype."""
        native = np.array([not fmt.emulated_on(dtypes) for dtypes in self.dtypes], bool)
        return np.isclose(self.kv_bits, fmt.nominal_bits) & ~native

    def kv_slowdown(self, profile: RuntimeProfile) -> Array | None:
        """Per row, the factor on its KV cache's memory time at its device class's
        scale (`genz.resolved.kv_slowdown`); None when no row is emulated."""
        factor = np.ones(len(self.rows))
        for fmt in profile.kv_formats:
            scale = np.array([profile.kv_scale(fmt, kind) for kind in self.kinds])
            factor = np.where(self.emulated(fmt), 1.0 / scale, factor)
        return None if np.all(factor == 1.0) else factor

    def subset(self, keep: Array) -> CalibrationRows:
        """The rows where ``keep`` (boolean, per row) is true."""
        index = np.flatnonzero(keep)

        def cut(terms: PassTerms) -> PassTerms:
            return PassTerms(
                **{
                    name.name: getattr(terms, name.name)[..., index]
                    for name in dataclasses.fields(terms)
                }
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
            kv_bits=self.kv_bits[index],
            dtypes=tuple(self.dtypes[i] for i in index),
        )

    def predict(self, profile: RuntimeProfile) -> dict[str, Array]:
        """TTFT, TPOT (= inter-token latency) and batch latency per row, seconds; each
        row takes its device class's phases and all-reduce latency. Profiles with
        per-preset values, a per-kernel or a per-request cost (the transferable model's,
        `calibration.transfer_profile`) are costed by `genz.evaluate` only."""
        if profile.devices or profile.kernel_launch_s or profile.request_overhead_s:
            raise ValueError(
                f"runtime {profile.name!r}: per-device, per-kernel and per-request terms "
                "are costed by genz.evaluate, not by the calibration fast path"
            )
        scale = np.ones(len(self.rows))
        for fmt in profile.weight_formats:
            hit = np.isclose(self.nominal_bits, fmt.nominal_bits)
            scale = np.where(hit, fmt.memory_efficiency_scale, scale)
        kinds = np.array(self.kinds)
        latency = np.array([profile.all_reduce_latency(kind) or 0.0 for kind in self.kinds])
        slowdown = self.kv_slowdown(profile)
        times = {}
        for phase, terms in (("prefill", self.prefill), ("decode", self.decode)):
            total = terms.time_s(profile.phases[phase], scale, latency, slowdown)
            for kind, override in profile.device_classes.items():
                rows = kinds == kind
                if phase in override and np.any(rows):
                    total[rows] = terms.time_s(override[phase], scale, latency, slowdown)[rows]
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
    rows: Sequence[Measurement],
    formats: tuple[WeightFormat, ...] = (),
    kv_formats: tuple[KVFormat, ...] = (),
) -> CalibrationRows:
    """Cost every row at efficiency 1 (vectorised per model x hardware); ``formats`` say
    how the runtime stores each weight format, ``kv_formats`` which KV-cache formats it
    has (`RuntimeProfile`).

    Two costings with the unit profile, at all-reduce latency 0 s and 1 s, give the
    wire time and (their difference) the number of all-reduces each pass pays for; for
    a mixture-of-experts model a third, every token of a step routed alike, gives (its
    difference in routed-expert memory time over that in experts touched) the memory
    time of one touched expert's weights; with KV formats, one more with every KV
    format emulated at scale 1/2 gives (its difference in memory time) the KV cache's
    memory time of the rows those formats select.
    """
    unit = dataclasses.replace(UNIT_PROFILE, weight_formats=formats)
    counting = dataclasses.replace(unit, all_reduce_latency_s=1.0)
    alike = dataclasses.replace(ALIKE_PROFILE, weight_formats=formats)
    halved = dataclasses.replace(
        unit,
        kv_formats=tuple(
            KVFormat(fmt.name, fmt.nominal_bits, _NO_DTYPE, 0.5) for fmt in kv_formats
        ),
    )
    n = len(rows)
    dtypes: dict[int, frozenset[str]] = {}
    groups: dict[tuple[str, str], list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault((row.model, row.hw), []).append(index)
    parts = []
    for (model_name, hw), indices in groups.items():
        platform, model = load_platform(hw), load_model(model_name)
        inputs = row_inputs([rows[i] for i in indices])
        costed = evaluate(model, platform, inputs, runtime=unit)
        counted = evaluate(model, platform, inputs, runtime=counting)
        routed = evaluate(model, platform, inputs, runtime=alike) if model.is_moe else None
        kv = evaluate(model, platform, inputs, runtime=halved) if kv_formats else None
        chunks = np.ceil(inputs.input_tokens / inputs.chunk)
        parts.append((indices, platform, model, costed, counted, routed, chunks, kv))
        dtypes.update({i: frozenset(platform.peak_flops_per_s) for i in indices})
    width = {
        phase: max(getattr(part[3], phase).compute_s.shape[0] for part in parts)
        for phase in ("prefill", "decode")
    }
    batch = np.array([row.batch for row in rows], float)
    preset_compute, preset_memory = np.ones(n), np.ones(n)
    for indices, platform, *_ in parts:
        preset_compute[indices] = platform.efficiency.compute
        preset_memory[indices] = platform.efficiency.memory
    terms = {}
    for phase in ("prefill", "decode"):
        compute, memory = np.zeros((width[phase], n)), np.zeros((width[phase], n))
        kv_s = np.zeros((width[phase], n))
        experts = np.zeros((width[phase], n), bool)
        fixed, reduces, steps = np.zeros(n), np.zeros(n), np.zeros(n)
        per_expert, tokens, num, top = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
        for indices, _, model, costed, counted, routed, chunks, kv in parts:
            cost, with_latency = getattr(costed, phase), getattr(counted, phase)
            size = cost.compute_s.shape[0]
            compute[:size, indices] = cost.compute_s
            memory[:size, indices] = cost.memory_s
            if kv is not None:
                kv_s[:size, indices] = getattr(kv, phase).memory_s[:size] - cost.memory_s
            fixed[indices] = cost.interconnect_s.sum(axis=0) + cost.overhead_s.sum(axis=0)
            reduces[indices] = with_latency.interconnect_s.sum(axis=0) - cost.interconnect_s.sum(
                axis=0
            )
            steps[indices] = chunks if phase == "prefill" else 1.0
            query = np.array([rows[i].input_tokens for i in indices], float) / chunks
            tokens[indices] = batch[indices] * (query if phase == "prefill" else 1.0)
            if routed is not None:
                num[indices], top[indices] = model.num_experts, model.experts_per_token
                row = cost.groups.index(EXPERT_GROUP)
                experts[row, indices] = True
                span = cost.memory_s[row] - getattr(routed, phase).memory_s[row]
                gained = expected_experts_touched(
                    num[indices], top[indices], tokens[indices]
                ) - expected_experts_touched(num[indices], top[indices], tokens[indices], 0.0)
                per_expert[indices] = np.where(
                    gained > 0, span / np.where(gained > 0, gained, 1), 0
                )
        terms[phase] = PassTerms(
            compute,
            memory,
            fixed,
            np.round(reduces),
            steps,
            batch,
            experts,
            per_expert,
            tokens,
            num,
            top,
            preset_compute,
            preset_memory,
            kv_s,
        )
    kinds = [""] * n
    for indices, platform, *_ in parts:
        for i in indices:
            kinds[i] = platform.device_class
    return CalibrationRows(
        rows=tuple(rows),
        prefill=terms["prefill"],
        decode=terms["decode"],
        output_tokens=np.array([row.output_tokens for row in rows], float),
        nominal_bits=np.array([row.weight_bits for row in rows], float),
        hw=tuple(row.hw for row in rows),
        kinds=tuple(kinds),
        measured=measured_metrics(rows),
        kv_bits=np.array([row.kv_bits for row in rows], float),
        dtypes=tuple(dtypes[i] for i in range(n)),
    )
