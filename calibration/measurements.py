"""Measured serving runs: one canonical schema, a strict CSV reader and writer.

One row is one measured static-batch run: ``batch`` sequences of ``input_tokens``
prompt tokens each generating ``output_tokens`` tokens, on a mesh of ``tp x pp x ep``
devices of hardware ``hw``, served by ``runtime``. Columns (SI units):

==================  ========================================================================
column              meaning
==================  ========================================================================
model, hw           model and hardware: preset names (``llama-3-8b``, ``h100-sxm``) or paths
runtime             serving stack, one of `RUNTIMES`
batch               concurrent sequences, integer >= 1
input_tokens        prompt tokens per sequence, integer >= 1
output_tokens       generated tokens per sequence (the first comes from prefill), >= 1
tp, pp, ep          tensor / pipeline / expert parallel degrees (default 1)
prefill_chunk       prompt tokens per prefill pass (llama.cpp ``-b``); blank = whole prompt
weight_format       the published name of the weight format (``fp16``, ``fp8``, ``Q4_K_M``)
weight_bits         bits per weight (default 16); Q4_K_M is ~4.85
activation_bits     bits of activations / GEMM inputs (default 16)
kv_bits             bits per KV-cache element (default 16)
batch_latency_s     wall time of the whole batch: prefill plus every decode step, seconds
throughput_tok_s    generated tokens of all sequences per second (not prompt tokens)
ttft_s              time to first token, seconds
itl_s               mean inter-token latency of decode, seconds
power_w             mean board power during the run, watts, summed over the devices measured
source              where the row comes from (file and line, page, date)
harness             how it was measured (optional; one of `HARNESSES`: llama-bench,
                    benchmark_latency, offline_generate, server_load, vendor_table, ...)
runtime_version     the serving stack's version or release as published (optional)
date                when it was published or measured, ``YYYY-MM`` or ``YYYY-MM-DD`` (optional)
==================  ========================================================================

At least one of the five measured columns must be filled. The reader rejects an
unknown column name, a missing required column, a value outside its range or a
row with no measurement, each with one line naming the file, the line and the
field. It needs only the standard library (no pandas).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from roofline import InputError, read_user_text

#: Largest measurement file read, bytes (about 100,000 rows).
MAX_FILE_BYTES = 20_000_000

#: Serving stacks a row may name.
RUNTIMES = (
    "vllm",
    "tensorrt-llm",
    "llama.cpp",
    "mlc",
    "mlx",
    "sglang",
    "deepspeed",
    "deepspeed-mii",
    "sambaflow",
    "other",
)

#: How a row was measured (the optional ``harness`` column; `calibration.store`).
HARNESSES = (
    "llama-bench",
    "llama-bench-pg",
    "benchmark_latency",
    "offline_generate",
    "offline_throughput",
    "server_load",
    "server_single_request",
    "vendor_table",
    "vendor_script",
    "paper_table",
    "other",
)

#: The measured quantities; a row needs at least one.
METRICS = ("batch_latency_s", "throughput_tok_s", "ttft_s", "itl_s", "power_w")

REQUIRED_COLUMNS = ("model", "hw", "runtime", "batch", "input_tokens", "output_tokens")

#: Inclusive ranges of the integer columns.
COUNT_RANGES = {
    "batch": (1, 1_000_000),
    "input_tokens": (1, 100_000_000),
    "output_tokens": (1, 100_000_000),
    "tp": (1, 4096),
    "pp": (1, 4096),
    "ep": (1, 4096),
    "prefill_chunk": (1, 100_000_000),
}
BITS_RANGE = (1.0, 32.0)
#: Upper limits of the measured columns (all must be > 0).
METRIC_LIMITS = {
    "batch_latency_s": 1e7,
    "throughput_tok_s": 1e9,
    "ttft_s": 1e7,
    "itl_s": 1e4,
    "power_w": 1e7,
}
MAX_TEXT_CHARS = 400
_DATE = re.compile(r"(19|20)\d\d-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?")


@dataclass(frozen=True)
class Measurement:
    """One measured run (see the module docstring for every field and its unit)."""

    model: str
    hw: str
    runtime: str
    batch: int
    input_tokens: int
    output_tokens: int
    tp: int = 1
    pp: int = 1
    ep: int = 1
    prefill_chunk: int | None = None
    weight_format: str = ""
    weight_bits: float = 16.0
    activation_bits: float = 16.0
    kv_bits: float = 16.0
    batch_latency_s: float | None = None
    throughput_tok_s: float | None = None
    ttft_s: float | None = None
    itl_s: float | None = None
    power_w: float | None = None
    source: str = ""
    harness: str = ""
    runtime_version: str = ""
    date: str = ""

    def __post_init__(self) -> None:
        for label in ("model", "hw"):
            _check_text(label, getattr(self, label), required=True)
        for label in ("weight_format", "source", "runtime_version", "date"):
            _check_text(label, getattr(self, label), required=False)
        if self.harness and self.harness not in HARNESSES:
            raise InputError(f"harness must be one of {', '.join(HARNESSES)}; got {self.harness!r}")
        if self.date and not _DATE.fullmatch(self.date):
            raise InputError(f"date must be YYYY-MM or YYYY-MM-DD, got {self.date!r}")
        if self.runtime not in RUNTIMES:
            raise InputError(f"runtime must be one of {', '.join(RUNTIMES)}; got {self.runtime!r}")
        for label, (low, high) in COUNT_RANGES.items():
            value = getattr(self, label)
            if value is None and label == "prefill_chunk":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InputError(f"{label} must be an integer in [{low}, {high}], got {value!r}")
        for label in ("weight_bits", "activation_bits", "kv_bits"):
            _check_number(label, getattr(self, label), *BITS_RANGE, low_inclusive=True)
        for label, limit in METRIC_LIMITS.items():
            metric = getattr(self, label)
            if metric is not None:
                _check_number(label, metric, 0.0, limit, low_inclusive=False)
        if all(getattr(self, label) is None for label in METRICS):
            raise InputError(f"a measurement needs at least one of {', '.join(METRICS)}")

    @property
    def devices(self) -> int:
        """Devices of the run: tp * pp * ep."""
        return self.tp * self.pp * self.ep


#: Every column, in the order `write_measurements` writes them.
COLUMNS = tuple(field.name for field in dataclasses.fields(Measurement))
#: Optional columns saying how and when a row was measured (`calibration.store`).
PROVENANCE_COLUMNS = ("harness", "runtime_version", "date")
_INTEGER_COLUMNS = frozenset(COUNT_RANGES)
_FLOAT_COLUMNS = frozenset({"weight_bits", "activation_bits", "kv_bits", *METRICS})


def load_measurements(path: str | Path) -> tuple[Measurement, ...]:
    """Read a measurement CSV (at most `MAX_FILE_BYTES`) into validated rows, in file order."""
    source, text = read_user_text(path, kind="measurement file", max_bytes=MAX_FILE_BYTES)
    return parse_measurements(text, origin=str(source))


def parse_measurements(text: str, origin: str = "<text>") -> tuple[Measurement, ...]:
    """Parse CSV text with a header row into `Measurement` rows.

    Raises `InputError` at the first problem, naming ``origin``, the line and the field.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"{origin}: empty file; expected a header row") from None
    except csv.Error as error:
        raise InputError(f"{origin}:1: not valid CSV ({error})") from None
    names = [name.strip() for name in header]
    _check_header(names, origin)
    rows = []
    try:
        for record in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(names):
                raise InputError(
                    f"{origin}:{line}: {len(record)} fields, expected {len(names)} (one per column)"
                )
            rows.append(_row(dict(zip(names, record, strict=True)), f"{origin}:{line}"))
    except csv.Error as error:
        raise InputError(f"{origin}:{reader.line_num}: not valid CSV ({error})") from None
    return tuple(rows)


def write_measurements(rows: Iterable[Measurement], path: str | Path) -> None:
    """Write rows as CSV with every column of `COLUMNS` (the optional provenance columns,
    `PROVENANCE_COLUMNS`, only when a row fills them); floats in ``repr`` form, so a
    round trip through `load_measurements` returns equal rows."""
    rows = list(rows)
    columns = tuple(
        column
        for column in COLUMNS
        if column not in PROVENANCE_COLUMNS or any(getattr(row, column) for row in rows)
    )
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(_cell(getattr(row, column)) for column in columns)


def _check_header(names: Sequence[str], origin: str) -> None:
    known = set(COLUMNS)
    seen: set[str] = set()
    for name in names:
        if name not in known:
            raise InputError(f"{origin}:1: unknown column {name!r}; accepted: {', '.join(COLUMNS)}")
        if name in seen:
            raise InputError(f"{origin}:1: column {name!r} appears twice")
        seen.add(name)
    for name in REQUIRED_COLUMNS:
        if name not in seen:
            raise InputError(f"{origin}:1: missing required column {name!r}")


def _row(cells: dict[str, str], where: str) -> Measurement:
    values: dict[str, object] = {}
    for name, raw in cells.items():
        text = raw.strip()
        if text == "":
            if name in REQUIRED_COLUMNS:
                raise InputError(f"{where}: {name} is empty; it is required")
            continue
        try:
            values[name] = _convert(name, text)
        except ValueError:
            kind = "an integer" if name in _INTEGER_COLUMNS else "a number"
            raise InputError(f"{where}: {name} must be {kind}, got {text!r}") from None
    try:
        return Measurement(**values)  # type: ignore[arg-type]
    except InputError as error:
        raise InputError(f"{where}: {error}") from None


def _convert(name: str, text: str) -> object:
    if name in _INTEGER_COLUMNS:
        number = float(text)
        if not number.is_integer():
            raise ValueError(text)
        return int(number)
    if name in _FLOAT_COLUMNS:
        return float(text)
    return text


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _check_text(label: str, value: object, *, required: bool) -> None:
    if not isinstance(value, str):
        raise InputError(f"{label} must be text, got {value!r}")
    if required and not value.strip():
        raise InputError(f"{label} must be non-empty")
    if len(value) > MAX_TEXT_CHARS or any(ord(char) < 32 for char in value):
        raise InputError(
            f"{label} must be at most {MAX_TEXT_CHARS} printable characters, got {value[:40]!r}..."
        )


def _check_number(
    label: str, value: object, low: float, high: float, *, low_inclusive: bool
) -> None:
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and (value >= low if low_inclusive else value > low)
        and value <= high
    )
    if not ok:
        bracket = "[" if low_inclusive else "("
        raise InputError(f"{label} must be a number in {bracket}{low:g}, {high:g}], got {value!r}")
