"""Published perplexities of models before and after post-training weight quantisation.

``data/scaling/ptq/published/ptq_published.csv`` (sources and caveats in
``data/scaling/ptq/README.md``): one row per (model, quantisation type) with the model's
parameter count N, training tokens D, effective bits per weight, its 16-bit perplexity
and its quantised perplexity on wikitext-2. The PTQ degradation in nats per token is

``delta = ln(PPL_quant) - ln(PPL_16)``

(perplexity is ``exp`` of the mean loss per token, so the log ratio is the loss increase).
Every row must name its source and the date it was read; rows without them are refused.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from roofline import InputError, load_user_document, read_user_text

from .data import scaling_dir
from .ptq import PtqConstants

Array = NDArray[np.float64]
MAX_PTQ_FILE_BYTES = 5_000_000
MAX_CONSTANTS_BYTES = 100_000
PTQ_COLUMNS = (
    "model",
    "family",
    "params",
    "train_tokens",
    "quant_type",
    "bits_per_weight",
    "bits_basis",
    "ppl_16",
    "ppl_quant",
    "source",
    "source_table",
    "date_read",
)
_NUMERIC = ("params", "train_tokens", "bits_per_weight", "ppl_16", "ppl_quant")
_TEXT = ("model", "family", "quant_type", "bits_basis", "source", "source_table", "date_read")


@dataclass(frozen=True, eq=False)
class PtqRows:
    """Validated published PTQ rows, one entry per row in every array.

    ``params`` N, ``tokens`` training tokens D, ``bits`` effective bits per weight,
    ``ppl_16`` / ``ppl_quant`` perplexities (exp of nats per token); text columns as read.
    """

    model: tuple[str, ...]
    family: tuple[str, ...]
    quant_type: tuple[str, ...]
    params: Array
    tokens: Array
    bits: Array
    ppl_16: Array
    ppl_quant: Array
    source: tuple[str, ...]
    source_table: tuple[str, ...]
    date_read: tuple[str, ...]
    path: Path

    @property
    def delta(self) -> Array:
        """Loss added by the quantisation, nats per token: ``ln(PPL_q / PPL_16)``."""
        return np.log(self.ppl_quant / self.ppl_16)

    def __len__(self) -> int:
        return len(self.model)

    def take(self, rows: NDArray[np.bool_] | NDArray[np.int64]) -> PtqRows:
        """The rows selected by a mask or index array."""
        index = np.arange(len(self))[rows]

        def pick(values: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(values[i] for i in index)

        return PtqRows(
            pick(self.model),
            pick(self.family),
            pick(self.quant_type),
            self.params[index],
            self.tokens[index],
            self.bits[index],
            self.ppl_16[index],
            self.ppl_quant[index],
            pick(self.source),
            pick(self.source_table),
            pick(self.date_read),
            self.path,
        )


def ptq_published_path() -> Path:
    """The shipped table, ``data/scaling/ptq/published/ptq_published.csv``."""
    return scaling_dir() / "ptq" / "published" / "ptq_published.csv"


def ptq_overtrained_path() -> Path:
    """The shipped table of over-trained models (Llama-3.x, Gemma-2; issue #27),
    ``data/scaling/ptq/published/ptq_overtrained.csv`` (written by
    ``python benchmarks/ptq_transcribe.py``)."""
    return scaling_dir() / "ptq" / "published" / "ptq_overtrained.csv"


def concat_rows(*tables: PtqRows) -> PtqRows:
    """The rows of every table, in order (``path`` is the first table's)."""
    if not tables:
        raise InputError("concat_rows needs at least one PTQ table")

    def text(name: str) -> tuple[str, ...]:
        return tuple(value for table in tables for value in getattr(table, name))

    def numbers(name: str) -> Array:
        return np.concatenate([getattr(table, name) for table in tables])

    return PtqRows(
        text("model"),
        text("family"),
        text("quant_type"),
        numbers("params"),
        numbers("tokens"),
        numbers("bits"),
        numbers("ppl_16"),
        numbers("ppl_quant"),
        text("source"),
        text("source_table"),
        text("date_read"),
        tables[0].path,
    )


def load_all_ptq_rows() -> PtqRows:
    """Both shipped tables: `ptq_published_path` then `ptq_overtrained_path`. One model
    must have one (N, D) across them (checked)."""
    rows = concat_rows(load_ptq_rows(ptq_published_path()), load_ptq_rows(ptq_overtrained_path()))
    for model in dict.fromkeys(rows.model):
        mine = np.array([name == model for name in rows.model])
        if np.ptp(rows.params[mine]) > 0 or np.ptp(rows.tokens[mine]) > 0:
            raise InputError(f"PTQ tables: model {model!r} has more than one params/tokens value")
    return rows


def load_ptq_rows(path: str | Path | None = None) -> PtqRows:
    """Read and validate a PTQ table (default: the shipped one).

    Raises `InputError` naming the line and column for a missing column, a missing
    source or date, a non-positive number, or ``bits_per_weight >= 16``.
    """
    source, text = read_user_text(
        path or ptq_published_path(), kind="PTQ table", max_bytes=MAX_PTQ_FILE_BYTES
    )
    reader = csv.DictReader(io.StringIO(text))
    missing = [name for name in PTQ_COLUMNS if name not in (reader.fieldnames or ())]
    if missing:
        raise InputError(
            f"{source}: missing column {missing[0]!r}; needed: {', '.join(PTQ_COLUMNS)}"
        )
    numbers: dict[str, list[float]] = {name: [] for name in _NUMERIC}
    texts: dict[str, list[str]] = {name: [] for name in _TEXT}
    for line, row in enumerate(reader, start=2):
        for name in _TEXT:
            value = (row.get(name) or "").strip()
            if not value:
                raise InputError(f"{source} line {line}: {name} is empty (every row needs it)")
            texts[name].append(value)
        for name in _NUMERIC:
            try:
                value_f = float(row.get(name) or "")
            except ValueError:
                raise InputError(f"{source} line {line}: {name} must be a number") from None
            if not (np.isfinite(value_f) and value_f > 0):
                raise InputError(f"{source} line {line}: {name} must be a finite number > 0")
            numbers[name].append(value_f)
        if numbers["bits_per_weight"][-1] >= 16:
            raise InputError(f"{source} line {line}: bits_per_weight must be < 16 (quantised)")
    if not texts["model"]:
        raise InputError(f"{source}: no rows")
    return PtqRows(
        tuple(texts["model"]),
        tuple(texts["family"]),
        tuple(texts["quant_type"]),
        np.array(numbers["params"]),
        np.array(numbers["train_tokens"]),
        np.array(numbers["bits_per_weight"]),
        np.array(numbers["ppl_16"]),
        np.array(numbers["ppl_quant"]),
        tuple(texts["source"]),
        tuple(texts["source_table"]),
        tuple(texts["date_read"]),
        source,
    )


def ptq_fitted_path() -> Path:
    """The shipped refit, ``data/scaling/ptq/ptq_fitted.json`` (written by
    ``python benchmarks/ptq_fit.py --write data/scaling/ptq/ptq_fitted.json``)."""
    return scaling_dir() / "ptq" / "ptq_fitted.json"


def load_ptq_constants(path: str | Path | None = None) -> PtqConstants:
    """`PtqConstants` from a JSON ``{"constants": {c_t, gamma_d, gamma_n, gamma_post,
    source, name}, "command": ...}`` (default: the shipped refit)."""
    document = load_user_document(
        path or ptq_fitted_path(), kind="PTQ constants file", max_bytes=MAX_CONSTANTS_BYTES
    )
    section = document.get("constants") if isinstance(document, dict) else None
    if not isinstance(section, dict):
        raise InputError("PTQ constants file: needs a 'constants' object")
    return _constants(section, "PTQ constants file: constants", document.get("command"))


def ptq_ensemble_path() -> Path:
    """The shipped PTQ-constant ensemble, ``data/scaling/ptq/ptq_ensemble.json`` (written by
    ``python benchmarks/ptq_fit.py --ensemble data/scaling/ptq/ptq_ensemble.json``)."""
    return scaling_dir() / "ptq" / "ptq_ensemble.json"


def load_ptq_ensemble(path: str | Path | None = None) -> tuple[PtqConstants, ...]:
    """Equally weighted sets of PTQ constants, ``{"members": [{c_t, gamma_d, gamma_n,
    gamma_post, source, name}, ...], "command": ...}`` (default: the shipped ensemble:
    Kumar et al.'s, the refit to every published row and one refit leaving each model out).
    Sampling them is how the co-design's joint interval carries the PTQ term's uncertainty."""
    document = load_user_document(
        path or ptq_ensemble_path(), kind="PTQ ensemble file", max_bytes=MAX_CONSTANTS_BYTES
    )
    members = document.get("members") if isinstance(document, dict) else None
    if not isinstance(members, list) or not members or len(members) > 1000:
        raise InputError("PTQ ensemble file: needs 'members', a list of 1 to 1000 constant sets")
    command = document.get("command")
    out = []
    for index, member in enumerate(members):
        if not isinstance(member, dict):
            raise InputError(f"PTQ ensemble file: members[{index}] must be an object")
        out.append(_constants(member, f"PTQ ensemble file: members[{index}]", command))
    return tuple(out)


def _constants(section: dict, where: str, command: object) -> PtqConstants:
    values: dict[str, float] = {}
    for name in ("c_t", "gamma_d", "gamma_n", "gamma_post"):
        value = section.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"{where}.{name} must be a number")
        values[name] = float(value)
    texts = {name: section.get(name) for name in ("source", "name")}
    for name, text in texts.items():
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}.{name} must be a non-empty string")
    source = str(texts["source"]) + (f" (produced by: {command})" if command else "")
    return PtqConstants(**values, source=source, name=str(texts["name"]))
