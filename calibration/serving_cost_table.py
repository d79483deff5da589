"""The shipped table of serving-stack costs per version family
(``data/runtimes/serving_costs/families.yaml``): written by
``benchmarks/serving_costs.py --write``, read by ``codesign serve --engine-version``.

Every family of `FAMILIES` has one entry: its per-request and per-output-chunk cost
(seconds) fitted on **every** published serving row (`held_out_costs` with no source
held out: the family's own rows, else its engine's other lines, else, the request cost
only, every row; each basis needing `MIN_ROWS` numbers, 0 where none has). These are
in-sample values for use; the accuracy quoted for them is the out-of-source one of
``benchmarks/serving_costs.py`` (docs/serving.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from roofline import InputError, data_dir

from .serving_costs import BASES, FAMILIES, Residual, Stack, held_out_costs

#: Where the table ships, under the data folder.
TABLE_PARTS = ("runtimes", "serving_costs", "families.yaml")
#: Keys of one family entry, in the order they are written.
ENTRY_KEYS = (
    "engine",
    "family",
    "order",
    "request_overhead_s",
    "chunk_overhead_s",
    "basis",
    "ttft_rows",
    "tpot_rows",
)
#: Significant digits the costs are written with (stable across SIMD kernels).
DIGITS = 4


@dataclass(frozen=True)
class FamilyCosts:
    """One family's fitted costs: per request and per output chunk per sequence-step,
    seconds; ``basis``: which rows each was fitted on; the numbers behind each."""

    stack: Stack
    request_s: float
    chunk_s: float
    basis: str
    ttft_rows: int
    tpot_rows: int


def serving_costs_path() -> Path:
    """The shipped table (``CODESIGN_DATA_DIR`` overrides the data folder)."""
    return data_dir().joinpath(*TABLE_PARTS)


def family_stacks() -> list[Stack]:
    """Every version family of `FAMILIES`, once, in its order there."""
    found: list[Stack] = []
    for _, engine, family, order, _ in FAMILIES:
        stack = Stack(engine, family, order)
        if stack not in found:
            found.append(stack)
    return found


def fit_table(residuals: Sequence[Residual]) -> list[FamilyCosts]:
    """Every family's costs fitted on all ``residuals`` (module docstring)."""
    table = []
    for stack in family_stacks():
        costs = held_out_costs(residuals, "", stack)
        table.append(
            FamilyCosts(
                stack,
                _rounded(costs.request_s),
                _rounded(costs.chunk_s),
                costs.basis.replace(BASES[2], "every row"),
                costs.ttft_rows,
                costs.tpot_rows,
            )
        )
    return table


def _rounded(seconds: float) -> float:
    return float(f"{seconds:.{DIGITS}g}")


def dump_table(table: Sequence[FamilyCosts], command: str, seeds: int) -> str:
    """The YAML text of ``table`` with its provenance (``calibrated_from``: the command
    that writes it; ``seeds``: draws per random workload of the simulations)."""
    document: dict[str, Any] = {
        "calibrated_from": command,
        "seeds": seeds,
        "note": "in sample (every serving row); the out-of-source accuracy is "
        "benchmarks/serving_costs.py's (docs/serving.md)",
        "families": [
            {
                "engine": entry.stack.engine,
                "family": entry.stack.family,
                "order": entry.stack.order,
                "request_overhead_s": entry.request_s,
                "chunk_overhead_s": entry.chunk_s,
                "basis": entry.basis,
                "ttft_rows": entry.ttft_rows,
                "tpot_rows": entry.tpot_rows,
            }
            for entry in table
        ],
    }
    return yaml.safe_dump(document, sort_keys=False, width=100)


def load_serving_costs(path: Path | None = None) -> dict[Stack, FamilyCosts]:
    """The table at ``path`` (default: the shipped one) by stack; `InputError` (one
    line, naming the file and the field) for a missing or malformed file or a family
    not in `FAMILIES`."""
    path = serving_costs_path() if path is None else path
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InputError(f"serving-cost table {path}: cannot read ({error.strerror})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"serving-cost table {path}: not valid YAML{where}") from None
    if not isinstance(document, dict) or not isinstance(document.get("calibrated_from"), str):
        raise InputError(f"serving-cost table {path}: needs a calibrated_from command")
    entries = document.get("families")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"serving-cost table {path}: needs a non-empty families list")
    known = set(family_stacks())
    table: dict[Stack, FamilyCosts] = {}
    for index, entry in enumerate(entries):
        costs = _entry(entry, f"serving-cost table {path}: families[{index}]")
        if costs.stack not in known:
            raise InputError(
                f"serving-cost table {path}: families[{index}] {costs.stack} with order "
                f"{costs.stack.order:g} is not a version family of calibration.FAMILIES"
            )
        table[costs.stack] = costs
    return table


def _entry(entry: object, where: str) -> FamilyCosts:
    if not isinstance(entry, dict) or set(entry) != set(ENTRY_KEYS):
        raise InputError(f"{where}: needs exactly the keys {', '.join(ENTRY_KEYS)}")
    for key in ("engine", "family", "basis"):
        if not isinstance(entry[key], str):
            raise InputError(f"{where}.{key} must be text, got {entry[key]!r}")
    for key in ("request_overhead_s", "chunk_overhead_s"):
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise InputError(f"{where}.{key} must be seconds in [0, 1), got {value!r}")
    for key in ("ttft_rows", "tpot_rows"):
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(f"{where}.{key} must be a count >= 0, got {value!r}")
    order = entry["order"]
    if isinstance(order, bool) or not isinstance(order, int | float):
        raise InputError(f"{where}.order must be a release year, got {order!r}")
    return FamilyCosts(
        Stack(entry["engine"], entry["family"], float(order)),
        float(entry["request_overhead_s"]),
        float(entry["chunk_overhead_s"]),
        entry["basis"],
        entry["ttft_rows"],
        entry["tpot_rows"],
    )
