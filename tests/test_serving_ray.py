"""Serving sweeps on the session's local Ray instance (tests/conftest.py) give the serial sweep's rows."""

from __future__ import annotations

import contextlib
import io
import json
import sys

import pytest

from app.cli import main
from roofline import InputError
from search.serving import run_sweep

SWEEP = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--duration", "20",
         "--sweep-rates", "3,6", "--sweep-policies", "continuous,chunked", "--no-progress",
         "--json"]  # fmt: skip


def _rows(*extra: str) -> list[dict[str, object]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*SWEEP, *extra]) == 0
    return json.loads(out.getvalue())


def test_ray_sweep_equals_the_serial_sweep(ray_local) -> None:
    serial = _rows()
    distributed = _rows("--parallel", "ray")
    assert ray_local.is_initialized()  # the running instance was used, not shut down
    assert distributed == serial
    assert [(row["rate"], row["policy"]) for row in serial] == [
        (3.0, "continuous"), (6.0, "continuous"), (3.0, "chunked"), (6.0, "chunked"),
    ]  # fmt: skip


def test_without_ray_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(InputError, match=r"pip install '\.\[distributed\]'"):
        run_sweep(len, [[1]], parallel="ray")
