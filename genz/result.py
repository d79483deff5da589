"""Result types: one prediction (per-operator breakdown, phases, the whole answer), a
grid of scenarios (`GridResult`), and the end-to-end latency formula both share."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from numpy.typing import NDArray

from roofline import BOUND_ORDER, Bound, CapacityFootprint, CapacityVerdict, OperatorKind

from .costing import PassCost
from .scenario import Scenario

KIND_NAMES = {kind: kind.value for kind in OperatorKind}

if TYPE_CHECKING:
    import pandas as pd


#: A float, or an array of them: the latency formulas apply elementwise.
Seconds = TypeVar("Seconds", float, NDArray[np.float64])


def decode_time_s(tpot_s: Seconds, output_tokens: Seconds | int) -> Seconds:
    """Time of the ``output_tokens - 1`` decode steps after the first token (which
    comes out of prefill), seconds; elementwise on arrays."""
    return (output_tokens - 1) * tpot_s


def end_to_end_s(
    ttft_s: Seconds, tpot_s: Seconds, output_tokens: Seconds | int, handoff_s: float = 0.0
) -> Seconds:
    """Request latency ``ttft + handoff + (output_tokens - 1) * tpot``, seconds.

    ``handoff_s`` is any wait between the first token and decoding (disaggregated
    serving: moving the KV cache); elementwise on arrays.
    """
    return ttft_s + handoff_s + decode_time_s(tpot_s, output_tokens)


@dataclass(frozen=True)
class OperatorCost:
    """One operator of a phase (all layers that contain it), per device.

    Times in seconds for one prefill (all chunks) or one decode step.
    """

    phase: str
    name: str
    kind: str
    group: str
    layers: float
    flop: float
    bytes: float
    compute_s: float
    memory_s: float
    interconnect_s: float
    overhead_s: float
    time_s: float
    bound: Bound

    @property
    def operational_intensity(self) -> float:
        """FLOP per main-memory byte (inf for collectives, which move no memory)."""
        return self.flop / self.bytes if self.bytes > 0 else float("inf")


@dataclass(frozen=True)
class PhaseCost:
    """Prefill (whole prompt) or decode (one step at the mean context).

    ``flop`` and ``bytes`` sum the operators that take time; ``operators`` lists them
    (built from ``pass_cost``, the phase's stacked per-operator arrays, on first use:
    most callers read only the totals).
    """

    phase: str
    time_s: float
    flop: float
    bytes: float
    bound: Bound
    pass_cost: PassCost = field(repr=False, compare=False)

    @cached_property
    def operators(self) -> tuple[OperatorCost, ...]:
        """Every operator of the phase that takes time, in pass order."""
        cost = self.pass_cost
        columns = (
            cost.layers,
            cost.flop,
            cost.bytes,
            cost.compute_s,
            cost.memory_s,
            cost.interconnect_s,
            cost.overhead_s,
            cost.time_s,
            cost.bound_code,
        )
        rows = zip(
            cost.names, cost.kinds, cost.groups, *map(cost.first_scenario, columns), strict=True
        )
        return tuple(
            OperatorCost(
                phase=self.phase,
                name=name,
                kind=KIND_NAMES[kind],
                group=group,
                layers=layers,
                flop=flop,
                bytes=moved,
                compute_s=compute,
                memory_s=memory,
                interconnect_s=interconnect,
                overhead_s=overhead,
                time_s=time,
                bound=BOUND_ORDER[bound],
            )
            for name, kind, group, layers, flop, moved, compute, memory, interconnect, overhead, time, bound in rows
            if time > 0
        )

    @property
    def operational_intensity(self) -> float:
        """FLOP per main-memory byte of the whole phase."""
        return self.flop / self.bytes if self.bytes > 0 else float("inf")


@dataclass(frozen=True)
class Prediction:
    """Latency, throughput, memory and bounds of one model on one platform and scenario.

    ``ttft_s`` is the prefill time (the first token comes out of prefill);
    ``tpot_s`` the mean decode step over the remaining ``output_tokens - 1``
    tokens (for one output token, the step that a second token would take);
    ``e2e_s = ttft_s + (output_tokens - 1) * tpot_s``. Throughputs count output
    tokens: ``throughput_tokens_per_s = dp * batch * output_tokens / e2e_s``.
    """

    model: str
    platform: str
    scenario: Scenario
    ttft_s: float
    tpot_s: float
    e2e_s: float
    throughput_tokens_per_s: float
    throughput_tokens_per_s_per_device: float
    request_tokens_per_s: float
    decode_tokens_per_s: float
    prefill_tokens_per_s: float
    footprint: CapacityFootprint
    capacity: CapacityVerdict
    prefill: PhaseCost
    decode: PhaseCost
    suggestions: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        """False past the capacity wall."""
        return self.capacity.fits

    @property
    def decode_s(self) -> float:
        """Time of the decode steps after the first token, seconds (``e2e_s - ttft_s``)."""
        return decode_time_s(self.tpot_s, self.scenario.output_tokens)

    def operators(self) -> tuple[OperatorCost, ...]:
        """Every operator of both phases."""
        return self.prefill.operators + self.decode.operators

    def to_frame(self) -> pd.DataFrame:
        """Per-operator breakdown of both phases (one row per operator).

        pandas is imported here, at the edge: the numerical core does not need it.
        """
        import pandas as pd

        return pd.DataFrame(self.operator_rows())

    def operator_rows(self) -> list[dict[str, object]]:
        """`to_frame`'s rows as plain dicts (the bound as its string value), without pandas."""
        rows = []
        for op in self.operators():
            row = asdict(op)
            row["bound"] = op.bound.value
            row["operational_intensity"] = op.operational_intensity
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, object]:
        """Summary in SI units (JSON-ready)."""
        scenario = self.scenario
        precision = scenario.precision
        parallelism = scenario.parallelism
        return {
            "model": self.model,
            "platform": self.platform,
            "batch": scenario.batch,
            "input_tokens": scenario.input_tokens,
            "output_tokens": scenario.output_tokens,
            "weight_bits": precision.weight_bits,
            "activation_bits": precision.activation_bits,
            "kv_bits": precision.kv_bits,
            "tp": parallelism.tp,
            "pp": parallelism.pp,
            "ep": parallelism.ep,
            "dp": parallelism.dp,
            "devices": parallelism.devices,
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "e2e_s": self.e2e_s,
            "throughput_tokens_per_s": self.throughput_tokens_per_s,
            "throughput_tokens_per_s_per_device": self.throughput_tokens_per_s_per_device,
            "request_tokens_per_s": self.request_tokens_per_s,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "prefill_bound": self.prefill.bound.value,
            "decode_bound": self.decode.bound.value,
            "prefill_operational_intensity": self.prefill.operational_intensity,
            "decode_operational_intensity": self.decode.operational_intensity,
            "weights_bytes_per_device": self.footprint.weights_bytes,
            "kv_cache_bytes_per_device": self.footprint.kv_cache_bytes,
            "activation_bytes_per_device": self.footprint.activation_bytes,
            "footprint_bytes_per_device": self.footprint.total_bytes,
            "capacity_bytes_per_device": self.capacity.capacity_bytes,
            "fits": self.fits,
            "suggestions": list(self.suggestions),
            # Decoding mode, images and offload (`genz.MODE_AXES`), after the original keys.
            "parallel_samples": scenario.parallel_samples,
            "beam_width": scenario.beam_width,
            "images": scenario.images,
            "weight_offload": scenario.weight_offload,
            "kv_offload": scenario.kv_offload,
        }


@dataclass(frozen=True)
class GridResult:
    """`genz.evaluate_grid` over a grid of scenarios: arrays of the grid's shape, SI units,
    per device where a quantity is per device (as in `Prediction`).

    ``prefill_bound_code`` and ``decode_bound_code`` index ``bound_order``
    (`roofline.BOUND_ORDER`; past the capacity wall the code is that of
    `Bound.CAPACITY`); `bound_names` turns them into the `Bound` value strings.
    ``prefill_flop`` and ``prefill_bytes`` cover the whole prompt, ``decode_flop`` and
    ``decode_bytes`` one decode step at the mean context.
    """

    ttft_s: NDArray[np.float64]
    tpot_s: NDArray[np.float64]
    e2e_s: NDArray[np.float64]
    throughput_tokens_per_s: NDArray[np.float64]
    throughput_tokens_per_s_per_device: NDArray[np.float64]
    weights_bytes: NDArray[np.float64]
    kv_cache_bytes: NDArray[np.float64]
    activation_bytes: NDArray[np.float64]
    footprint_bytes: NDArray[np.float64]
    fits: NDArray[np.bool_]
    prefill_flop: NDArray[np.float64]
    prefill_bytes: NDArray[np.float64]
    decode_flop: NDArray[np.float64]
    decode_bytes: NDArray[np.float64]
    prefill_bound_code: NDArray[np.int8]
    decode_bound_code: NDArray[np.int8]
    bound_order: tuple[Bound, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the grid (the broadcast shape of the scenario axes)."""
        return self.ttft_s.shape

    def bound_names(self, phase: str) -> NDArray[np.str_]:
        """Bound of ``phase`` ('prefill' or 'decode') as `Bound` value strings."""
        if phase not in ("prefill", "decode"):
            raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")
        names = np.array([bound.value for bound in self.bound_order])
        return names[getattr(self, f"{phase}_bound_code")]

    def to_dict(self) -> dict[str, NDArray]:
        """Every array by field name, bounds as strings under ``prefill_bound`` and
        ``decode_bound`` instead of their codes (for tables and front ends)."""
        columns: dict[str, NDArray] = {
            item.name: getattr(self, item.name)
            for item in fields(self)
            if item.name not in ("prefill_bound_code", "decode_bound_code", "bound_order")
        }
        columns["prefill_bound"] = self.bound_names("prefill")
        columns["decode_bound"] = self.bound_names("decode")
        return columns
