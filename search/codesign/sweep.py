"""Joint hardware-model co-design search: one entry point, `search_designs`.

Evaluates a `DesignSpace` (hardware x architecture x precision x parallelism x
workload) with genz (TTFT, TPOT, throughput, memory, the capacity wall) and a
fitted loss law (loss, perplexity), keeps the designs that meet the constraints
(the feasible region) and returns their Pareto frontier over 1 to 4 objectives.

Methods (scipy-style ``method=``):

- ``'grid'``: every point of the space, in this process, with a progress bar.
- ``'sample'``: Latin-hypercube (or random) samples, then rounds evaluating the
  axis neighbours of the frontier (`search.codesign.sampling`), for spaces too big
  to grid.
- ``'ray'``: the grid split into chunks of architectures run as Ray tasks and
  merged (`search.codesign.ray_backend`; ``pip install .[distributed]``); same frontier.

With ``precision: {weight_bits: ilp}`` the grid uses the candidate formats as
uniform bits and the best-ranked frontier designs then get a mixed-precision
allocation (`search.codesign.ilp`): the ILP runs per candidate, not per grid point.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from roofline import InputError
from scaling_law import ScalingLaw

from .evaluate import (
    Outcome,
    Plan,
    architecture_index,
    evaluate_grid_chunk,
    frontier_mask,
    rest_points,
)
from .frame import best_per_budget, design_frame, design_labels, rank_designs
from .ilp import refine_with_ilp
from .intervals import add_intervals
from .model import resolve_forms, resolve_law
from .objectives import Constraints, Objective, infeasible_message, parse_objectives
from .ray_backend import run_ray
from .sampling import run_sampling
from .serving_band import add_serving_band
from .space import DesignSpace, load_space

METHODS = ("grid", "sample", "ray")
KEEP = ("feasible", "frontier")
#: Largest space the grid and Ray methods enumerate.
MAX_GRID_POINTS = 1e9
STATUS_MESSAGES = {
    0: "frontier found",
    1: "no design meets the constraints",
    2: "the space holds no valid design point",
}


@dataclass(frozen=True)
class CodesignResult:
    """What `search_designs` returns, the same for every method.

    ``status``: 0 frontier found; 1 no design meets the constraints (``message``
    names the binding constraint and the best value reachable); 2 no valid design
    point (no architecture or mesh passes the shape rules). ``designs`` holds the
    feasible region (with ``keep='frontier'``: only each chunk's frontier),
    ``frontier`` its non-dominated designs with a ``design`` label and a ``rank``
    (1 = closest to the ideal point), sorted by rank. Units are SI.
    """

    success: bool
    status: int
    message: str
    method: str
    space: DesignSpace = field(repr=False)
    objectives: tuple[Objective, ...]
    constraints: Constraints
    designs: pd.DataFrame = field(repr=False)
    frontier: pd.DataFrame = field(repr=False)
    feasible_count: int
    evaluated_count: int
    elapsed_s: float

    def to_frame(self) -> pd.DataFrame:
        """The feasible designs with an ``on_frontier`` column."""
        frame = self.designs.copy()
        frame["on_frontier"] = frontier_mask(self.objectives, frame) if len(frame) else []
        return frame

    def best_per_budget(
        self, budget: str, objective: str | None = None, limits: Iterable[float] | None = None
    ) -> pd.DataFrame:
        """Best design (first objective by default) within each limit on ``budget`` (an
        objective name; limits in SI units, default: the budget's values on the frontier);
        see `search.codesign.frame.best_per_budget`."""
        objective = objective or self.objectives[0].name
        if limits is None:
            column = parse_objectives([budget])[0].column
            limits = np.unique(self.frontier[column].to_numpy(float))
        table = best_per_budget(self.designs, budget, objective, list(limits))
        table.insert(1, "design", design_labels(self.space, table))
        return table


def search_designs(
    space: DesignSpace | str | Path,
    objectives: str | Iterable[str] | None = None,
    constraints: Constraints | None = None,
    method: str = "grid",
    *,
    law: ScalingLaw | None = None,
    space_constraints: bool = True,
    keep: str = "feasible",
    within_data: bool | None = None,
    samples: int | None = None,
    refine_rounds: int | None = None,
    seed: int | None = None,
    chunks: int | None = None,
    ilp_candidates: int = 8,
    serving_band: bool = False,
    progress: bool = False,
) -> CodesignResult:
    """Search ``space`` for the Pareto frontier of ``objectives`` within ``constraints``.

    Parameters
    ----------
    space
        A `DesignSpace` or the path of its YAML file.
    objectives
        ``'loss,tpot'`` or a list of names (`search.codesign.objectives.OBJECTIVES`);
        default: the space's.
    constraints
        Bounds replacing the space's bounds of the same name (the rest stay).
    space_constraints
        False ignores the space's ``constraints`` section (only ``constraints`` apply).
    method
        ``'grid'``, ``'sample'`` or ``'ray'`` (see module doc).
    law
        A fitted law; default: the space's ``law.path``, else the shipped fit (whose other
        validated forms then give the model-form spread; none when ``law`` is given).
    keep
        ``'feasible'`` keeps the whole feasible region in ``designs``; ``'frontier'``
        only each chunk's frontier (for huge spaces; the frontier is the same).
    within_data
        True keeps only designs inside the law's data domain (not ``extrapolated``);
        None: the space's ``law.within_data``.
    samples, refine_rounds, seed
        Sampling settings (default: the space's ``sampling`` section).
    chunks
        Ray tasks (default: 4 per available CPU).
    ilp_candidates
        Frontier designs (best ranked) that get an ILP allocation in ``ilp`` mode.
    serving_band
        Add each frontier design's TPOT over the base model's under every serving scenario
        (kernel-overhead priors x runtime profiles) and the joint verdict
        (`search.codesign.serving_band`); the CLI does by default.
    progress
        Show a tqdm progress bar on stderr.
    """
    start = time.perf_counter()
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if keep not in KEEP:
        raise InputError(f"keep must be one of {', '.join(KEEP)}, got {keep!r}")
    if not isinstance(space, DesignSpace):
        space = load_space(space)
    if within_data is not None:
        space = dataclasses.replace(
            space, law=dataclasses.replace(space.law, within_data=bool(within_data))
        )
    chosen = space.objectives if objectives is None else parse_objectives(objectives)
    bounds = space.constraints if space_constraints else Constraints()
    if constraints is not None:
        bounds = bounds.merged(constraints)
    check_training_price(space, bounds)
    forms = resolve_forms(space.law) if law is None else ()
    plan = Plan(space, law or resolve_law(space.law), chosen, bounds, keep, forms)
    if method == "sample":
        outcome = run_sampling(plan, samples, refine_rounds, seed, progress)
    else:
        check_grid_size(space)
        outcome = run_ray(plan, chunks, progress) if method == "ray" else run_grid(plan, progress)
    result = build_result(plan, outcome, method, start)
    if space.precision.ilp_formats is not None and result.success:
        frontier = refine_with_ilp(plan, result.frontier, ilp_candidates)
        result = dataclasses.replace(
            result, frontier=frontier, elapsed_s=time.perf_counter() - start
        )
    if serving_band and result.success:
        frontier = add_serving_band(space, result.frontier)
        result = dataclasses.replace(
            result, frontier=frontier, elapsed_s=time.perf_counter() - start
        )
    return result


def check_training_price(space: DesignSpace, bounds: Constraints) -> None:
    """A training-cost bound needs the training platform's hourly price (else every cost
    is NaN and no design could meet it)."""
    platform = space.training.platform
    if bounds.max_training_cost_usd is not None and platform.price_usd_per_hour is None:
        raise InputError(
            f"max-training-cost-usd: training platform {platform.name} has no "
            "price_usd_per_hour; use a preset with a price or bound max-training-hours"
        )


def check_grid_size(space: DesignSpace) -> None:
    """Refuse to enumerate a space above `MAX_GRID_POINTS`."""
    if space.size > MAX_GRID_POINTS:
        raise InputError(
            f"{space.origin}: {space.size:.3g} points is more than the grid method enumerates "
            f"({MAX_GRID_POINTS:.0e}); use method 'sample'"
        )


def run_grid(plan: Plan, progress: bool = False) -> Outcome:
    """Every point of the space in this process, one architecture at a time."""
    architectures, _ = architecture_index(plan.space)
    rest = rest_points(plan.space)
    with tqdm(
        total=len(architectures), desc="co-design grid", unit="arch", disable=not progress
    ) as bar:
        return evaluate_grid_chunk(plan, architectures, rest, lambda _: bar.update())


def build_result(plan: Plan, outcome: Outcome, method: str, start: float) -> CodesignResult:
    """Frame the kept designs, extract the frontier, set status and message."""
    space = plan.space
    designs = add_intervals(plan, design_frame(space, plan.law, outcome.points, outcome.metrics))
    if outcome.evaluated == 0:
        status = 2
        message = (
            f"{STATUS_MESSAGES[2]}: no combination of the model axes gives heads * head_dim = "
            "hidden with kv_heads dividing heads and top_k <= experts, or no mesh has tp <= "
            "heads, pp <= layers, ep <= experts (and tp*pp*ep*dp in hardware.devices), or "
            "every workload has both parallel_samples and beam_width above 1"
        )
    elif outcome.feasible == 0:
        status, message = 1, infeasible_message(plan.bounds(), outcome.summary)
    else:
        status = 0
    if status == 0:
        mask = frontier_mask(plan.objectives, designs)
        frontier = designs[mask].copy()
        frontier.insert(0, "design", design_labels(space, frontier))
        frontier.insert(0, "rank", rank_designs(frontier, plan.objectives))
        frontier = frontier.sort_values("rank").reset_index(drop=True)
        message = (
            f"{len(frontier)} designs on the frontier of {outcome.feasible} feasible "
            f"({outcome.evaluated} evaluated)"
        )
    else:
        frontier = designs.iloc[:0].copy()
        frontier.insert(0, "design", pd.Series(dtype=str))
        frontier.insert(0, "rank", pd.Series(dtype=np.int64))
    return CodesignResult(
        success=status == 0,
        status=status,
        message=message,
        method=method,
        space=space,
        objectives=plan.objectives,
        constraints=plan.constraints,
        designs=designs,
        frontier=frontier,
        feasible_count=outcome.feasible,
        evaluated_count=outcome.evaluated,
        elapsed_s=time.perf_counter() - start,
    )
