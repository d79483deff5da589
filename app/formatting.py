"""Printing helpers shared by CLI commands: tables, JSON, human units."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd


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
    """Print rows as an aligned text table."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    print(frame.to_string(index=False))


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
