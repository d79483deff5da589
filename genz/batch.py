"""Many scenarios from one CSV (``codesign predict --scenarios``), predicted in row order.

Columns (header names; only ``model`` and ``hw`` are required)::

    model, hw         model and hardware preset names or file paths
    runtime           runtime profile name or .yaml file (default ideal)
    batch, input_tokens, output_tokens, tp, pp, ep, prefill_chunk    integers
    weight_bits, activation_bits, kv_bits                            numbers

Defaults are those of `genz.Scenario`. A bad cell or a scenario the model rejects
marks that row (its line number and one-line reason) and the others go on. Rows of
the same (model, hardware, runtime) are predicted in one `evaluate_grid` call, so
10,000 rows take about a second.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline import InputError, Platform, load_platform, read_user_text

from .model import ModelConfig, load_model
from .predictor import check_parallelism, evaluate_grid
from .runtime import RuntimeProfile, load_runtime
from .scenario import Parallelism
from .uncertainty import prediction_interval

#: Largest scenario file read, bytes.
MAX_SCENARIO_BYTES = 50_000_000
INTEGER_COLUMNS = {
    "batch": 1,
    "input_tokens": 1024,
    "output_tokens": 128,
    "tp": 1,
    "pp": 1,
    "ep": 1,
    "prefill_chunk": 0,  # 0: the whole prompt in one pass
}
NUMBER_COLUMNS = {"weight_bits": 16.0, "activation_bits": 16.0, "kv_bits": 16.0}
DEFAULTS = {name: float(value) for name, value in {**INTEGER_COLUMNS, **NUMBER_COLUMNS}.items()}
TEXT_COLUMNS = ("model", "hw", "runtime")
COLUMNS = (*TEXT_COLUMNS, *INTEGER_COLUMNS, *NUMBER_COLUMNS)
#: Output columns after ``line``, in order.
SCENARIO_OUTPUTS = (
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "throughput_tokens_per_s",
    "fits",
    "e2e_low_s",
    "e2e_high_s",
    "interval_basis",
    "error",
)


@dataclass(frozen=True)
class ScenarioRow:
    """One parsed row: its line in the file, names and numeric axes."""

    line: int
    model: str
    hw: str
    runtime: str
    values: dict[str, float]


def parse_scenarios(text: str, origin: str = "<text>") -> tuple[list[ScenarioRow], dict[int, str]]:
    """Rows that parse and, per line number, the reason a row does not."""
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    unknown = sorted(set(header) - set(COLUMNS))
    if unknown:
        raise InputError(f"{origin}: unknown column {unknown[0]!r}; accepted: {', '.join(COLUMNS)}")
    missing = [name for name in ("model", "hw") if name not in header]
    if missing:
        raise InputError(f"{origin}: missing required column {missing[0]!r}")
    rows, errors = [], {}
    for line, cells in enumerate(reader, start=2):
        try:
            rows.append(_row(line, cells))
        except InputError as error:
            errors[line] = str(error)
    return rows, errors


def _row(line: int, cells: dict[str, str | None]) -> ScenarioRow:
    def text(name: str) -> str:
        return (cells.get(name) or "").strip()

    for name in ("model", "hw"):
        if not text(name):
            raise InputError(f"{name} is empty")
    values = dict(DEFAULTS)
    for name in DEFAULTS:
        cell = cells.get(name)
        if not cell or not (cell := cell.strip()):
            continue
        try:
            number = float(cell)
        except ValueError:
            raise InputError(f"{name} must be a number, got {cell!r}") from None
        if name in INTEGER_COLUMNS and not number.is_integer():
            raise InputError(f"{name} must be an integer, got {cell!r}")
        values[name] = number
    return ScenarioRow(line, text("model"), text("hw"), text("runtime") or "ideal", values)


def predict_scenarios(rows: list[ScenarioRow]) -> list[dict[str, Any]]:
    """One result mapping per row, in input order: `SCENARIO_OUTPUTS` (SI units) and ``line``."""
    results: list[dict[str, Any]] = [{"line": row.line} for row in rows]
    groups: dict[tuple[str, str, str], list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault((row.model, row.hw, row.runtime), []).append(index)
    cache: dict[tuple[str, str], Any] = {}
    for (model_name, hw, runtime_name), indices in groups.items():
        try:
            model = _cached(cache, "model", model_name, load_model)
            platform = _cached(cache, "hw", hw, load_platform)
            runtime = _cached(cache, "runtime", runtime_name, load_runtime)
        except InputError as error:
            for index in indices:
                results[index]["error"] = str(error)
            continue
        indices = _check_meshes(results, rows, indices, model)
        try:
            _fill(results, [rows[i] for i in indices], indices, model, platform, runtime)
        except InputError:  # isolate the rows the model rejects, one by one
            for index in indices:
                try:
                    _fill(results, [rows[index]], [index], model, platform, runtime)
                except InputError as error:
                    results[index]["error"] = str(error)
    return results


def _check_meshes(
    results: list[dict[str, Any]], rows: list[ScenarioRow], indices: list[int], model: ModelConfig
) -> list[int]:
    """Rows whose tp / pp / ep mesh the model accepts (`check_parallelism`, once per
    distinct mesh); the others get the reason."""
    verdicts: dict[tuple[float, float, float], str] = {}
    kept = []
    for index in indices:
        values = rows[index].values
        mesh = (values["tp"], values["pp"], values["ep"])
        if mesh not in verdicts:
            try:
                if not all(degree.is_integer() and degree >= 1 for degree in mesh):
                    raise InputError(f"tp, pp and ep must be integers >= 1, got {mesh}")
                check_parallelism(model, Parallelism(*(int(degree) for degree in mesh)))
                verdicts[mesh] = ""
            except InputError as error:
                verdicts[mesh] = str(error)
        if verdicts[mesh]:
            results[index]["error"] = verdicts[mesh]
        else:
            kept.append(index)
    return kept


def _cached(
    cache: dict[tuple[str, str], Any], kind: str, name: str, load: Callable[[str], Any]
) -> Any:
    key = (kind, name)
    if key not in cache:
        try:
            cache[key] = load(name)
        except InputError as error:
            cache[key] = error
    if isinstance(cache[key], InputError):
        raise cache[key]
    return cache[key]


def _fill(
    results: list[dict[str, Any]],
    rows: list[ScenarioRow],
    indices: list[int],
    model: ModelConfig,
    platform: Platform,
    runtime: RuntimeProfile,
) -> None:
    def column(name: str) -> np.ndarray:
        return np.array([row.values[name] for row in rows])

    tokens = column("input_tokens")
    chunk = column("prefill_chunk")
    grid = evaluate_grid(
        model,
        platform,
        **{
            name: column(name)
            for name in (*INTEGER_COLUMNS, *NUMBER_COLUMNS)
            if name != "prefill_chunk"
        },
        prefill_chunk=np.where(chunk > 0, chunk, tokens),
        runtime=None if runtime.is_ideal else runtime,
    )
    # The interval of a time is proportional to it: one per group, scaled per row.
    unit = None if runtime.is_ideal else prediction_interval(1.0, runtime, platform)
    columns = zip(
        grid.ttft_s.tolist(),
        grid.tpot_s.tolist(),
        grid.e2e_s.tolist(),
        grid.throughput_tokens_per_s.tolist(),
        grid.fits.tolist(),
        strict=True,
    )
    low = high = None
    if unit is not None and unit.low is not None and unit.high is not None:
        low, high = unit.low, unit.high
    for index, (ttft, tpot, e2e, throughput, fits) in zip(indices, columns, strict=True):
        results[index].update(
            {
                "ttft_s": ttft,
                "tpot_s": tpot,
                "e2e_s": e2e,
                "throughput_tokens_per_s": throughput,
                "fits": fits,
                "e2e_low_s": None if low is None else e2e * low,
                "e2e_high_s": None if high is None else e2e * high,
                "interval_basis": "physics only (ideal)" if unit is None else unit.basis,
            }
        )


def load_scenarios(path: str) -> tuple[list[ScenarioRow], dict[int, str]]:
    """`parse_scenarios` of a file (size-limited, UTF-8)."""
    source, text = read_user_text(path, kind="scenario file", max_bytes=MAX_SCENARIO_BYTES)
    return parse_scenarios(text, origin=str(source))
