"""The Ray backend on the session's local 2-CPU Ray instance (tests/conftest.py) gives the single-process grid's results."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from roofline.errors import InputError
from search.codesign import load_space, search_designs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_ray_designs_and_frontier_equal_the_local_grid(ray_local) -> None:
    space = load_space(EXAMPLES / "edge_quickstart.yaml")
    local = search_designs(space)
    # More chunks than CPUs, fewer than architectures: tasks finish out of order.
    distributed = search_designs(space, method="ray", chunks=5)
    assert ray_local.is_initialized()  # the running instance was used, not shut down
    assert distributed.method == "ray" and distributed.message == local.message
    pd.testing.assert_frame_equal(distributed.designs, local.designs)
    pd.testing.assert_frame_equal(distributed.frontier, local.frontier)
    assert distributed.evaluated_count == local.evaluated_count


def test_ray_chunk_frontiers_merge_to_the_same_frontier(ray_local) -> None:
    space = load_space(EXAMPLES / "edge_quickstart.yaml")
    local = search_designs(space, objectives="loss,tpot,memory")
    light = search_designs(space, objectives="loss,tpot,memory", method="ray", keep="frontier")
    pd.testing.assert_frame_equal(light.frontier, local.frontier)
    assert light.feasible_count == local.feasible_count


def test_without_ray_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(InputError, match=r"pip install '\.\[distributed\]'"):
        search_designs(load_space(EXAMPLES / "edge_quickstart.yaml"), method="ray")
