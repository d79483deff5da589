"""Device priors from published microbenchmarks: what a device achieves of its spec sheet.

``data/hardware/microbenchmarks.csv`` holds one published measurement per line: the
achievable memory bandwidth (STREAM / BabelStream Triad, bandwidth kernels) or dense
GEMM rate per dtype (cuBLAS / rocBLAS / oneMKL GEMM, max-achievable-matmul searches) of
a hardware preset, with the peak the fraction is taken of (``reference_peak``: the
source's own theoretical figure where it states one, else the preset's spec value),
the benchmark and its source (repo + path + commit, table and row).

`load_microbenchmarks` reads and checks the file; `device_fractions` averages the
fractions per device (memory) and per device and dtype (compute); `row_priors` gives
each measured row the fraction its device achieves for the row's GEMM dtype, where a
measurement is cited, else the preset's own efficiency. The transfer model
(`calibration.transfer`) uses them as the prior means of its device terms, with the
prior standard deviation `CITED_DEVICE_SD` (logit) where cited.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genz.fitting import Array
from roofline import InputError, data_dir, load_platform

from .measurements import Measurement

#: The shipped file, relative to the data folder.
MICROBENCHMARKS_FILE = Path("hardware") / "microbenchmarks.csv"
QUANTITIES = ("memory_bandwidth", "dense_gemm")
_COLUMNS = (
    "hw",
    "quantity",
    "dtype",
    "measured",
    "unit",
    "reference_peak",
    "benchmark",
    "source",
    "read",
)
_UNITS = {"memory_bandwidth": "GB/s", "dense_gemm": "TFLOP/s"}
_UNIT_SCALE = {"memory_bandwidth": 1e9, "dense_gemm": 1e12}
#: A reference peak may differ from the preset's spec by at most this factor (a
#: sibling SKU's peak, or the spec rounded); more means a unit or device mix-up.
PEAK_TOLERANCE = 0.10
#: Prior standard deviation (logit scale) of a device's deviation from a cited
#: fraction: about +-25 % on the odds, the spread of repeated runs and of benchmark
#: kinds (Copy vs Triad, one GEMM shape vs a shape search) in the file. Uncited
#: devices keep `calibration.transfer.PRIORS['device']`.
CITED_DEVICE_SD = 0.25


@dataclass(frozen=True)
class Microbenchmark:
    """One published measurement: ``measured / reference_peak`` is the achieved fraction."""

    hw: str
    quantity: str
    dtype: str
    measured: float
    reference_peak: float
    benchmark: str
    source: str

    @property
    def fraction(self) -> float:
        return self.measured / self.reference_peak


@dataclass(frozen=True)
class DeviceFractions:
    """Mean achieved fraction of peak bandwidth, and of peak dense compute per dtype."""

    memory: float | None
    compute: Mapping[str, float]


def load_microbenchmarks(path: str | Path | None = None) -> tuple[Microbenchmark, ...]:
    """Every line of the microbenchmark file (default: the shipped one), checked:
    known preset, quantity, unit, a dtype the preset has a peak for, positive values,
    a fraction in (0, 1] and a reference peak within `PEAK_TOLERANCE` of the preset's."""
    target = Path(path) if path is not None else data_dir() / MICROBENCHMARKS_FILE
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"microbenchmark file not found: {target}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if tuple(reader.fieldnames or ()) != _COLUMNS:
        raise InputError(f"{target.name}:1: expected the columns {', '.join(_COLUMNS)}")
    return tuple(_entry(record, f"{target.name}:{reader.line_num}") for record in reader)


def device_fractions(entries: Sequence[Microbenchmark]) -> dict[str, DeviceFractions]:
    """Per device, the mean fraction of its memory measurements and of its GEMM
    measurements per dtype."""
    memory: dict[str, list[float]] = {}
    compute: dict[str, dict[str, list[float]]] = {}
    for entry in entries:
        if entry.quantity == "memory_bandwidth":
            memory.setdefault(entry.hw, []).append(entry.fraction)
        else:
            compute.setdefault(entry.hw, {}).setdefault(entry.dtype, []).append(entry.fraction)
    return {
        hw: DeviceFractions(
            memory=float(np.mean(memory[hw])) if hw in memory else None,
            compute={dtype: float(np.mean(v)) for dtype, v in compute.get(hw, {}).items()},
        )
        for hw in sorted(set(memory) | set(compute))
    }


def gemm_dtype(row: Measurement) -> str:
    """The dtype of a row's GEMMs: ``fp8`` for 8-bit activations, else ``16-bit``."""
    return "fp8" if row.activation_bits <= 8.5 else "16-bit"


def row_priors(
    rows: Sequence[Measurement],
    preset_compute: Array,
    preset_memory: Array,
    fractions: Mapping[str, DeviceFractions],
) -> tuple[Array, Array, Array, Array]:
    """Per row: the prior compute and memory efficiency (a cited fraction where the
    device has one for the row's GEMM dtype, else the preset's), and whether each is
    cited."""
    compute, memory = preset_compute.astype(float), preset_memory.astype(float)
    cited_c, cited_m = np.zeros(len(rows), bool), np.zeros(len(rows), bool)
    for i, row in enumerate(rows):
        found = fractions.get(row.hw)
        if found is None:
            continue
        if found.memory is not None:
            memory[i], cited_m[i] = found.memory, True
        value = _compute_fraction(found.compute, gemm_dtype(row))
        if value is not None:
            compute[i], cited_c[i] = value, True
    return compute, memory, cited_c, cited_m


def preset_fractions(
    hw: str, fractions: Mapping[str, DeviceFractions]
) -> tuple[float | None, float | None, float | None]:
    """A preset's cited fractions, as `row_priors` gives them to its rows: of 16-bit
    GEMM peak, of FP8 GEMM peak (where FP8 is cited, else the 16-bit one's) and of
    peak bandwidth; None where nothing is cited."""
    found = fractions.get(hw)
    if found is None:
        return None, None, None
    return (
        _compute_fraction(found.compute, "16-bit"),
        _compute_fraction(found.compute, "fp8"),
        found.memory,
    )


def _compute_fraction(by_dtype: Mapping[str, float], dtype: str) -> float | None:
    """The fp8 fraction for fp8 GEMMs where cited; else the mean of the 16-bit ones."""
    if dtype == "fp8" and "fp8" in by_dtype:
        return by_dtype["fp8"]
    sixteen = [by_dtype[name] for name in ("bf16", "fp16") if name in by_dtype]
    return float(np.mean(sixteen)) if sixteen else None


def _entry(record: Mapping[str, str], where: str) -> Microbenchmark:
    hw, quantity, dtype = record["hw"].strip(), record["quantity"].strip(), record["dtype"]
    if quantity not in QUANTITIES:
        raise InputError(f"{where}: quantity must be one of {', '.join(QUANTITIES)}")
    if record["unit"].strip() != _UNITS[quantity]:
        raise InputError(f"{where}: unit of {quantity} must be {_UNITS[quantity]}")
    if not record["source"].strip():
        raise InputError(f"{where}: source is required (repo + path + commit, or URL)")
    try:
        platform = load_platform(hw)
    except (InputError, FileNotFoundError, KeyError):
        raise InputError(f"{where}: hw {hw!r} is not a hardware preset") from None
    values = []
    for name in ("measured", "reference_peak"):
        try:
            value = float(record[name])
        except ValueError:
            raise InputError(f"{where}: {name} must be a number > 0") from None
        if not np.isfinite(value) or value <= 0:
            raise InputError(f"{where}: {name} must be a number > 0")
        values.append(value)
    measured, peak = values
    if quantity == "memory_bandwidth":
        spec = platform.memory[0].bandwidth_bytes_per_s
        dtype = ""
    else:
        dtype = dtype.strip()
        if dtype not in platform.peak_flops_per_s:
            accepted = ", ".join(sorted(platform.peak_flops_per_s))
            raise InputError(f"{where}: dtype must be one of {accepted} for {hw}")
        spec = platform.peak_flops_per_s[dtype]
    if not measured <= peak:
        raise InputError(f"{where}: measured must be <= reference_peak (a fraction <= 1)")
    if abs(peak * _UNIT_SCALE[quantity] / spec - 1) > PEAK_TOLERANCE:
        raise InputError(
            f"{where}: reference_peak {peak:g} {_UNITS[quantity]} is not within "
            f"{PEAK_TOLERANCE:.0%} of {hw}'s spec {spec / _UNIT_SCALE[quantity]:g}"
        )
    return Microbenchmark(
        hw, quantity, dtype, measured, peak, record["benchmark"].strip(), record["source"].strip()
    )
