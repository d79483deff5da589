"""Printing helpers shared by CLI commands: tables, JSON, human units.

pandas is imported only by `print_table`; `text_table` lays rows out the same way
without it, for commands that must start fast (``codesign predict``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: pandas' default ``display.precision`` (decimals before trailing zeros are trimmed).
FLOAT_DIGITS = 6
_DECIMAL_NUMBER = re.compile(r"^\s*[+-]?[0-9]+\.[0-9]*$")


def print_json(payload: Any) -> None:
    """Print ``payload`` as indented JSON (inf and NaN become null)."""
    print(json.dumps(_finite(payload), indent=2, sort_keys=False))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def print_table(rows: Sequence[Mapping[str, Any]] | pd.DataFrame) -> None:
    """Print rows (or a DataFrame) as an aligned text table, with pandas."""
    import pandas as pd

    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    print(frame.to_string(index=False))


def text_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """``columns`` of ``rows`` as pandas' ``DataFrame.to_string(index=False)`` lays them out.

    Each column holds one type (str, int, bool or float). Cells are right-justified to
    the widest cell or header (a numeric column's header is prefixed by a space) and
    joined by one space; a float column is printed with
    six decimals and its common trailing zeros trimmed (one kept), or in scientific
    notation when a value is below 1e-6 or above 1e6 and the fixed form is too wide.
    """
    cells = [_column_cells([row[name] for row in rows]) for name in columns]
    headers = [f" {name}" if rows and _is_numeric(rows[0][name]) else name for name in columns]
    widths = [
        max([len(header), *map(len, column)]) for header, column in zip(headers, cells, strict=True)
    ]
    lines = [" ".join(header.rjust(w) for header, w in zip(headers, widths, strict=True))]
    for index in range(len(rows)):
        lines.append(" ".join(c[index].rjust(w) for c, w in zip(cells, widths, strict=True)))
    return "\n".join(lines)


def _is_numeric(value: Any) -> bool:
    """pandas pads the header of a numeric (bool, int, float) column with one space."""
    return isinstance(value, bool | int | float)


def _column_cells(values: Sequence[Any]) -> list[str]:
    if not values or not all(isinstance(v, float) and not isinstance(v, bool) for v in values):
        return [str(v) for v in values]
    fixed = _trim_zeros([_fixed(v) for v in values])
    magnitudes = [abs(v) for v in values if math.isfinite(v)]
    tiny = any(0 < m < 10**-FLOAT_DIGITS for m in magnitudes)
    too_wide = max(map(len, fixed)) > FLOAT_DIGITS + 6 and any(m > 1e6 for m in magnitudes)
    if tiny or too_wide:
        return ["NaN" if math.isnan(v) else f"{v:.{FLOAT_DIGITS}e}" for v in values]
    return fixed


def _fixed(value: float) -> str:
    return "NaN" if math.isnan(value) else f"{value:.{FLOAT_DIGITS}f}"


def _trim_zeros(cells: list[str]) -> list[str]:
    """Drop trailing zeros equally from every decimal number, keeping one decimal."""
    numbers = [bool(_DECIMAL_NUMBER.match(cell)) for cell in cells]
    if not any(numbers):
        return cells
    while all(cell.endswith("0") for cell, number in zip(cells, numbers, strict=True) if number):
        cells = [cell[:-1] if number else cell for cell, number in zip(cells, numbers, strict=True)]
    return [
        cell + "0" if number and cell.endswith(".") else cell
        for cell, number in zip(cells, numbers, strict=True)
    ]


def print_key_values(pairs: Sequence[tuple[str, str]]) -> None:
    """Print ``label: value`` lines with aligned values."""
    width = max(len(label) for label, _ in pairs)
    for label, value in pairs:
        print(f"{label:<{width}}  {value}")


def human_bytes(value: float) -> str:
    """Decimal bytes, e.g. ``'80.0 GB (decimal)'``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} B"


def human_rate(value: float, unit: str) -> str:
    """Scale a per-second rate with SI prefixes, e.g. ``'3.35 TB/s'``."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def human_seconds(value: float) -> str:
    """Seconds shown in s, ms or us."""
    if value >= 1:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} us"
