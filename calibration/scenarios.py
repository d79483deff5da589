"""Many scenarios from one CSV (``codesign predict --scenarios``), predicted in row order.

Columns (header names; only ``model`` and ``hw`` are required)::

    model, hw         model and hardware preset names or file paths
    runtime           runtime profile name or .yaml file (default ideal)
    batch, input_tokens, output_tokens, tp, pp, ep, prefill_chunk    integers
    parallel_samples, beam_width, images                             integers
    weight_bits, activation_bits, kv_bits                            numbers
    weight_offload, kv_offload                                       fractions in [0, 1]
    sliding_window, attention_layers      integers; empty: the model's (`genz.layer_mix`)
    lora_rank, lora_adapters, lora_targets   multi-LoRA serving (`genz.with_lora`): rank
                                          (empty or 0: none), adapters (default 1),
                                          targets ``qkv+o`` (default; or a quoted
                                          ``"qkv,o"``) from qkv, o, ffn
    gpu_layers, host_hw   llama.cpp -ngl partial offload (`scenario_offload`): layers
                          on ``hw``, the rest on the host CPU preset or file; together

A measurement file of ``codesign calibrate`` (`genz.measurements`) is a scenario file
too: its measured columns (``batch_latency_s``, ``throughput_tok_s``, ``ttft_s``,
``itl_s``, ``power_w``) and ``weight_format`` / ``source`` are carried to the output
(measured ones as ``measured_<column>``), and each measured time or rate gets the signed error
of its prediction, ``100 (predicted - measured) / measured`` %: ``e2e_error_pct``
(end-to-end against ``batch_latency_s``), ``ttft_error_pct``, ``tpot_error_pct``
(TPOT against ``itl_s``) and ``throughput_error_pct`` (generated tokens per second).

Defaults are those of `genz.Scenario`. A bad cell or a scenario the model rejects
marks that row (its line number and one-line reason) and the others go on. Rows of
the same (model, hardware, runtime) are predicted in one `evaluate_grid` call, so
10,000 rows take about a second. Each row's 80 % intervals are those of
`genz.prediction_interval` for its runtime and hardware (TTFT and TPOT from their own
held-out errors where measured enough; end-to-end and throughput from batch latency's).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from genz import (
    AXES,
    LORA_TARGETS,
    ModelConfig,
    Parallelism,
    RuntimeProfile,
    check_parallelism,
    evaluate_grid,
    load_model,
    load_runtime,
    with_layer_mix,
    with_lora,
)
from roofline import InputError, Platform, csv_failure, load_platform, read_user_text

from .intervals import INTERVAL_KINDS, Interval, prediction_intervals
from .measurements import MAX_TEXT_CHARS, METRIC_LIMITS
from .measurements import METRICS as MEASURED_METRICS
from .scenario_columns import (
    ARCHITECTURE_COLUMNS,
    COLUMNS,
    DEFAULT_LORA_TARGETS,
    DEFAULTS,
    INTEGER_COLUMNS,
    INTERVAL_OUTPUTS,
    LORA_COLUMNS,
    LORA_TARGETS_COLUMN,
    MAX_SCENARIO_BYTES,
    NOTE_COLUMNS,
    NUMBER_COLUMNS,
    SCORED_TIMES,
)
from .scenario_offload import (
    GPU_LAYERS_COLUMN,
    HOST_HW_COLUMN,
    offload_cells,
    offload_outputs,
)


@dataclass(frozen=True)
class ScenarioRow:
    """One parsed row: its line in the file, names and numeric axes."""

    line: int
    model: str
    hw: str
    runtime: str
    values: dict[str, float]
    notes: dict[str, str] = field(default_factory=dict)
    measured: dict[str, float] = field(default_factory=dict)
    lora_targets: tuple[str, ...] = DEFAULT_LORA_TARGETS
    #: llama.cpp -ngl offload (`scenario_offload`): layers on ``hw`` (None: no split)
    #: and the host platform computing the rest.
    gpu_layers: int | None = None
    host_hw: str = ""


def parse_scenarios(
    text: str, origin: str = "<text>", runtime: str | None = None
) -> tuple[list[ScenarioRow], dict[int, str]]:
    """Rows that parse and, per line number, the reason a row does not. ``runtime``
    (a profile name or file) replaces every row's ``runtime`` cell when given."""
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames or []
    except csv.Error as error:
        raise csv_failure(origin, 1, error) from None
    unknown = sorted(set(header) - set(COLUMNS))
    if unknown:
        raise InputError(f"{origin}: unknown column {unknown[0]!r}; accepted: {', '.join(COLUMNS)}")
    missing = [name for name in ("model", "hw") if name not in header]
    if missing:
        raise InputError(f"{origin}: missing required column {missing[0]!r}")
    rows, errors = [], {}
    try:
        for line, cells in enumerate(reader, start=2):
            try:
                rows.append(_row(line, cells, runtime))
            except InputError as error:
                errors[line] = str(error)
    except csv.Error as error:
        raise csv_failure(origin, reader.line_num + 1, error) from None
    return rows, errors


def _row(line: int, cells: dict[str, str | None], runtime: str | None) -> ScenarioRow:
    def text(name: str) -> str:
        return (cells.get(name) or "").strip()

    extra = cells.get(None)  # type: ignore[call-overload]
    if extra:  # DictReader files cells beyond the header under None
        raise InputError(
            f"{len(cells) - 1 + len(extra)} fields, expected {len(cells) - 1} (one per column)"
        )
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
        integer = name in INTEGER_COLUMNS or name in ARCHITECTURE_COLUMNS or name in LORA_COLUMNS
        if integer and not number.is_integer():
            raise InputError(f"{name} must be an integer, got {cell!r}")
        values[name] = number
    notes = {name: text(name) for name in NOTE_COLUMNS if text(name)}
    for name, note in notes.items():
        if len(note) > MAX_TEXT_CHARS:
            raise InputError(f"{name} is longer than {MAX_TEXT_CHARS} characters")
    measured = {name: _measured(name, text(name)) for name in MEASURED_METRICS if text(name)}
    chosen = runtime or text("runtime") or "ideal"
    targets = _lora_targets(text(LORA_TARGETS_COLUMN))
    gpu_layers, host = offload_cells(text(GPU_LAYERS_COLUMN), text(HOST_HW_COLUMN))
    return ScenarioRow(
        line, text("model"), text("hw"), chosen, values, notes, measured, targets, gpu_layers, host
    )


def _lora_targets(cell: str) -> tuple[str, ...]:
    """The ``lora_targets`` cell: targets joined by ``+`` (or commas in a quoted cell)."""
    if not cell:
        return DEFAULT_LORA_TARGETS
    targets = tuple(part.strip() for part in cell.replace(",", "+").split("+") if part.strip())
    unknown = [target for target in targets if target not in LORA_TARGETS]
    if unknown or not targets:
        raise InputError(
            f"lora_targets: unknown target {(unknown or [cell])[0]!r}; accepted: "
            f"{', '.join(LORA_TARGETS)} joined by + (e.g. qkv+o)"
        )
    return targets


def _measured(name: str, cell: str) -> float:
    """A measured value: a number in (0, `METRIC_LIMITS`]."""
    limit = METRIC_LIMITS[name]
    try:
        number = float(cell)
    except ValueError:
        raise InputError(f"{name} must be a number, got {cell!r}") from None
    if not 0 < number <= limit:  # also refuses NaN
        raise InputError(f"{name} must be in (0, {limit:g}], got {cell!r}")
    return number


def predict_scenarios(rows: list[ScenarioRow]) -> list[dict[str, Any]]:
    """One result mapping per row, in input order: ``line``, the scenario, the
    predictions (SI units; `output_columns`), the row's measurements and their errors."""
    results: list[dict[str, Any]] = [_echo(row) for row in rows]
    groups: dict[tuple[str, str, str, tuple[Any, ...]], list[int]] = {}
    for index, row in enumerate(rows):
        mix = tuple(row.values[name] for name in (*ARCHITECTURE_COLUMNS, *LORA_COLUMNS))
        groups.setdefault((row.model, row.hw, row.runtime, (*mix, row.lora_targets)), []).append(
            index
        )
    cache: dict[tuple[str, str], Any] = {}
    for (model_name, hw, runtime_name, mix), indices in groups.items():
        try:
            model = _variant(_cached(cache, "model", model_name, load_model), mix)
            platform = _cached(cache, "hw", hw, load_platform)
            runtime = _cached(cache, "runtime", runtime_name, load_runtime)
        except InputError as error:
            for index in indices:
                results[index]["error"] = str(error)
            continue
        indices = _check_meshes(results, rows, indices, model)
        for index in indices:  # -ngl offload: one row at a time (`scenario_offload`)
            layers = rows[index].gpu_layers
            if layers is None:
                continue
            try:
                results[index].update(
                    _offload_row(cache, rows[index], layers, model, platform, runtime)
                )
            except InputError as error:
                results[index]["error"] = str(error)
        indices = [index for index in indices if rows[index].gpu_layers is None]
        if not indices:
            continue
        try:
            _fill(results, [rows[i] for i in indices], indices, model, platform, runtime)
        except InputError:  # isolate the rows the model rejects, one by one
            for index in indices:
                try:
                    _fill(results, [rows[index]], [index], model, platform, runtime)
                except InputError as error:
                    results[index]["error"] = str(error)
    return results


def _variant(model: ModelConfig, mix: tuple[Any, ...]) -> ModelConfig:
    """``model`` with the row's architecture columns (NaN: the model's own) and its LoRA
    adapters (rank 0: none); errors name the column."""
    *numbers, targets = mix
    values = dict(zip((*ARCHITECTURE_COLUMNS, *LORA_COLUMNS), numbers, strict=True))
    changes = {
        name: int(values[name]) for name in ARCHITECTURE_COLUMNS if not np.isnan(values[name])
    }
    if changes:
        model = with_layer_mix(
            model,
            sliding_window=changes.get("sliding_window"),
            attention_layers=changes.get("attention_layers"),
        )
    rank, adapters = int(values["lora_rank"]), int(values["lora_adapters"])
    if not rank:
        if adapters != LORA_COLUMNS["lora_adapters"] or targets != DEFAULT_LORA_TARGETS:
            raise InputError(
                "lora_adapters and lora_targets go with lora_rank (the adapters' rank)"
            )
        return model
    if adapters < 1:
        raise InputError(f"lora_adapters must be an integer >= 1, got {adapters}")
    try:
        return with_lora(model, rank, adapters, targets)
    except InputError as error:  # genz names the CLI's flags; a file names its columns
        text = str(error).replace("--lora-rank", "lora_rank").replace("--lora-", "lora_")
        raise InputError(text) from None


def _offload_row(
    cache: dict[tuple[str, str], Any],
    row: ScenarioRow,
    gpu_layers: int,
    model: ModelConfig,
    platform: Platform,
    runtime: RuntimeProfile,
) -> dict[str, Any]:
    """The predicted columns of a row with ``gpu_layers`` layers on ``platform``."""
    try:
        host = _cached(cache, "hw", row.host_hw, load_platform)
    except InputError as error:
        raise InputError(f"{HOST_HW_COLUMN}: {error}") from None
    return offload_outputs(model, platform, host, row.values, gpu_layers, runtime)


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

    chunk = column("prefill_chunk")
    grid = evaluate_grid(
        model,
        platform,
        **{
            name: column(name)
            for name in (*INTEGER_COLUMNS, *NUMBER_COLUMNS)
            if name != "prefill_chunk"
        },
        # 0: the whole prompt, image tokens included (the grid clips a chunk to the prompt)
        prefill_chunk=np.where(chunk > 0, chunk, AXES["prefill_chunk"].high),
        runtime=None if runtime.is_ideal else runtime,
    )
    # An interval is proportional to its value: one per group and metric, scaled per row.
    found = (
        {}
        if runtime.is_ideal
        else prediction_intervals(dict.fromkeys(INTERVAL_KINDS, 1.0), runtime, platform)
    )
    units = {key: found.get(predicted) for key, predicted in INTERVAL_OUTPUTS}
    columns = zip(
        grid.ttft_s.tolist(),
        grid.tpot_s.tolist(),
        grid.e2e_s.tolist(),
        grid.throughput_tokens_per_s.tolist(),
        grid.fits.tolist(),
        strict=True,
    )
    for row, index, (ttft, tpot, e2e, throughput, fits) in zip(rows, indices, columns, strict=True):
        result = results[index]
        result.update(
            {
                "ttft_s": ttft,
                "tpot_s": tpot,
                "e2e_s": e2e,
                "throughput_tokens_per_s": throughput,
                "fits": fits,
            }
        )
        for key, predicted in INTERVAL_OUTPUTS:
            unit = units[key]
            low = high = None
            if unit is not None and unit.low is not None and unit.high is not None:
                low, high = result[predicted] * unit.low, result[predicted] * unit.high
            suffix = "tokens_per_s" if key == "throughput" else "s"
            result[f"{key}_low_{suffix}"] = low
            result[f"{key}_high_{suffix}"] = high
        result["interval_basis"] = _basis(units["e2e"])
        result["ttft_interval_basis"] = _basis(units["ttft"])
        result["tpot_interval_basis"] = _basis(units["tpot"])
        for name, predicted, error in SCORED_TIMES:
            if name in row.measured:
                result[error] = 100 * (result[predicted] - row.measured[name]) / row.measured[name]


def _basis(unit: Interval | None) -> str:
    return "physics only (ideal)" if unit is None else unit.basis


def _echo(row: ScenarioRow) -> dict[str, Any]:
    """The row's own columns as predicted: line, scenario, notes and measured values."""
    echo: dict[str, Any] = {"line": row.line, "model": row.model, "hw": row.hw}
    echo["runtime"] = row.runtime
    for name in (*INTEGER_COLUMNS, *NUMBER_COLUMNS):
        value = row.values[name]
        echo[name] = int(value) if name in INTEGER_COLUMNS else value
    for name in ARCHITECTURE_COLUMNS:
        value = row.values[name]
        echo[name] = None if np.isnan(value) else int(value)
    echo.update({name: int(row.values[name]) for name in LORA_COLUMNS})
    echo[LORA_TARGETS_COLUMN] = "+".join(row.lora_targets)
    if row.gpu_layers is not None:  # (rows without a split keep their columns as before)
        echo[GPU_LAYERS_COLUMN], echo[HOST_HW_COLUMN] = row.gpu_layers, row.host_hw
    echo.update(row.notes)
    echo.update({f"measured_{name}": value for name, value in row.measured.items()})
    return echo


def load_scenarios(
    path: str, runtime: str | None = None
) -> tuple[list[ScenarioRow], dict[int, str], tuple[str, ...]]:
    """`parse_scenarios` of a file (size-limited, UTF-8), and the file's column names."""
    source, text = read_user_text(path, kind="scenario file", max_bytes=MAX_SCENARIO_BYTES)
    rows, errors = parse_scenarios(text, origin=str(source), runtime=runtime)
    header = next(csv.reader(io.StringIO(text)), [])  # parse_scenarios read it already
    return rows, errors, tuple(header)
