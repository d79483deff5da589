"""Sensitivity of each (unit, format): a weight-free proxy, a user table, or Hessian traces.

Proxy (default; no weights needed)::

    sens[u, f] = prior[group(u)] * position(u) * n_active(u) * 2^(-2 noise_bits(f))

Uniform quantisation noise has variance ``∝ step^2 ∝ 2^(-2b)`` per weight, and the
output error of a linear layer adds up over its ``n_active`` weights (routed
experts count the ``k`` of ``E`` a token uses; the KV cache counts the K/V
projection weights whose outputs it stores). ``prior`` is a per-group heuristic
(`DEFAULT_PRIOR`): 2 for ``ffn_down`` and ``lm_head``, 1 elsewhere, following the
llama.cpp Q4_K_M mix (src/llama-quant.cpp) that gives both extra bits.
``position`` is ``edge_layer_weight`` for the first and last eighth of the
layers (the same mix's ``use_more_bits``), else 1; default 1 (off).

Hessian traces (HAWQ-V3, Yao et al. 2021, Eq. 4)::

    sens[u, f] = trace(H_u) / n_u * E||Q_f(W_u) - W_u||^2,
    E||Q_f(W_u) - W_u||^2 = n_u * range_u^2 * 2^(-2 noise_bits(f)) / 12

(uniform rounding error of a grid of step ``range 2^-b``), so
``sens = trace * range^2 * 2^(-2 noise_bits) / 12``; ``range`` defaults to 1.

Files are CSV with a header: a table has ``layer, group, bits, sensitivity`` (bits:
a format name or number, as in the candidate list), traces ``layer, group, trace``
and optionally ``range``. ``layer`` is blank for model-level groups (``lm_head``,
``embedding``, ``kv_cache``) and blank on a per-layer group means every layer;
a row with a layer index overrides it for that layer.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from genz import WEIGHT_GROUPS
from roofline import InputError, read_user_text

from .formats import Format, parse_format

MAX_FILE_BYTES = 10_000_000
KV_GROUP = "kv_cache"
GROUPS = (*WEIGHT_GROUPS, KV_GROUP)
DEFAULT_PRIOR: Mapping[str, float] = MappingProxyType(
    {group: 2.0 if group in ("ffn_down", "lm_head") else 1.0 for group in GROUPS}
)


@dataclass(frozen=True)
class Unit:
    """One decision unit: a weight group in one layer (``layer`` None: model-level).

    ``params`` counts the unit's weights on the whole model (not per device);
    ``active_params`` those one token uses (routed experts: ``k / E`` of them).
    """

    layer: int | None
    group: str
    params: float
    active_params: float

    @property
    def name(self) -> str:
        """``'L3.ffn_down'`` or ``'lm_head'``."""
        return self.group if self.layer is None else f"L{self.layer}.{self.group}"


def proxy_sensitivity(
    units: Sequence[Unit],
    formats: Sequence[Format],
    num_layers: int,
    prior: Mapping[str, float] = DEFAULT_PRIOR,
    edge_layer_weight: float = 1.0,
) -> np.ndarray:
    """``(units, formats)`` matrix of the proxy in the module doc."""
    if not (math.isfinite(edge_layer_weight) and edge_layer_weight > 0):
        raise InputError(f"edge_layer_weight must be > 0, got {edge_layer_weight!r}")
    eighth = num_layers // 8
    weights = np.array(
        [
            prior[u.group]
            * u.active_params
            * (
                edge_layer_weight
                if u.layer is not None and (u.layer < eighth or u.layer >= num_layers - eighth)
                else 1.0
            )
            for u in units
        ]
    )
    noise = np.array([fmt.noise for fmt in formats])
    return weights[:, None] * noise[None, :]


def _read_rows(path: str | Path, required: tuple[str, ...], optional: tuple[str, ...]):
    path, text = read_user_text(path, kind="sensitivity file", max_bytes=MAX_FILE_BYTES)
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or []]
    missing = [name for name in required if name not in header]
    if missing:
        raise InputError(f"{path}: missing column {missing[0]!r}; needs {', '.join(required)}")
    unknown = [name for name in header if name not in required + optional]
    if unknown:
        raise InputError(
            f"{path}: unknown column {unknown[0]!r}; accepted: {', '.join(required + optional)}"
        )
    for number, row in enumerate(reader, start=2):
        yield number, {k.strip(): (v or "").strip() for k, v in row.items() if k is not None}


def _key(path: str | Path, number: int, row: Mapping[str, str]) -> tuple[int | None, str]:
    group = row["group"]
    if group not in GROUPS:
        raise InputError(
            f"{path} line {number}: unknown group {group!r}; accepted: {', '.join(GROUPS)}"
        )
    text = row["layer"]
    if text in ("", "-", "*"):
        return None, group
    try:
        layer = int(text)
    except ValueError:
        raise InputError(
            f"{path} line {number}: layer must be an index >= 0 or blank, got {text!r}"
        ) from None
    if layer < 0:
        raise InputError(f"{path} line {number}: layer must be >= 0, got {layer}")
    return layer, group


def _number(path: str | Path, number: int, label: str, text: str, positive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise InputError(
            f"{path} line {number}: {label} must be a finite number {bound}, got {text!r}"
        )
    return value


@dataclass(frozen=True)
class SensitivityTable:
    """User sensitivities keyed by ``(layer or None, group, format name)``."""

    values: Mapping[tuple[int | None, str, str], float]
    origin: str = "<table>"

    def matrix(self, units: Sequence[Unit], formats: Sequence[Format]) -> np.ndarray:
        """``(units, formats)`` matrix; a layer row overrides the all-layers row."""
        out = np.empty((len(units), len(formats)))
        for i, unit in enumerate(units):
            for j, fmt in enumerate(formats):
                value = self.values.get((unit.layer, unit.group, fmt.name))
                if value is None:
                    value = self.values.get((None, unit.group, fmt.name))
                if value is None:
                    raise InputError(
                        f"{self.origin}: no sensitivity for {unit.name} at {fmt.name}; add a row "
                        f"'{'' if unit.layer is None else unit.layer},{unit.group},{fmt.name},...'"
                    )
                out[i, j] = value
        return out


def load_sensitivity_table(path: str | Path) -> SensitivityTable:
    """Read a ``layer, group, bits, sensitivity`` CSV (see module doc)."""
    values: dict[tuple[int | None, str, str], float] = {}
    for number, row in _read_rows(path, ("layer", "group", "bits", "sensitivity"), ()):
        layer, group = _key(path, number, row)
        try:
            fmt = parse_format(row["bits"])
        except InputError as error:
            raise InputError(f"{path} line {number}: {error}") from None
        key = (layer, group, fmt.name)
        if key in values:
            raise InputError(
                f"{path} line {number}: duplicate row for {group} layer {layer} {fmt.name}"
            )
        values[key] = _number(path, number, "sensitivity", row["sensitivity"], positive=False)
    if not values:
        raise InputError(f"{path}: no rows")
    return SensitivityTable(MappingProxyType(values), str(path))


@dataclass(frozen=True)
class HessianTraces:
    """Per-unit Hessian traces (and weight ranges) keyed by ``(layer or None, group)``."""

    traces: Mapping[tuple[int | None, str], tuple[float, float]]
    origin: str = "<traces>"

    def matrix(self, units: Sequence[Unit], formats: Sequence[Format]) -> np.ndarray:
        """HAWQ-V3 sensitivities ``trace * range^2 * 2^(-2 noise_bits) / 12``."""
        factors = np.empty(len(units))
        for i, unit in enumerate(units):
            entry = self.traces.get((unit.layer, unit.group)) or self.traces.get((None, unit.group))
            if entry is None:
                layer = "" if unit.layer is None else unit.layer
                raise InputError(
                    f"{self.origin}: no trace for {unit.name}; add a row '{layer},{unit.group},...'"
                )
            trace, weight_range = entry
            factors[i] = trace * weight_range**2 / 12.0
        noise = np.array([fmt.noise for fmt in formats])
        return factors[:, None] * noise[None, :]


def load_hessian_traces(path: str | Path) -> HessianTraces:
    """Read a ``layer, group, trace[, range]`` CSV (see module doc)."""
    traces: dict[tuple[int | None, str], tuple[float, float]] = {}
    for number, row in _read_rows(path, ("layer", "group", "trace"), ("range",)):
        key = _key(path, number, row)
        if key in traces:
            raise InputError(f"{path} line {number}: duplicate row for {key[1]} layer {key[0]}")
        trace = _number(path, number, "trace", row["trace"], positive=False)
        weight_range = (
            _number(path, number, "range", row["range"], positive=True) if row.get("range") else 1.0
        )
        traces[key] = (trace, weight_range)
    if not traces:
        raise InputError(f"{path}: no rows")
    return HessianTraces(MappingProxyType(traces), str(path))
