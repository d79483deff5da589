"""Training-run tables for fitting: CSV loading, validation and law features.

CSV columns (header row required, names exact, unknown names rejected):

=================  ========  ===================================================
column             required  meaning
=================  ========  ===================================================
``loss``           yes       final training/validation loss, nats per token
``tokens``         one of    training tokens D
``flop``           these     training FLOP C; then ``D = C / (6 N)``
``params``         one of    parameter count N (the law's convention)
``layers``,        these     architecture; N is then counted from it (see
``hidden``                   `scaling_law.architecture`)
``ffn``, ``heads``, no       optional architecture columns (defaults as in
``kv_heads``,               `Architecture`); they also give the shape features
``head_dim``,
``vocab``,
``experts``,
``top_k``
``gated_ffn``,     no        0 or 1
``tie_embeddings``
``weight_bits``    no        weight precision of the run, bits (N -> N_eff)
``step``,          no        run bookkeeping, kept but not fitted: optimizer
``seconds_per_``             step, measured seconds per step, nodes used
``step``,
``num_nodes``
``dataset``        no        1-based index of the source table when tables are
                             pooled (`scaling_law.pooled`): a law feature
=================  ========  ===================================================

``width`` and ``depth`` (the Gemstones names) are accepted for ``hidden`` and
``layers``. A file ``constants.json`` next to a CSV, ``{"source": ..., "columns":
{"vocab": 50304, ...}}``, supplies columns that hold one value for every run of
that folder (the Gemstones tables: vocabulary 50,304, untied embeddings); a
column present in the CSV wins.

Every value must be a finite number > 0 (flags 0/1); a bad value is reported
with its line number. Files larger than `MAX_FILE_BYTES` are refused; nothing
is evaluated or unpickled. When both ``params`` and architecture columns are
given, ``params`` is N and the architecture only supplies the shape features.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError, data_dir

from .architecture import Architecture
from .data_columns import (
    ARCHITECTURE_COLUMNS,
    COLUMN_ALIASES,
    COLUMNS,
    CONSTANTS_FILE,
    FLAG_COLUMNS,
    MAX_CONSTANTS_BYTES,
    RUN_COLUMNS,
    SOURCE_COLUMN,
    check_columns,
    check_header,
    folder_constants,
    parse_number,
)
from .precision import DEFAULT_REFERENCE_BITS, KUMAR_GAMMA_W, effective_parameters

__all__ = [
    "ARCHITECTURE_COLUMNS",
    "COLUMNS",
    "COLUMN_ALIASES",
    "CONSTANTS_FILE",
    "FLAG_COLUMNS",
    "MAX_CONSTANTS_BYTES",
    "MAX_FILE_BYTES",
    "RUN_COLUMNS",
    "SOURCE_COLUMN",
    "ScalingData",
    "dataset_path",
    "list_datasets",
    "load_scaling_csv",
    "scaling_dir",
]

MAX_FILE_BYTES = 50_000_000

Array = NDArray[np.float64]


def scaling_dir() -> Path:
    """Folder of the shipped scaling tables (``data/scaling``; see `roofline.data_dir`)."""
    return data_dir() / "scaling"


def _shipped_tables() -> dict[str, Path]:
    """Shipped tables by name: ``data/scaling/*.csv`` and one level of sub-folders
    (``gemstones/gemstones_cooldown_end.csv`` is ``'gemstones_cooldown_end'``)."""
    root = scaling_dir()
    paths = [*root.glob("*.csv"), *root.glob("*/*.csv")]
    return {path.stem: path for path in sorted(paths)}


def list_datasets() -> list[str]:
    """Names of the shipped tables (``chinchilla``, ``gemstones_cooldown_end``...), sorted."""
    return sorted(_shipped_tables())


def dataset_path(name_or_path: str | Path) -> Path:
    """A shipped table by name (``'chinchilla'``) or any path ending in ``.csv``."""
    path = Path(name_or_path)
    if path.suffix.lower() == ".csv":
        return path
    shipped = _shipped_tables().get(str(name_or_path))
    if shipped is None:
        accepted = ", ".join(list_datasets()) or "(none shipped)"
        raise InputError(
            f"unknown scaling dataset {str(name_or_path)!r}; accepted: {accepted} or a .csv path"
        )
    return shipped


@dataclass(frozen=True, eq=False)
class ScalingData:
    """Validated training runs: one float array per column, plus provenance.

    ``row_numbers`` locate each run in its source (file line numbers for CSV
    files, 1-based positions otherwise; ``row_label`` says which), and
    ``sha256`` identifies the source bytes (for arrays: their canonical bytes).
    """

    columns: Mapping[str, Array]
    origin: str
    sha256: str
    row_numbers: NDArray[np.int64]
    row_label: str = "row"

    def __post_init__(self) -> None:
        check_columns(self.columns, self.origin, self.row_numbers, self.row_label)

    @classmethod
    def from_columns(
        cls, columns: Mapping[str, ArrayLike], origin: str = "<arrays>"
    ) -> ScalingData:
        """Build from in-memory arrays (same column names and rules as the CSV)."""
        arrays = {}
        for given, values in columns.items():
            name = COLUMN_ALIASES.get(given, given)
            try:
                arrays[name] = np.atleast_1d(np.asarray(values, dtype=float))
            except (TypeError, ValueError):
                raise InputError(f"{origin}: column {name!r} must be numeric") from None
        lengths = {array.shape for array in arrays.values()}
        if len(lengths) > 1 or any(array.ndim != 1 for array in arrays.values()):
            raise InputError(f"{origin}: columns must be 1-D arrays of one common length")
        digest = hashlib.sha256()
        for name in sorted(arrays):
            digest.update(name.encode() + b"\0" + arrays[name].astype("<f8").tobytes())
        size = len(next(iter(arrays.values()))) if arrays else 0
        return cls(arrays, origin, digest.hexdigest(), np.arange(1, size + 1), "row")

    def __len__(self) -> int:
        return len(self.columns["loss"])

    @property
    def loss(self) -> Array:
        """Observed losses, nats per token."""
        return self.columns["loss"]

    def architecture(self) -> Architecture | None:
        """The runs' architectures when ``layers`` and ``hidden`` are columns, else None."""
        if "layers" not in self.columns or "hidden" not in self.columns:
            return None
        given = {name: self.columns[name] for name in ARCHITECTURE_COLUMNS if name in self.columns}
        flags = {name: self.columns[name] for name in FLAG_COLUMNS if name in self.columns}
        try:
            return Architecture(**given, **flags)
        except InputError as error:
            raise InputError(f"{self.origin}: {error}") from None

    def law_features(
        self,
        include_embeddings: bool = True,
        moe_parameters: str = "active",
        gamma_w: float = KUMAR_GAMMA_W,
        reference_bits: float = DEFAULT_REFERENCE_BITS,
    ) -> dict[str, Array]:
        """Feature arrays for a `LawForm`: ``params`` (N_eff), ``tokens``; when the
        columns give an architecture also width, depth, shape ratios, ``vocab`` and
        ``non_embedding_params``.

        N is the ``params`` column or the count from the architecture columns
        (``include_embeddings``, ``moe_parameters`` choose the convention); D is the
        ``tokens`` column or ``flop / (6 N)``; a ``weight_bits`` column turns N into
        ``N_eff`` (see `scaling_law.precision`).
        """
        arch = self.architecture()
        if "params" in self.columns:
            params = self.columns["params"]
            if not include_embeddings:
                if arch is None or "vocab" not in self.columns:
                    raise InputError(
                        f"{self.origin}: non-embedding parameter counts need layers, hidden and "
                        "vocab columns (or a constants.json giving vocab)"
                    )
                params = params - arch.counts().embedding
                if np.any(params <= 0):
                    raise InputError(f"{self.origin}: params minus embeddings must be > 0")
        else:
            params = arch.counts().select(include_embeddings, moe_parameters)  # type: ignore[union-attr]
        tokens = (
            self.columns["tokens"]
            if "tokens" in self.columns
            else self.columns["flop"] / (6 * params)
        )
        if "weight_bits" in self.columns:
            params = effective_parameters(
                params, self.columns["weight_bits"], gamma_w, reference_bits
            )
        features = {"params": params, "tokens": tokens}
        if SOURCE_COLUMN in self.columns:
            features[SOURCE_COLUMN] = self.columns[SOURCE_COLUMN]
        if arch is not None:
            features.update(
                width=np.asarray(arch.hidden, dtype=float),
                depth=np.asarray(arch.layers, dtype=float),
                aspect_ratio=arch.aspect_ratio,
                ffn_ratio=arch.ffn_ratio,
                gqa_ratio=arch.gqa_ratio,
                vocab=np.asarray(arch.vocab, dtype=float),
                non_embedding_params=arch.counts().select(False, moe_parameters),
            )
        return features

    def stated_dimensions(self) -> dict[str, Array]:
        """The architecture dimensions (`scaling_law.domain.ARCHITECTURE_DIMENSIONS`) the
        columns state, not defaults: ``gqa_ratio`` needs ``heads`` and ``kv_heads``,
        ``ffn_ratio`` needs ``ffn`` and ``hidden``, ``vocab`` and ``experts`` their columns."""
        columns = self.columns
        stated: dict[str, Array] = {}
        if "heads" in columns and "kv_heads" in columns:
            stated["gqa_ratio"] = columns["heads"] / columns["kv_heads"]
        if "ffn" in columns and "hidden" in columns:
            stated["ffn_ratio"] = columns["ffn"] / columns["hidden"]
        for name in ("vocab", "experts"):
            if name in columns:
                stated[name] = np.asarray(columns[name], float)
        return stated

    def run_groups(self) -> tuple[NDArray[np.int64], list[str]]:
        """Which training run (architecture) each row belongs to, and the runs' labels.

        A run is one architecture: rows sharing every architecture column (``'512x12'``
        = width x depth when those are the only ones that vary), or sharing ``params``
        when the table has no architecture columns. Returns ``(index per row, labels)``.
        """
        varying = [
            name
            for name in ARCHITECTURE_COLUMNS
            if name in self.columns
            and name not in ("hidden", "layers")
            and np.unique(self.columns[name]).size > 1
        ]
        if "hidden" in self.columns and "layers" in self.columns:
            names = ["hidden", "layers", *varying]
        else:
            names = ["params"]
        keys = np.stack([self.columns[name] for name in names], axis=1)
        unique, index = np.unique(keys, axis=0, return_inverse=True)
        labels = ["x".join(f"{value:g}" for value in row) for row in unique]
        return index.reshape(-1).astype(np.int64), labels


def load_scaling_csv(path: str | Path) -> ScalingData:
    """Read and validate a training-run table (see the module docstring for columns).

    Parameters
    ----------
    path
        A ``.csv`` file, or the name of a shipped table (``'chinchilla'``).
    """
    path = dataset_path(path)
    if not path.is_file():
        raise InputError(f"scaling data file not found: {path}")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise InputError(f"{path}: larger than {MAX_FILE_BYTES} bytes; refusing to read it")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text; expected a CSV file") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None or not any(cell.strip() for cell in header):
            raise InputError(f"{path}: empty file; expected a header row naming the columns")
        names = [COLUMN_ALIASES.get(cell.strip(), cell.strip()) for cell in header]
        check_header(names, path)
        values: list[list[float]] = []
        lines: list[int] = []
        for record in reader:
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(names):
                raise InputError(
                    f"{path}: line {reader.line_num}: expected {len(names)} fields, got {len(record)}"
                )
            values.append(
                [
                    parse_number(cell, name, path, reader.line_num)
                    for cell, name in zip(record, names, strict=True)
                ]
            )
            lines.append(reader.line_num)
    except csv.Error as error:
        raise InputError(f"{path}: line {reader.line_num}: malformed CSV ({error})") from None
    if not values:
        raise InputError(f"{path}: no data rows after the header")
    table = np.array(values, dtype=float)
    columns = {name: table[:, index] for index, name in enumerate(names)}
    for name, value in folder_constants(path).items():
        columns.setdefault(name, np.full(len(table), value))
    return ScalingData(columns, str(path), hashlib.sha256(raw).hexdigest(), np.array(lines), "line")
