"""Parameter sweeps of the simulator (rates x configurations), one row per point, run
in this process or as Ray tasks (``pip install .[distributed]``).

Every point is simulated by the same pure function of its inputs (workloads are drawn
with a fixed seed), so the serial and the Ray sweep give identical rows, in the order
of the points. Ray: the running instance is used if there is one (``ray.init(address=
...)`` first for a cluster); otherwise a local one is started and shut down afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tqdm import tqdm

from roofline import InputError

from ..ray_tasks import gather, import_ray, ray_running
from .metrics import ServingResult

#: Sweep back ends.
PARALLEL = ("serial", "ray")
#: Columns of a sweep row (seconds, tokens/s, requests/s).
SWEEP_COLUMNS = (
    "rate",
    "policy",
    "ttft_s_p50",
    "ttft_s_p99",
    "tpot_s_p50",
    "tpot_s_p99",
    "throughput_tokens_per_s",
    "goodput_requests_per_s",
    "sustainable",
)

Point = TypeVar("Point")
Row = dict[str, Any]


def sweep_row(rate: float, policy: str, result: ServingResult) -> Row:
    """The sweep columns of one run (`SWEEP_COLUMNS`)."""
    summary = result.summary
    return {
        "rate": float(rate),
        "policy": policy,
        **{name: summary[name] for name in SWEEP_COLUMNS[2:-1]},
        "sustainable": result.sustainable,
    }


def _evaluate(evaluate: Callable[[Point], Row], point: Point) -> Row:
    """One Ray task: ``evaluate(point)``."""
    return evaluate(point)


def run_sweep(
    evaluate: Callable[[Point], Row],
    points: Sequence[Point],
    parallel: str = "serial",
    progress: bool = False,
) -> list[Row]:
    """``evaluate`` at every point, in order: here (``serial``) or one Ray task per
    point (``ray``). ``evaluate`` must be picklable for Ray (a module-level function or
    a `functools.partial` of one)."""
    if parallel not in PARALLEL:
        raise InputError(f"parallel must be one of {', '.join(PARALLEL)}, got {parallel!r}")
    if parallel == "serial":
        bar = tqdm(points, desc="sweep", unit="point", disable=not progress, leave=False)
        return [evaluate(point) for point in bar]
    ray = import_ray("--parallel ray")
    with ray_running(ray):
        task: Any = ray.remote(_evaluate)
        shipped = ray.put(evaluate)
        futures = [task.remote(shipped, point) for point in points]
        rows: list[Row] = gather(ray, futures, "sweep ray", "point", progress)
    return rows
