"""Held-out predictions of a calibration, as a small CSV the dashboard reads.

`codesign calibrate --held-out FILE` writes, for every row it scores out of sample
(measured and cross-validated batch latency both finite), the row's hardware, its
measured batch latency and the prediction of a profile fitted without it (seconds). The
shipped profiles' files, ``data/runtimes/held_out/<runtime>.csv``, are what their
``calibrated_from`` commands write with ``--held-out`` (tests/test_runtime_calibration.py
re-derives them), so the Accuracy page shows the calibration's numbers without re-running
the fit on first open. Floats are written with ``repr`` (they read back bit for bit).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from roofline import InputError, data_dir

if TYPE_CHECKING:
    from .calibrate import Calibration

#: The columns of a held-out file, in order.
HELD_OUT_COLUMNS = ("runtime", "hardware", "method", "measured_s", "predicted_s")
#: A held-out file larger than this is refused (the shipped ones are < 100 kB).
MAX_HELD_OUT_BYTES = 5_000_000


@dataclass(frozen=True)
class HeldOutRow:
    """One scored row: its measured batch latency and its out-of-sample prediction (s).

    ``method`` is the cross-validation that held the row out (``leave-one-hardware-out``,
    or ``5-fold`` for a runtime measured on one hardware).
    """

    runtime: str
    hardware: str
    method: str
    measured_s: float
    predicted_s: float


def held_out_rows(result: Calibration, runtime: str) -> tuple[HeldOutRow, ...]:
    """The rows of ``result`` scored out of sample on batch latency, in row order."""
    measured = result.data.measured["batch_latency_s"]
    predicted = result.cv.predicted["batch_latency_s"]
    scored = result.cv.scored(result.data)
    return tuple(
        HeldOutRow(runtime, hw, result.cv.method, float(measured[i]), float(predicted[i]))
        for i, hw in enumerate(result.data.hw)
        if scored[i]
    )


def held_out_text(rows: tuple[HeldOutRow, ...]) -> str:
    """``rows`` as CSV text (header `HELD_OUT_COLUMNS`; floats as ``repr``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HELD_OUT_COLUMNS)
    for row in rows:
        writer.writerow(
            [row.runtime, row.hardware, row.method, repr(row.measured_s), repr(row.predicted_s)]
        )
    return out.getvalue()


def write_held_out(rows: tuple[HeldOutRow, ...], path: str | Path) -> Path:
    """Write ``rows`` to ``path`` (CSV, `held_out_text`); the path written."""
    target = Path(path)
    target.write_text(held_out_text(rows), encoding="utf-8")
    return target


def read_held_out(path: str | Path) -> tuple[HeldOutRow, ...]:
    """The rows of a held-out file; a malformed one is an `InputError` naming the line."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"{source}: no such held-out file")
    if source.stat().st_size > MAX_HELD_OUT_BYTES:
        raise InputError(f"{source}: larger than {MAX_HELD_OUT_BYTES / 1e6:g} MB")
    reader = csv.reader(io.StringIO(source.read_text(encoding="utf-8")))
    header = tuple(next(reader, ()))
    if header != HELD_OUT_COLUMNS:
        raise InputError(f"{source}: header must be {','.join(HELD_OUT_COLUMNS)}")
    rows = []
    for line, fields in enumerate(reader, start=2):
        try:
            runtime, hardware, method, measured, predicted = fields
            rows.append(HeldOutRow(runtime, hardware, method, float(measured), float(predicted)))
        except ValueError:
            raise InputError(
                f"{source} line {line}: expected {len(HELD_OUT_COLUMNS)} fields "
                "(measured_s and predicted_s numbers)"
            ) from None
    return tuple(rows)


def shipped_held_out_path(runtime: str) -> Path:
    """Where the shipped profile ``runtime``'s held-out file lives."""
    return data_dir() / "runtimes" / "held_out" / f"{runtime}.csv"
