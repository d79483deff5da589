"""Is a measurement physically possible? Compare it with the model's own ideal bound.

The bound of a run is this package's prediction on the same hardware with every
efficiency at 1 (spec-sheet FLOP/s, bandwidth and link bandwidth), no kernel
overhead and no link latency: the time the operators' FLOP and bytes need at
peak. A measured batch latency below it cannot be right for the scenario its
columns describe (wrong device count, another model, a cached or truncated run,
a unit slip). Assumptions that keep it a bound and their limits:

- weights and KV cache stream from main memory once per pass; a device whose
  on-chip memory can hold a share of the weights across steps (SN40L's 520 MB SRAM
  per socket) can beat the bound on models of a few GB;
- MoE layers: the model's own prediction reads the experts expected under uniform
  routing (``uniform_bound_s``); a skewed router touches fewer, so the bound that
  decides ``impossible`` (``bound_s``) reads the fewest a batch can touch: top-k
  experts per layer (at least one per expert-parallel rank). A measurement between
  the two beats uniform routing without breaking physics;
- prefill runs the whole prompt in one pass unless ``prefill_chunk`` says otherwise.

A run whose footprint does not fit the devices is not flagged by the bound: it is
reported as over capacity (a serving stack then queues or recomputes sequences, so
the measurement is not the static batch its columns describe).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from genz import REPLICA_AXES, ModelConfig, evaluate_grid, load_model, tensor_parallel_degrees
from genz.fitting import Array
from roofline import Efficiency, InputError, Platform, derive_platform, load_platform

from .measurements import Measurement


def ideal_platform(platform: Platform) -> Platform:
    """``platform`` at efficiency 1 with zero kernel overhead and zero link latency."""
    link = platform.interconnect
    if link is not None:
        link = dataclasses.replace(
            link,
            link_latency_s=0.0,
            scaleout_latency_s=None if link.scaleout_latency_s is None else 0.0,
        )
    return derive_platform(
        platform,
        name=f"{platform.name}-ideal",
        efficiency=Efficiency(compute=1.0, memory=1.0, interconnect=1.0),
        kernel_overhead_s=0.0,
        interconnect=link,
    )


def fewest_experts_model(model: ModelConfig, ep: int = 1) -> ModelConfig:
    """``model`` with only as many experts as a batch must touch: top-k, at least ``ep``.

    Uniform routing over these is routing to the fewest experts possible, so its
    expert weight bytes are the least any router can read; FLOP are unchanged.
    Dense models are returned as they are.
    """
    if not model.is_moe:
        return model
    experts = min(model.num_experts, max(model.experts_per_token, ep))
    return dataclasses.replace(model, name=f"{model.name}-fewest-experts", num_experts=experts)


def batch_latency_bound(
    model: ModelConfig,
    platform: Platform,
    *,
    batch: Array | float,
    input_tokens: Array | float,
    output_tokens: Array | float,
    weight_bits: Array | float = 16.0,
    activation_bits: Array | float = 16.0,
    kv_bits: Array | float = 16.0,
    tp: Array | float = 1,
    pp: Array | float = 1,
    ep: Array | float = 1,
    prefill_chunk: Array | float | None = None,
) -> dict[str, np.ndarray]:
    """Lower bound of the batch latency (prefill plus every decode step), seconds.

    Broadcasts over its array arguments like `genz.evaluate_grid`; returns
    ``bound_s`` and ``fits`` (footprint within one device's main memory).
    """
    grid = evaluate_grid(
        model,
        ideal_platform(platform),
        batch=batch,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        weight_bits=weight_bits,
        activation_bits=activation_bits,
        kv_bits=kv_bits,
        tp=tp,
        pp=pp,
        ep=ep,
        prefill_chunk=prefill_chunk,
    )
    return {"bound_s": grid.e2e_s, "fits": grid.fits}


@dataclass(frozen=True)
class RowCheck:
    """The verdict on one measurement.

    ``bound_s`` is None when the row could not be evaluated (``reason`` says why:
    no batch latency, unknown preset, a mesh the model cannot be split over).
    """

    index: int
    source: str
    measured_s: float | None
    bound_s: float | None
    uniform_bound_s: float | None
    fits: bool | None
    impossible: bool
    reason: str = ""

    @property
    def ratio(self) -> float | None:
        """Measured time over the bound (< 1 is impossible)."""
        if self.measured_s is None or self.bound_s is None:
            return None
        return self.measured_s / self.bound_s

    @property
    def beats_uniform_routing(self) -> bool:
        """Possible, but faster than the uniform-routing bound (MoE routing skew)."""
        if self.measured_s is None or self.uniform_bound_s is None:
            return False
        return not self.impossible and self.measured_s < self.uniform_bound_s


@dataclass(frozen=True)
class PhysicsCheck:
    """Verdicts on a set of measurements, in input order."""

    rows: tuple[RowCheck, ...]
    tolerance: float

    @property
    def impossible(self) -> tuple[RowCheck, ...]:
        """Rows measured faster than the ideal bound."""
        return tuple(row for row in self.rows if row.impossible)

    @property
    def evaluated(self) -> tuple[RowCheck, ...]:
        """Rows that have a bound."""
        return tuple(row for row in self.rows if row.bound_s is not None)

    @property
    def beat_uniform_routing(self) -> tuple[RowCheck, ...]:
        """Possible rows faster than the model's uniform-routing MoE bound."""
        return tuple(row for row in self.rows if row.beats_uniform_routing)

    @property
    def over_capacity(self) -> tuple[RowCheck, ...]:
        """Evaluated rows whose footprint exceeds the devices' memory."""
        return tuple(row for row in self.evaluated if row.fits is False)

    def to_dict(self) -> dict[str, object]:
        """Counts and the impossible rows, for JSON reports."""
        return {
            "rows": len(self.rows),
            "evaluated": len(self.evaluated),
            "impossible": len(self.impossible),
            "over_capacity": len(self.over_capacity),
            "beat_uniform_routing": len(self.beat_uniform_routing),
            "tolerance": self.tolerance,
            "impossible_rows": [
                {"source": r.source, "measured_s": r.measured_s, "bound_s": r.bound_s}
                for r in self.impossible
            ],
        }


def check_measurements(
    measurements: Sequence[Measurement],
    *,
    tolerance: float = 0.0,
    resolve_model: Callable[[str], ModelConfig] = load_model,
    resolve_platform: Callable[[str], Platform] = load_platform,
) -> PhysicsCheck:
    """Flag every measurement whose batch latency is below ``(1 - tolerance)`` x the bound.

    Rows are grouped by (model, hardware) and each group is evaluated in one
    vectorised call. ``resolve_model`` / ``resolve_platform`` turn the row's names
    into objects (presets or paths by default).
    """
    if not 0.0 <= tolerance < 1.0:
        raise InputError(f"tolerance must be in [0, 1), got {tolerance!r}")
    verdicts: dict[int, RowCheck] = {}
    groups: dict[tuple[str, str], list[int]] = {}
    for index, row in enumerate(measurements):
        if row.batch_latency_s is None:
            verdicts[index] = _unevaluated(index, row, "no batch_latency_s")
        else:
            groups.setdefault((row.model, row.hw), []).append(index)
    for (model_name, hw_name), indices in groups.items():
        try:
            model, platform = resolve_model(model_name), resolve_platform(hw_name)
        except InputError as error:
            verdicts.update({i: _unevaluated(i, measurements[i], str(error)) for i in indices})
            continue
        usable = []
        for index in indices:
            reason = _mesh_problem(model, platform, measurements[index])
            if reason:
                verdicts[index] = _unevaluated(index, measurements[index], reason)
            else:
                usable.append(index)
        if usable:
            verdicts.update(_check_group(model, platform, measurements, usable, tolerance))
    return PhysicsCheck(tuple(verdicts[i] for i in range(len(measurements))), tolerance)


def _check_group(
    model: ModelConfig,
    platform: Platform,
    measurements: Sequence[Measurement],
    indices: list[int],
    tolerance: float,
) -> dict[int, RowCheck]:
    rows = [measurements[i] for i in indices]

    def column(name: str) -> Array:
        return np.array([float(getattr(row, name)) for row in rows])

    axes = {name: column(name) for name in REPLICA_AXES}
    axes["prefill_chunk"] = np.array([float(row.prefill_chunk or row.input_tokens) for row in rows])
    uniform = batch_latency_bound(model, platform, **axes)
    bound = np.array(uniform["bound_s"], float)
    if model.is_moe:
        for ep in np.unique(axes["ep"]):
            same = axes["ep"] == ep
            fewest = fewest_experts_model(model, int(ep))
            sub = {name: values[same] for name, values in axes.items()}
            bound[same] = batch_latency_bound(fewest, platform, **sub)["bound_s"]
    measured = column("batch_latency_s")
    impossible = measured < (1.0 - tolerance) * bound
    return {
        index: RowCheck(
            index=index,
            source=row.source,
            measured_s=float(measured[k]),
            bound_s=float(bound[k]),
            uniform_bound_s=float(uniform["bound_s"][k]),
            fits=bool(uniform["fits"][k]),
            impossible=bool(impossible[k]),
        )
        for k, (index, row) in enumerate(zip(indices, rows, strict=True))
    }


def _mesh_problem(model: ModelConfig, platform: Platform, row: Measurement) -> str:
    """Why the model cannot be costed on this row's mesh, or ''."""
    if row.tp not in tensor_parallel_degrees(model):
        return (
            f"tp {row.tp} does not give every device whole heads of {model.name} "
            f"({model.num_heads} heads, {model.num_kv_heads} KV heads)"
        )
    if row.pp > model.num_layers:
        return f"pp {row.pp} exceeds the {model.num_layers} layers of {model.name}"
    if row.ep > max(model.num_experts, 1):
        return f"ep {row.ep} exceeds the experts of {model.name}"
    if row.devices > 1 and platform.interconnect is None:
        return f"{platform.name} has no interconnect for {row.devices} devices"
    return ""


def _unevaluated(index: int, row: Measurement, reason: str) -> RowCheck:
    return RowCheck(
        index=index,
        source=row.source,
        measured_s=row.batch_latency_s,
        bound_s=None,
        uniform_bound_s=None,
        fits=None,
        impossible=False,
        reason=reason,
    )
