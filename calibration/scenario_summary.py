"""Per-source error table of a measurement file predicted row by row (``predict --scenarios``).

`source_summary` groups the scored rows of `calibration.predict_scenarios` by their
source (`source_label` of the ``source`` column; rows without one form one group) and,
per measured metric, gives the rows, the mean absolute and the mean signed error of the
runtime's predictions beside those of physics alone (``ideal``), so a user sees at once
whether a profile helps on their data. Errors are ``100 (predicted - measured) /
measured`` %, the columns ``*_error_pct`` of the rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

#: (error column, label) of each scored metric.
SCORED = (
    ("e2e_error_pct", "end-to-end"),
    ("ttft_error_pct", "TTFT"),
    ("tpot_error_pct", "TPOT"),
    ("throughput_error_pct", "throughput"),
)
_LINE = re.compile(r":\d+$")


def source_label(source: str) -> str:
    """The publisher part of a ``source`` cell: the first word in its parentheses when
    there are any (``'runs.csv:7 (github:org/repo README.md@abc (table))'`` ->
    ``'github:org/repo'``), else the cell without a trailing ``:line``; ``'(no
    source)'`` if empty."""
    text = source.strip()
    if not text:
        return "(no source)"
    if "(" in text:
        words = text.split("(", 1)[1].replace(")", " ").split()
        if words:
            return words[0]
    return _LINE.sub("", text)


def source_summary(
    results: Sequence[Mapping[str, Any]], ideal: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One mapping per (source, metric) with scored rows: ``source``, ``metric``, ``rows``,
    ``mape_pct``, ``bias_pct`` (the runtime's), ``ideal_mape_pct``, ``ideal_bias_pct``.
    ``results`` and ``ideal`` are the same rows predicted with the file's runtimes and
    with ``ideal``, in the same order."""
    groups: dict[str, list[int]] = {}
    for index, result in enumerate(results):
        groups.setdefault(source_label(str(result.get("source") or "")), []).append(index)
    table = []
    for source, indices in groups.items():
        for column, label in SCORED:
            pairs = [
                (results[i][column], ideal[i][column])
                for i in indices
                if _number(results[i].get(column)) and _number(ideal[i].get(column))
            ]
            if not pairs:
                continue
            own, physics = [p[0] for p in pairs], [p[1] for p in pairs]
            table.append(
                {
                    "source": source,
                    "metric": label,
                    "rows": len(pairs),
                    "mape_pct": sum(abs(e) for e in own) / len(own),
                    "bias_pct": sum(own) / len(own),
                    "ideal_mape_pct": sum(abs(e) for e in physics) / len(physics),
                    "ideal_bias_pct": sum(physics) / len(physics),
                }
            )
    return table


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
