"""Every message of the table of bounds, pinned: folding repeated rows into one
definition per quantity (roofline/bounds.py) must not change what a user reads.

For every entry of `CONFIG_BOUNDS`, `FLAG_BOUNDS`, `FLAG_BOUNDS_BY_COMMAND` and
`HARDWARE_BOUNDS`, the pinned record holds the error for a value of the wrong type, for
one below and one above the range, and the docs row. An entry added later is not in the
record (it is new, not changed); an entry in the record must render exactly as pinned.
Re-record (only for an intended change, said in the commit) with
``python tests/test_bound_messages.py --write``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import roofline.bounds as bounds
from roofline import InputError

PINNED = Path(__file__).with_name("bound_messages.json")


def _message(bound: bounds.ValueBound, value: object) -> str:
    try:
        bound.check(value)
    except InputError as error:
        return str(error)
    return "accepted"


def _render(bound: bounds.ValueBound) -> list[object]:
    return [
        _message(bound, "x"),
        _message(bound, bound.low - 1),
        _message(bound, bound.high * 2 + 1),
        _message(bound, bound.low),
        _message(bound, bound.high),
        list(bounds.bounds_rows({bound.name: bound})[0]),
    ]


def record() -> dict[str, list[object]]:
    """Every entry's rendered messages, keyed ``table:name`` (``command flag`` for
    per-command entries)."""
    tables = {
        "config": bounds.CONFIG_BOUNDS,
        "flag": bounds.FLAG_BOUNDS,
        "hardware": getattr(bounds, "HARDWARE_BOUNDS", {}),
    }
    rendered = {
        f"{table}:{name}": _render(bound)
        for table, entries in tables.items()
        for name, bound in entries.items()
    }
    rendered |= {
        f"command:{command} {flag}": _render(bound)
        for (command, flag), bound in bounds.FLAG_BOUNDS_BY_COMMAND.items()
    }
    return rendered


PINNED_RECORD = json.loads(PINNED.read_text()) if PINNED.is_file() else {}


@pytest.mark.parametrize("key", sorted(PINNED_RECORD))
def test_every_pinned_message_renders_as_before(key):
    assert record().get(key) == PINNED_RECORD[key], key


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    PINNED.write_text(json.dumps(record(), indent=0, sort_keys=True) + "\n")
