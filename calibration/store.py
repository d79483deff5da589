"""The measurement store: every shipped measured row with who published it and how.

`load_store` reads the measurement files listed in ``data/validation/store/sources.yaml``
(each in the schema of `calibration.measurements`) and tags each row with its
`SourceInfo`: the lab or project that published it (``source_id``, the unit of
leave-one-source-out validation), the harness that measured it, the serving stack's
version as published and the date. The table is data: a row no listed source matches is
refused, so no shipped row goes without a publisher. A sidecar ``<file>_meta.csv`` next
to a measurement file (columns ``line, source_id, harness, runtime_version, date``) tags
that file's rows line by line instead.

Standard library only (no numpy): the CLI lists sources without loading the fitting stack.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline import InputError, data_dir, load_user_document, read_user_text

from .measurements import HARNESSES, Measurement, load_measurements

#: The source table, relative to the data folder.
SOURCES_FILE = Path("validation") / "store" / "sources.yaml"
_SOURCE_KEYS = frozenset(
    {"id", "file", "match", "harness", "harness_by_runtime", "runtime_version", "date", "url"}
)
_META_COLUMNS = ("line", "source_id", "harness", "runtime_version", "date")


@dataclass(frozen=True)
class SourceInfo:
    """Who published a row and how it was measured."""

    source_id: str
    harness: str
    runtime_version: str
    date: str
    url: str = ""


@dataclass(frozen=True)
class StoredRow:
    """One measured row and its source."""

    row: Measurement
    info: SourceInfo
    file: str


@dataclass(frozen=True)
class _Rule:
    info: SourceInfo
    file: str | None
    match: str | None
    harness_by_runtime: Mapping[str, str]

    def applies(self, file: str, row: Measurement) -> bool:
        if self.file is not None:
            return file == self.file
        return self.match is not None and self.match in row.source

    def info_for(self, row: Measurement) -> SourceInfo:
        harness = self.harness_by_runtime.get(row.runtime, self.info.harness)
        if harness == self.info.harness:
            return self.info
        return SourceInfo(
            self.info.source_id, harness, self.info.runtime_version, self.info.date, self.info.url
        )


def load_store(root: Path | None = None) -> tuple[StoredRow, ...]:
    """Every row of the files the source table lists (missing optional files skipped),
    each with its `SourceInfo`; ``root`` is the data folder (default `roofline.data_dir`).

    Raises `InputError` naming the file and line of a row no source matches, and for a
    malformed source table."""
    base = root or data_dir()
    files, rules = _source_table(base)
    stored: list[StoredRow] = []
    for name in files:
        path = base / "validation" / name
        if not path.is_file():
            continue
        rows = load_measurements(path)
        for line, (row, info) in enumerate(
            zip(rows, _sources(name, path, rows, rules), strict=True), start=2
        ):
            if info is None:
                raise InputError(
                    f"{name}:{line}: no source in {SOURCES_FILE} matches source {row.source!r}"
                )
            stored.append(StoredRow(row, info, name))
    return tuple(stored)


def load_tagged_measurements(path: str | Path) -> tuple[Measurement, ...]:
    """`load_measurements`, with the empty ``harness``, ``runtime_version`` and ``date``
    of a shipped store file's rows filled from its source table (other files as read)."""
    rows = load_measurements(path)
    base = data_dir()
    try:
        name = Path(path).resolve().relative_to((base / "validation").resolve()).as_posix()
    except ValueError:
        return rows
    files, rules = _source_table(base)
    if name not in files:
        return rows
    tagged = [
        row
        if info is None
        else dataclasses.replace(
            row, harness=info.harness, runtime_version=info.runtime_version, date=info.date
        )
        for row, info in zip(rows, _sources(name, Path(path), rows, rules), strict=True)
    ]
    return tuple(tagged)


def source_counts(stored: Sequence[StoredRow]) -> dict[str, int]:
    """Rows per source id, largest first."""
    counts: dict[str, int] = {}
    for item in stored:
        counts[item.info.source_id] = counts.get(item.info.source_id, 0) + 1
    return dict(sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])))


def _source_table(base: Path) -> tuple[list[str], list[_Rule]]:
    """The files and the source rules of the source table under ``base``."""
    table = load_user_document(base / SOURCES_FILE, kind="source table", max_bytes=1_000_000)
    if not isinstance(table, dict) or set(table) - {"files", "sources"}:
        raise InputError(f"{SOURCES_FILE}: expected the keys 'files' and 'sources'")
    rules = [_rule(entry, index) for index, entry in enumerate(table.get("sources") or [])]
    return [str(name) for name in table.get("files") or []], rules


def _sources(
    name: str, path: Path, rows: Sequence[Measurement], rules: Sequence[_Rule]
) -> list[SourceInfo | None]:
    """Each row's source: its sidecar line, else the first matching rule (None: none),
    with the row's own provenance columns where it fills them."""
    meta = _sidecar(path)
    found: list[SourceInfo | None] = []
    for line, row in enumerate(rows, start=2):
        info = meta.get(line) or _match(rules, name, row)
        found.append(None if info is None else _own_columns(info, row))
    return found


def _own_columns(info: SourceInfo, row: Measurement) -> SourceInfo:
    """``info`` with the row's own ``harness``, ``runtime_version`` and ``date`` where set."""
    return SourceInfo(
        info.source_id,
        row.harness or info.harness,
        row.runtime_version or info.runtime_version,
        row.date or info.date,
        info.url,
    )


def _match(rules: Sequence[_Rule], file: str, row: Measurement) -> SourceInfo | None:
    for rule in rules:
        if rule.applies(file, row):
            return rule.info_for(row)
    return None


def _rule(entry: Any, index: int) -> _Rule:
    where = f"{SOURCES_FILE}: sources[{index}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where} must be a mapping")
    unknown = set(entry) - _SOURCE_KEYS
    if unknown:
        raise InputError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    if not entry.get("id") or ("file" in entry) == ("match" in entry):
        raise InputError(f"{where}: needs an id and exactly one of 'file' or 'match'")
    by_runtime = entry.get("harness_by_runtime") or {}
    for harness in [entry.get("harness"), *by_runtime.values()]:
        if harness not in HARNESSES:
            raise InputError(f"{where}: harness must be one of {', '.join(HARNESSES)}")
    info = SourceInfo(
        source_id=str(entry["id"]),
        harness=str(entry["harness"]),
        runtime_version=str(entry.get("runtime_version") or ""),
        date=str(entry.get("date") or ""),
        url=str(entry.get("url") or ""),
    )
    return _Rule(info, entry.get("file"), entry.get("match"), dict(by_runtime))


def _sidecar(path: Path) -> dict[int, SourceInfo]:
    """Line -> source of a ``<file>_meta.csv`` beside ``path`` (empty when absent)."""
    meta = path.with_name(f"{path.stem}_meta.csv")
    if not meta.is_file():
        return {}
    _, text = read_user_text(meta, kind="source sidecar", max_bytes=5_000_000)
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    if tuple(reader.fieldnames or ())[: len(_META_COLUMNS)] != _META_COLUMNS:
        raise InputError(f"{meta.name}:1: expected the columns {', '.join(_META_COLUMNS)}")
    found: dict[int, SourceInfo] = {}
    for record in reader:
        harness = record["harness"].strip()
        if harness not in HARNESSES:
            raise InputError(
                f"{meta.name}:{reader.line_num}: harness must be one of {', '.join(HARNESSES)}"
            )
        found[int(record["line"])] = SourceInfo(
            record["source_id"].strip(),
            harness,
            record["runtime_version"].strip(),
            record["date"].strip(),
        )
    return found
