"""The one table of bounds as Markdown, for docs/bounds.md.

``python -m app.cli.bounds_doc > docs/snippets/bounds-table.md`` rewrites the snippet the
page includes; tests/test_inputs_issue25.py checks that the file is current. Rows come
from `roofline.CONFIG_BOUNDS`, `roofline.FLAG_BOUNDS` (and its per-command overrides),
`roofline.HARDWARE_BOUNDS`, `roofline.HARDWARE_KINDS`, and the scenario axes and scale factors of ``genz.axes``.
"""

from __future__ import annotations

from collections.abc import Iterable

from genz import ARCHITECTURE_AXES, AXES, SCALE_AXES
from roofline import (
    CONFIG_BOUNDS,
    FLAG_BOUNDS,
    FLAG_BOUNDS_BY_COMMAND,
    HARDWARE_BOUNDS,
    HARDWARE_KINDS,
    bounds_rows,
)

HEADER = ("name", "type", "unit", "range", "0 allowed", "meaning")


def _table(rows: Iterable[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join((f"`{row[0]}`", *row[1:])) + " |" for row in rows]
    return lines


def _axis_rows() -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for axis in [*AXES.values(), *ARCHITECTURE_AXES.values(), *SCALE_AXES.values()]:
        low, high = (
            (f"{axis.low:.0f}", f"{axis.high:.0f}")
            if axis.integer
            else (
                f"{axis.low:g}",
                f"{axis.high:g}",
            )
        )
        zero = "yes" if axis.low <= 0 <= axis.high else "no"
        kind = "integer" if axis.integer else "number"
        rows.append((axis.flag, kind, axis.unit, f"[{low}, {high}]", zero, axis.help))
    return rows


def bounds_markdown() -> str:
    """Every bound as Markdown tables (config.json, hardware, scenario axes, flags)."""
    overrides = [
        (f"{flag} ({command})", *row[1:])
        for (command, flag), bound in FLAG_BOUNDS_BY_COMMAND.items()
        for row in bounds_rows({flag: bound})
    ]
    lines = ["### config.json keys", "", *_table(bounds_rows(CONFIG_BOUNDS)), ""]
    lines += ["### Hardware files", ""]
    lines += [f"`kind` is one of {', '.join(f'`{kind}`' for kind in HARDWARE_KINDS)}.", ""]
    lines += ["Numbers, in the file's units (`peak_tflops` per dtype, `memory.*` per level):", ""]
    lines += [*_table(bounds_rows(HARDWARE_BOUNDS)), ""]
    lines += ["### Scenario axes and what-if scale factors (`genz.axes`)", ""]
    lines += [*_table(_axis_rows()), ""]
    lines += ["### Other numeric flags", "", *_table(bounds_rows(FLAG_BOUNDS)), ""]
    lines += ["### Flags of one command (their own range or meaning)", "", *_table(overrides)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(bounds_markdown(), end="")
