"""Operational intensity (OI) and capacity footprint (CF) across agentic workflows.

For each use case x model x (weight bits, KV bits): the OI of prefill and of
one decode step, the CF, where decode stops being memory-bound and where the
capacity wall is hit, plus the disaggregated-serving view (what a prefill-only
and a decode-only accelerator would each need for an SLO).

Conventions:

- OI and CF are per model replica (all devices together, no collectives): a
  property of model, workload and precision. OI = FLOP / main-memory bytes of
  the phase as genz costs it (weights read once per pass, KV cache, activations).
- The ridge is the platform's derated ridge
  ``peak(compute dtype) * eff_compute / (bandwidth * eff_memory)``; a phase is
  memory-bound when its OI is below it. Decode OI grows with the batch, so the
  table gives the smallest power-of-two batch at which decode reaches the ridge.
- Decode CF = weights + batch x KV cache at the final context; prefill CF =
  weights + batch x KV of the prompt + the prefill activation working set.
- The capacity wall compares weights + batch x final KV + the activations of
  one prompt's prefill (servers prefill prompts one or a few at a time; `predict`
  instead counts the whole batch's prefill activations) with ``devices`` x the
  per-device capacity, i.e. it assumes the footprint spreads evenly over the
  devices (TP/EP for weights, sharded or data-parallel attention for the KV
  cache). ``max_batch`` is the largest batch under the wall (0: not even one
  request fits).
- Disaggregated needs are roofline lower bounds, overheads and collectives
  ignored: a prefill accelerator needs ``FLOP / (TTFT * eff_compute)`` FLOP/s and
  ``bytes / (TTFT * eff_memory)`` bytes/s for one request; a decode accelerator at
  ``decode_batch`` concurrent requests needs ``bytes / (TPOT * eff_memory)``,
  ``FLOP / (TPOT * eff_compute)`` and ``weights + decode_batch x KV`` bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from genz import (
    CostBreakdown,
    ModelConfig,
    Precision,
    Scenario,
    UseCase,
    cost_breakdown,
    kv_cache_bytes_per_device,
    parameter_count,
)
from roofline import InputError, Platform

from .slo import ServiceLevel

#: Full attention (GQA, MLA, MoE), local/global sliding windows (Gemma-2) and an
#: attention / state-space hybrid (Jamba): the rows whose KV does or does not grow with
#: the context.
DEFAULT_MODELS = (
    "llama-3.1-70b",
    "llama-3.1-70b+mla",
    "deepseek-v3+gqa",
    "deepseek-v3",
    "gemma-2-9b",
    "jamba-v0.1",
)
DEFAULT_BITS = ((16.0, 16.0), (8.0, 8.0), (4.0, 4.0))
ACTIVATION_BITS = 16.0
#: Batches (powers of two) at which decode OI is evaluated for the ridge crossover.
BATCH_GRID = tuple(2**k for k in range(13))


@dataclass(frozen=True)
class OicfRow:
    """OI and CF of one use case x model x precision (bytes decimal, FLOP/byte)."""

    use_case: str
    model: str
    attention: str
    moe: bool
    params_total: float
    params_active: float
    input_tokens: int
    output_tokens: int
    weight_bits: float
    kv_bits: float
    batch: int
    ridge_flop_per_byte: float
    prefill_oi: float
    decode_oi: float
    weights_bytes: float
    kv_bytes_per_request: float
    activation_bytes: float
    prefill_cf_bytes: float
    decode_cf_bytes: float
    capacity_bytes: float
    max_batch: int
    compute_bound_batch: int | None
    decode_oi_at_max_batch: float | None

    @property
    def decode_memory_bound(self) -> bool:
        """Decode OI below the ridge at ``batch``."""
        return self.decode_oi < self.ridge_flop_per_byte

    @property
    def memory_bound_up_to_wall(self) -> bool:
        """Decode stays memory-bound at every batch that fits."""
        return self.compute_bound_batch is None or self.compute_bound_batch > self.max_batch

    @property
    def past_capacity_wall(self) -> bool:
        """``batch`` requests do not fit (or the weights alone do not)."""
        return self.max_batch < self.batch

    def to_dict(self) -> dict[str, object]:
        """Plain values plus the derived flags (JSON-ready)."""
        row = asdict(self)
        row["decode_memory_bound"] = self.decode_memory_bound
        row["memory_bound_up_to_wall"] = self.memory_bound_up_to_wall
        row["past_capacity_wall"] = self.past_capacity_wall
        return row


@dataclass(frozen=True)
class DisaggregatedNeed:
    """Least peak FLOP/s, bytes/s and bytes of prefill-only and decode-only accelerators."""

    use_case: str
    model: str
    weight_bits: float
    kv_bits: float
    prefill_flops_per_s: float
    prefill_bytes_per_s: float
    prefill_capacity_bytes: float
    prefill_oi: float
    decode_batch: int
    decode_flops_per_s: float
    decode_bytes_per_s: float
    decode_capacity_bytes: float
    decode_oi: float

    def to_dict(self) -> dict[str, object]:
        """Plain values (JSON-ready)."""
        return asdict(self)


@dataclass(frozen=True)
class OicfReport:
    """Rows of the OI/CF table and of the disaggregated view, with their settings."""

    platform: str
    devices: int
    slo: ServiceLevel
    rows: tuple[OicfRow, ...]
    disaggregated: tuple[DisaggregatedNeed, ...]

    def to_dict(self) -> dict[str, object]:
        """Plain values (JSON-ready)."""
        return {
            "platform": self.platform,
            "devices": self.devices,
            "slo": asdict(self.slo),
            "rows": [row.to_dict() for row in self.rows],
            "disaggregated": [need.to_dict() for need in self.disaggregated],
        }


def oicf_report(
    models: Sequence[ModelConfig],
    use_cases: Sequence[UseCase],
    platform: Platform,
    *,
    bits: Sequence[tuple[float, float]] = DEFAULT_BITS,
    batch: int = 1,
    devices: int = 8,
    decode_batch: int = 32,
    slo: ServiceLevel | None = None,
) -> OicfReport:
    """Tabulate OI and CF for every use case x model x (weight bits, KV bits).

    ``slo`` sets the disaggregated targets (default TTFT 2 s, TPOT 50 ms).
    """
    for label, value in (("batch", batch), ("devices", devices), ("decode_batch", decode_batch)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65536:
            raise InputError(f"{label} must be an integer in [1, 65536], got {value!r}")
    if not models or not use_cases or not bits:
        raise InputError("oicf needs at least one model, one use case and one bit pair")
    slo = slo or ServiceLevel(max_ttft_s=2.0, max_tpot_s=0.05)
    if slo.max_ttft_s is None or slo.max_tpot_s is None:
        raise InputError("oicf needs both max_ttft_s and max_tpot_s for the disaggregated view")
    rows, needs = [], []
    for case in use_cases:
        for model in models:
            for weight_bits, kv_bits in bits:
                row, need = _analyse(
                    model, case, platform, weight_bits, kv_bits, batch, devices, decode_batch, slo
                )
                rows.append(row)
                needs.append(need)
    return OicfReport(platform.name, devices, slo, tuple(rows), tuple(needs))


def _batch_sweep(
    model: ModelConfig,
    platform: Platform,
    case: UseCase,
    batches: np.ndarray,
    weight_bits: float,
    kv_bits: float,
) -> CostBreakdown:
    """Both passes of ``case`` on one device at each of ``batches``, whole prompt in one chunk."""
    precision = Precision(weight_bits=weight_bits, activation_bits=ACTIVATION_BITS, kv_bits=kv_bits)
    scenario = Scenario(
        input_tokens=case.input_tokens, output_tokens=case.output_tokens, precision=precision
    )
    return cost_breakdown(model, platform, scenario, batch=batches)


def _analyse(
    model: ModelConfig,
    case: UseCase,
    platform: Platform,
    weight_bits: float,
    kv_bits: float,
    batch: int,
    devices: int,
    decode_batch: int,
    slo: ServiceLevel,
) -> tuple[OicfRow, DisaggregatedNeed]:
    grid = np.array(sorted({*BATCH_GRID, batch, decode_batch, 1, 2}), float)
    result = _batch_sweep(model, platform, case, grid, weight_bits, kv_bits)
    prefill_flop, prefill_bytes = result.prefill.total_flop(), result.prefill.total_bytes()
    decode_flop, decode_bytes = result.decode.total_flop(), result.decode.total_bytes()
    decode_oi = decode_flop / decode_bytes
    efficiency = platform.efficiency
    dtype = platform.compute_dtype_for_bits(ACTIVATION_BITS)
    ridge = platform.ridge_point(dtype) * efficiency.compute / efficiency.memory
    at = {int(b): i for i, b in enumerate(grid)}
    kv_final = float(result.kv_cache_bytes[at[1]])
    fixed = float(result.weights_bytes[at[1]] + result.activation_bytes[at[1]])
    capacity = devices * platform.main_memory.capacity_bytes
    max_batch = int(max(0.0, np.floor((capacity - fixed) / kv_final)))
    crossing = [int(b) for b, oi in zip(grid, decode_oi, strict=True) if oi >= ridge]
    compute_bound_batch = min(crossing) if crossing else None
    oi_at_wall = None
    if max_batch >= 1:
        at_wall = _batch_sweep(
            model, platform, case, np.array([float(max_batch)]), weight_bits, kv_bits
        ).decode
        oi_at_wall = float(at_wall.total_flop()[0] / at_wall.total_bytes()[0])
    kv_prompt = float(
        kv_cache_bytes_per_device(
            model, *np.array([1.0, case.input_tokens, kv_bits, 1.0, 1.0, 1.0])
        )
    )
    weights = float(result.weights_bytes[at[batch]])
    activations = float(result.activation_bytes[at[batch]])
    count = parameter_count(model)
    row = OicfRow(
        use_case=case.name,
        model=model.name,
        attention=model.attention_type,
        moe=model.is_moe,
        params_total=count.total,
        params_active=count.active,
        input_tokens=case.input_tokens,
        output_tokens=case.output_tokens,
        weight_bits=weight_bits,
        kv_bits=kv_bits,
        batch=batch,
        ridge_flop_per_byte=ridge,
        prefill_oi=float(prefill_flop[at[batch]] / prefill_bytes[at[batch]]),
        decode_oi=float(decode_oi[at[batch]]),
        weights_bytes=weights,
        kv_bytes_per_request=kv_final,
        activation_bytes=activations,
        prefill_cf_bytes=weights + batch * kv_prompt + activations,
        decode_cf_bytes=weights + batch * kv_final,
        capacity_bytes=capacity,
        max_batch=max_batch,
        compute_bound_batch=compute_bound_batch,
        decode_oi_at_max_batch=oi_at_wall,
    )
    ttft, tpot = float(slo.max_ttft_s), float(slo.max_tpot_s)  # type: ignore[arg-type]
    need = DisaggregatedNeed(
        use_case=case.name,
        model=model.name,
        weight_bits=weight_bits,
        kv_bits=kv_bits,
        prefill_flops_per_s=float(prefill_flop[at[1]]) / (ttft * efficiency.compute),
        prefill_bytes_per_s=float(prefill_bytes[at[1]]) / (ttft * efficiency.memory),
        prefill_capacity_bytes=weights + kv_prompt + float(result.activation_bytes[at[1]]),
        prefill_oi=float(prefill_flop[at[1]] / prefill_bytes[at[1]]),
        decode_batch=decode_batch,
        decode_flops_per_s=float(decode_flop[at[decode_batch]]) / (tpot * efficiency.compute),
        decode_bytes_per_s=float(decode_bytes[at[decode_batch]]) / (tpot * efficiency.memory),
        decode_capacity_bytes=weights + decode_batch * kv_final,
        decode_oi=float(decode_oi[at[decode_batch]]),
    )
    return row, need
