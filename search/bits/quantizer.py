"""Mixed-precision allocation for one model, platform and serving scenario.

`quantize` builds the `BitAllocationProblem` from genz costs (`bits_costs`) and a
sensitivity source (`bits_sensitivity`), solves it once per KV-cache candidate,
keeps the feasible solution of least total sensitivity, and returns the allocation
as a `genz.scenario.Precision` (write it with `genz.bits_file.precision_to_dict`;
`codesign predict --bits-file` reads it back).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from genz import (
    ModelConfig,
    Precision,
    Prediction,
    RuntimeProfile,
    Scenario,
    check_parallelism,
    predict,
)
from roofline import InputError, Platform

from .costs import decision_units, kv_unit, unit_costs
from .formats import Format, check_native_compute, parse_formats
from .problem import BitAllocationProblem, BitAllocationResult, Budget
from .sensitivity import HessianTraces, SensitivityTable, Unit, proxy_sensitivity
from .solvers import DEFAULT_MIP_GAP, allocate_bits, infeasible_message

#: Budget fields: (quantity, label as on the CLI, display scale, display unit).
BUDGET_FIELDS = {
    "max_memory_bytes": ("memory_bytes", "max-memory-gb", 1e9, "GB (decimal)"),
    "max_weights_bytes": ("weights_bytes", "max-weights-gb", 1e9, "GB (decimal)"),
    "max_kv_cache_bytes": ("kv_cache_bytes", "max-kv-gb", 1e9, "GB (decimal)"),
    "max_tpot_s": ("tpot_s", "max-tpot-ms", 1e-3, "ms"),
    "max_ttft_s": ("ttft_s", "max-ttft-ms", 1e-3, "ms"),
    "max_decode_bops": ("decode_bops", "max-decode-gbops", 1e9, "GBOP"),
}


@dataclass(frozen=True)
class QuantizeBudgets:
    """Per-device upper bounds, SI units; None leaves a quantity free.

    ``max_memory_bytes`` bounds weights + KV cache + activations (the capacity
    footprint); ``max_decode_bops`` the bit-operations of one decode step.
    """

    max_memory_bytes: float | None = None
    max_weights_bytes: float | None = None
    max_kv_cache_bytes: float | None = None
    max_tpot_s: float | None = None
    max_ttft_s: float | None = None
    max_decode_bops: float | None = None

    def budgets(self) -> tuple[Budget, ...]:
        """The set limits as `Budget` objects (validated there: finite, > 0)."""
        return tuple(
            Budget(quantity, float(value), label, scale, unit)
            for name, (quantity, label, scale, unit) in BUDGET_FIELDS.items()
            if (value := getattr(self, name)) is not None
        )

    def __post_init__(self) -> None:
        self.budgets()


Sensitivity = str | SensitivityTable | HessianTraces
#: One solve per KV format: (KV format, the problem's cost matrices, solver result).
Outcome = tuple[Format, Mapping[str, np.ndarray], BitAllocationResult]


@dataclass(frozen=True)
class QuantizationResult:
    """The allocation, its totals and the genz prediction of the written `Precision`.

    ``result`` is the solver outcome for the chosen KV format (or, when no KV
    format works, the explanation); ``objective`` adds the KV format's sensitivity.
    ``precision`` and ``prediction`` are None unless ``result.success``; ``runtime`` names
    the serving-stack profile the latency costs and the prediction used.
    """

    model: str
    platform: str
    units: tuple[Unit, ...]
    formats: tuple[Format, ...]
    kv_format: Format
    result: BitAllocationResult
    objective: float
    sensitivity: np.ndarray
    costs: Mapping[str, np.ndarray]
    precision: Precision | None
    prediction: Prediction | None
    solve_time_s: float
    runtime: str = "ideal"

    @property
    def success(self) -> bool:
        """True when an allocation within every budget was found."""
        return self.result.success

    def rows(self) -> list[dict[str, Any]]:
        """One row per unit: layer, group, format, bits, sensitivity and costs (SI)."""
        rows = []
        for i, (unit, choice) in enumerate(zip(self.units, self.result.allocation, strict=True)):
            row: dict[str, Any] = {
                "layer": unit.layer,
                "group": unit.group,
                "format": self.formats[choice].name,
                "bits": self.formats[choice].bits,
                "params": unit.params,
                "sensitivity": float(self.sensitivity[i, choice]),
            }
            row.update({q: float(matrix[i, choice]) for q, matrix in self.costs.items()})
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """Summary, totals, budgets and allocation (JSON-ready, SI units)."""
        result = self.result
        return {
            "model": self.model,
            "platform": self.platform,
            "runtime": self.runtime,
            "success": result.success,
            "status": result.status,
            "message": result.message,
            "method": result.method,
            "objective": self.objective if result.success else None,
            "lower_bound": result.lower_bound,
            "gap": result.gap,
            "solve_time_s": self.solve_time_s,
            "kv_format": self.kv_format.name,
            "totals": dict(result.totals),
            "budgets": {b.quantity: b.limit for b in result.budgets},
            "binding": list(result.binding),
            "smallest_totals": dict(result.smallest_totals),
            "tightest_limits": dict(result.tightest_limits),
            "allocation": self.rows() if result.success else [],
        }


def sensitivity_matrix(
    source: Sensitivity,
    units: tuple[Unit, ...],
    formats: tuple[Format, ...],
    num_layers: int,
    edge_layer_weight: float,
) -> np.ndarray:
    """``(units, formats)`` sensitivities from 'proxy', a table or Hessian traces."""
    if isinstance(source, SensitivityTable | HessianTraces):
        return source.matrix(units, formats)
    if source != "proxy":
        raise InputError(f"sensitivity must be 'proxy', a table or traces, got {source!r}")
    return proxy_sensitivity(units, formats, num_layers, edge_layer_weight=edge_layer_weight)


def _kv_sensitivity(
    source: Sensitivity, model: ModelConfig, kv_formats: tuple[Format, ...], edge: float
) -> np.ndarray:
    """KV rows are optional in a user file when there is one KV candidate (then 0)."""
    try:
        return sensitivity_matrix(source, (kv_unit(model),), kv_formats, model.num_layers, edge)[0]
    except InputError:
        if len(kv_formats) == 1 and source != "proxy":
            return np.zeros(1)
        raise


def quantize(
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    formats: tuple[Format, ...] | str,
    budgets: QuantizeBudgets,
    kv_formats: tuple[Format, ...] | str | None = None,
    sensitivity: Sensitivity = "proxy",
    include_embedding: bool = False,
    edge_layer_weight: float = 1.0,
    method: str = "ilp",
    time_limit_s: float = 60.0,
    mip_gap: float = DEFAULT_MIP_GAP,
    runtime: RuntimeProfile | None = None,
) -> QuantizationResult:
    """Allocate a format to every unit of ``model`` within ``budgets`` (per device).

    ``scenario.precision`` supplies the activation bits and the bits of groups that
    are not units (router, norms; the embedding unless ``include_embedding``);
    ``kv_formats`` defaults to the scenario's KV bits. Returns the allocation of
    least total sensitivity over the KV candidates, or the explanation why none fits.
    ``method``, ``time_limit_s`` and ``mip_gap`` go to `allocate_bits`. ``runtime``: a
    serving-stack profile (`genz.load_runtime`; None: the physics) applied to the unit
    costs and to the allocation's prediction alike.
    """
    check_parallelism(model, scenario.parallelism)
    formats = parse_formats(formats) if isinstance(formats, str) else formats
    if kv_formats is None:
        kv_formats = parse_formats(f"{scenario.precision.kv_bits:g}", "kv bits")
    elif isinstance(kv_formats, str):
        kv_formats = parse_formats(kv_formats, "kv bits")
    activation_bits = scenario.precision.activation_bits
    check_native_compute(formats + kv_formats, platform, activation_bits)
    units = decision_units(model, include_embedding)
    sens = sensitivity_matrix(sensitivity, units, formats, model.num_layers, edge_layer_weight)
    sens.setflags(write=False)
    kv_sens = _kv_sensitivity(sensitivity, model, kv_formats, edge_layer_weight)
    names = tuple(fmt.name for fmt in formats)
    outcomes: list[Outcome] = []
    for kv_format in kv_formats:
        unit_cost, constants = unit_costs(
            model, platform, scenario, units, formats, kv_format.bits, runtime
        )
        problem = BitAllocationProblem(
            sens,
            unit_cost,
            constants,
            budgets.budgets(),
            tuple(u.name for u in units),
            names,
        )
        result = allocate_bits(problem, method, time_limit_s, mip_gap)
        outcomes.append((kv_format, problem.costs, result))
    solve_time = sum(result.solve_time_s for _, _, result in outcomes)
    solved = [
        (result.objective + kv_sens[k], k)
        for k, (_, _, result) in enumerate(outcomes)
        if result.success
    ]
    precision: Precision | None
    prediction: Prediction | None
    if solved:
        objective, best = min(solved)
        kv_format, costs, result = outcomes[best]
        result = dataclasses.replace(result, allocation=_canonical(units, sens, costs, result))
        precision = allocation_precision(scenario.precision, units, formats, result, kv_format)
        prediction = predict(
            model, platform, dataclasses.replace(scenario, precision=precision), runtime
        )
    else:
        objective = float("nan")
        kv_format, costs, result = outcomes[0]
        result = _explain(outcomes, kv_formats, names)
        precision = prediction = None
    return QuantizationResult(
        model=model.name,
        platform=platform.name,
        units=units,
        formats=formats,
        kv_format=kv_format,
        result=result,
        objective=objective,
        sensitivity=sens,
        costs=costs,
        precision=precision,
        prediction=prediction,
        solve_time_s=solve_time,
        runtime="ideal" if runtime is None else runtime.name,
    )


def _canonical(
    units: tuple[Unit, ...],
    sens: np.ndarray,
    costs: Mapping[str, np.ndarray],
    result: BitAllocationResult,
) -> tuple[int, ...]:
    """Reorder the choices among interchangeable units (same group, sensitivities and
    costs) so wider formats go to lower layer indices: same totals and objective, and
    a bits file of contiguous runs instead of the solver's arbitrary pick."""
    classes: dict[tuple[Any, ...], list[int]] = {}
    for i, unit in enumerate(units):
        key = (unit.group, sens[i].tobytes(), *(matrix[i].tobytes() for matrix in costs.values()))
        classes.setdefault(key, []).append(i)
    allocation = np.array(result.allocation)
    for members in classes.values():
        allocation[members] = np.sort(allocation[members])
    return tuple(int(choice) for choice in allocation)


def _explain(
    outcomes: list[Outcome], kv_formats: tuple[Format, ...], names: tuple[str, ...]
) -> BitAllocationResult:
    """Combine the per-KV-format failures into one result and message."""
    results = [result for _, _, result in outcomes]
    if len(results) == 1 or any(r.status != "infeasible" for r in results):
        return next((r for r in results if r.status != "infeasible"), results[0])
    smallest: dict[str, float] = {}
    tightest: dict[str, float] = {}
    for r in results:
        for target, source in ((smallest, r.smallest_totals), (tightest, r.tightest_limits)):
            for quantity, value in source.items():
                target[quantity] = min(value, target.get(quantity, value))
    options = "{" + ", ".join(names) + "} and KV {" + ", ".join(f.name for f in kv_formats) + "}"
    message = infeasible_message(results[0].budgets, options, smallest, tightest)
    return dataclasses.replace(
        results[0], message=message, smallest_totals=smallest, tightest_limits=tightest
    )


def allocation_precision(
    base: Precision,
    units: tuple[Unit, ...],
    formats: tuple[Format, ...],
    result: BitAllocationResult,
    kv_format: Format,
) -> Precision:
    """The allocation as a `Precision`: each per-layer group's most common bits go to
    ``group_bits`` and only the layers that differ to ``layer_bits``; the other fields
    (and ``group_bits`` of groups that are not units) come from ``base``."""
    chosen: dict[str, dict[int | None, float]] = {}
    for unit, choice in zip(units, result.allocation, strict=True):
        chosen.setdefault(unit.group, {})[unit.layer] = formats[choice].bits
    group_bits = dict(base.group_bits)
    layer_bits: dict[int, dict[str, float]] = {}
    for group, by_layer in chosen.items():
        counts = Counter(by_layer.values())
        common = max(counts, key=lambda bits: (counts[bits], bits))
        group_bits[group] = common
        for layer, bits in by_layer.items():
            if layer is not None and bits != common:
                layer_bits.setdefault(layer, {})[group] = bits
    return Precision(
        weight_bits=base.weight_bits,
        activation_bits=base.activation_bits,
        kv_bits=kv_format.bits,
        group_bits=group_bits,
        layer_bits=dict(sorted(layer_bits.items())),
    )
