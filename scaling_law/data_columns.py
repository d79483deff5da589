"""Columns of a training-run table and their checks: the accepted names and aliases, the
``constants.json`` sidecar of a folder, header and cell parsing and the value rules
(see `scaling_law.data` for the table format)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from roofline import InputError, load_user_document

ARCHITECTURE_COLUMNS = (
    "layers",
    "hidden",
    "ffn",
    "heads",
    "kv_heads",
    "head_dim",
    "vocab",
    "experts",
    "top_k",
)
FLAG_COLUMNS = ("gated_ffn", "tie_embeddings")
RUN_COLUMNS = ("step", "seconds_per_step", "num_nodes")
SOURCE_COLUMN = "dataset"
COLUMNS = (
    "loss",
    "tokens",
    "flop",
    "params",
    *ARCHITECTURE_COLUMNS,
    *FLAG_COLUMNS,
    "weight_bits",
    *RUN_COLUMNS,
    SOURCE_COLUMN,
)
COLUMN_ALIASES = {"width": "hidden", "depth": "layers"}
CONSTANTS_FILE = "constants.json"
MAX_CONSTANTS_BYTES = 100_000


def folder_constants(path: Path) -> dict[str, float]:
    """Constant columns from ``constants.json`` beside ``path`` (empty when absent)."""
    sidecar = path.parent / CONSTANTS_FILE
    if not sidecar.is_file():
        return {}
    document = load_user_document(
        sidecar, kind="constants file", max_bytes=MAX_CONSTANTS_BYTES, fmt="json"
    )
    if not isinstance(document, dict) or set(document) - {"source", "columns"}:
        raise InputError(f"{sidecar}: expected an object with keys 'source' and 'columns'")
    columns = document.get("columns", {})
    if not isinstance(columns, dict):
        raise InputError(f"{sidecar}: 'columns' must map column names to numbers")
    constants = {}
    for given, value in columns.items():
        name = COLUMN_ALIASES.get(given, given)
        if name not in COLUMNS:
            raise InputError(f"{sidecar}: unknown column {given!r}; accepted: {', '.join(COLUMNS)}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"{sidecar}: column {given!r} must be a number, got {value!r}")
        constants[name] = float(value)
    return constants


def check_header(names: list[str], origin: Path) -> None:
    """Refuse an empty, unknown or repeated column name in a CSV header."""
    for name in names:
        if not name:
            raise InputError(f"{origin}: empty column name in the header")
        if name not in COLUMNS:
            raise InputError(f"{origin}: unknown column {name!r}; accepted: {', '.join(COLUMNS)}")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{origin}: column {name!r} appears twice")
        seen.add(name)


def parse_number(cell: str, column: str, origin: Path, line: int) -> float:
    """One CSV cell as a float; a missing or non-numeric cell names its line and column."""
    text = cell.strip()
    if not text:
        raise InputError(f"{origin}: line {line}: missing value in column {column!r}")
    try:
        return float(text)
    except ValueError:
        raise InputError(
            f"{origin}: line {line}: column {column!r} must be a number, got {text!r}"
        ) from None


def check_columns(
    columns: Mapping[str, NDArray[np.float64]], origin: str, rows: NDArray[np.int64], label: str
) -> None:
    """Refuse unknown or missing columns and the first out-of-range value, naming its
    ``label`` (``line`` / ``row``) and number in ``rows``."""
    for name in columns:
        if name not in COLUMNS:
            raise InputError(f"{origin}: unknown column {name!r}; accepted: {', '.join(COLUMNS)}")
    if "loss" not in columns:
        raise InputError(f"{origin}: missing required column 'loss'")
    if "tokens" not in columns and "flop" not in columns:
        raise InputError(f"{origin}: needs a 'tokens' or a 'flop' column")
    if "params" not in columns and not {"layers", "hidden"} <= set(columns):
        raise InputError(f"{origin}: needs a 'params' column or 'layers' and 'hidden' columns")
    if len(columns["loss"]) == 0:
        raise InputError(f"{origin}: no data rows")
    for name, values in columns.items():
        if name in FLAG_COLUMNS:
            bad = (values != 0) & (values != 1)
            rule = "must be 0 or 1"
        elif name in ARCHITECTURE_COLUMNS or name == SOURCE_COLUMN:
            bad = ~(np.isfinite(values) & (values >= 1) & (values == np.round(values)))
            rule = "must be a whole number >= 1"
        else:
            bad = ~(np.isfinite(values) & (values > 0))
            rule = "must be a finite number > 0"
        if np.any(bad):
            index = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{origin}: {label} {int(rows[index])}: {name} {rule}, got {values[index]:g}"
            )
