"""ILP bit-allocation benchmark: 1,000 layer groups x 6 formats x 3 budgets.

Instance: a Llama-3.1-8B-shaped dense model stretched to 250 layers (4 weight
groups per layer: 1,000 per-layer units, plus the LM head), costed by genz on the
Jetson AGX Orin 64GB for batch 1, 1024 input / 128 output tokens; formats
16,8,6,4,3,2. Sensitivities are the weight-free proxy times a per-unit log-normal
factor (sigma 1, seeded) standing in for measured Hessian traces, so units differ.
Budgets: weights <= 35 % of the 16-bit weights, TPOT <= 40 % of the 16-bit TPOT,
decode bit-operations <= 30 % of the 16-bit value.

Prints, per seed, the ILP's build+solve time (CBC via PuLP, including the LP
relaxation used for the bound), its status, the gap to the LP-relaxation bound,
and the greedy baseline's objective relative to the ILP's. Target: < 10 s.

Run: ``python benchmarks/ilp_bench.py [--seeds 3]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from genz import Scenario, load_model
from roofline import load_platform
from search.bits import (
    DEFAULT_MIP_GAP,
    BitAllocationProblem,
    Budget,
    allocate_bits,
    decision_units,
    parse_formats,
    proxy_sensitivity,
    unit_costs,
)


def instance(seed: int) -> BitAllocationProblem:
    """The benchmark problem for one seed (see module doc)."""
    base = load_model("llama-3.1-8b")
    model = type(base)(**{**base.__dict__, "name": "llama-250l", "num_layers": 250})
    platform = load_platform("jetson-agx-orin-64gb")
    formats = parse_formats("16,8,6,4,3,2")
    units = decision_units(model)
    costs, constants = unit_costs(model, platform, Scenario(), units, formats, 16.0)
    rng = np.random.default_rng(seed)
    trace = rng.lognormal(0.0, 1.0, size=(len(units), 1))
    sensitivity = proxy_sensitivity(units, formats, model.num_layers) * trace

    def at_16(quantity: str) -> float:
        return constants[quantity] + float(costs[quantity][:, 0].sum())

    budgets = (
        Budget("weights_bytes", 0.35 * at_16("weights_bytes"), "max-weights-gb", 1e9, "GB"),
        Budget("tpot_s", 0.40 * at_16("tpot_s"), "max-tpot-ms", 1e-3, "ms"),
        Budget("decode_bops", 0.30 * at_16("decode_bops"), "max-decode-gbops", 1e9, "GBOP"),
    )
    return BitAllocationProblem(
        sensitivity,
        costs,
        constants,
        budgets,
        tuple(u.name for u in units),
        tuple(f.name for f in formats),
    )


def main() -> None:
    """Solve each seed's instance with the ILP and the greedy baseline; print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="instances to solve (default 3)")
    parser.add_argument("--time-limit-s", type=float, default=60.0, help="CBC limit")
    parser.add_argument("--mip-gap", type=float, default=DEFAULT_MIP_GAP, help="CBC tolerance")
    args = parser.parse_args()
    print(
        f"ILP: PuLP + bundled CBC, mip_gap {args.mip_gap:g}; gap_to_LP = 1 - LP bound / objective"
    )
    print("seed  units x options  ilp_s  status   gap_to_LP  greedy_s  greedy/ilp objective")
    for seed in range(args.seeds):
        problem = instance(seed)
        start = time.perf_counter()
        ilp = allocate_bits(problem, "ilp", args.time_limit_s, args.mip_gap)
        ilp_s = time.perf_counter() - start
        start = time.perf_counter()
        greedy = allocate_bits(problem, "greedy")
        greedy_s = time.perf_counter() - start
        n, m = problem.shape
        ratio = greedy.objective / ilp.objective if greedy.success else float("nan")
        gap = ilp.gap if ilp.gap is not None else float("nan")
        print(
            f"{seed:>4}  {n:>5} x {m:<8}  {ilp_s:5.2f}  {ilp.status:<8} {gap:9.2e}  "
            f"{greedy_s:8.2f}  {ratio:.6f}"
        )


if __name__ == "__main__":
    main()
