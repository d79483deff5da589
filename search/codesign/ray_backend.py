"""Ray backend of the grid search (``pip install .[distributed]``).

The architectures of the grid are split into chunks; each chunk is one Ray task
that evaluates its architectures against every hardware, precision, mesh and
workload point (`evaluate_grid_chunk`, the same code as the local grid) and
returns its feasible designs (or, with ``keep='frontier'``, its own frontier: the
frontier of the union is the frontier of the chunk frontiers). Chunks are merged in
order, so the designs, their order and the frontier equal the local grid's.

Uses the running Ray instance if there is one (``ray.init(address=...)`` first to
use a cluster); otherwise starts a local one and shuts it down afterwards.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

from ..ray_tasks import gather, import_ray, ray_running
from .evaluate import (
    Outcome,
    Plan,
    Points,
    architecture_index,
    evaluate_grid_chunk,
    merge,
    rest_points,
)

#: Default tasks per CPU Ray reports (a few per CPU balance uneven architectures).
TASKS_PER_CPU = 4


def _chunk(plan: Plan, architectures: NDArray[np.int32], rest: Points) -> Outcome:
    return evaluate_grid_chunk(plan, architectures, rest)


def run_ray(plan: Plan, chunks: int | None = None, progress: bool = False) -> Outcome:
    """The grid of ``plan.space`` as Ray tasks, merged (see module doc)."""
    ray = import_ray("method 'ray'")
    if chunks is not None and (
        isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1
    ):
        raise InputError(f"chunks must be an integer >= 1, got {chunks!r}")
    architectures, _ = architecture_index(plan.space)
    rest = rest_points(plan.space)
    with ray_running(ray):
        count = chunks or TASKS_PER_CPU * max(1, int(ray.available_resources().get("CPU", 1)))
        parts = [p for p in np.array_split(architectures, max(1, min(count, len(architectures))))]
        task = ray.remote(_chunk)
        plan_ref, rest_ref = ray.put(plan), ray.put(rest)
        futures = [task.remote(plan_ref, part, rest_ref) for part in parts]
        outcomes = gather(ray, futures, "co-design ray", "chunk", progress)
    return merge(plan, outcomes)
