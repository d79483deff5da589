"""Least-loaded versus round-robin routing of colocated replicas on bursty traffic.

For each policy and (rate, replicas) point, ``--seeds`` gamma workloads (arrival CV
``--burst-cv``, chat lengths, 60 s) run on the pool twice, once per routing rule
(`search.serving.route`). Prints, per figure, in how many seeds least-loaded is at
most round-robin and the median and largest ratio least-loaded / round-robin. There is
no target: the table says which figures least-loaded routing (fewest unfinished
requests on arrival) improves on this simulator and which it does not.

Run: ``python benchmarks/serving_routing.py [--seeds 20] [--burst-cv 3]``.
"""

from __future__ import annotations

import argparse

import numpy as np

from genz import load_model
from roofline import load_platform
from search.serving import SchedulerConfig, build_replica, run, synthetic_workload

FIGURES = ("ttft_s_p50", "ttft_s_p99", "tpot_s_p99", "e2e_s_mean", "e2e_s_p99")
POINTS = ((20.0, 2), (40.0, 4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--burst-cv", type=float, default=3.0)
    parser.add_argument("--model", default="llama-3.1-8b")
    parser.add_argument("--hw", default="h100-sxm")
    args = parser.parse_args()
    model, platform = load_model(args.model), load_platform(args.hw)
    print(f"{args.model} on {args.hw}, chat, 60 s, gamma CV {args.burst_cv:g}, {args.seeds} seeds")
    print("policy      rate/s  replicas  figure       LL<=RR  median LL/RR  max LL/RR")
    for policy in ("continuous", "chunked"):
        budget = 512 if policy == "chunked" else 8192
        config = SchedulerConfig(policy=policy, max_batched_tokens=budget)
        for rate, replicas in POINTS:
            ratios: dict[str, list[float]] = {name: [] for name in FIGURES}
            for seed in range(args.seeds):
                workload = synthetic_workload(rate, 60.0, arrival_cv=args.burst_cv, seed=seed)
                replica = build_replica(model, platform, workload, config=config)
                least = run(workload, replica, replicas=replicas).summary
                robin = run(workload, replica, replicas=replicas, routing="round-robin").summary
                for name in FIGURES:
                    ratios[name].append(least[name] / robin[name])
            for name in FIGURES:
                values = np.asarray(ratios[name])
                print(
                    f"{policy:<11} {rate:>6g}  {replicas:>8}  {name:<11}  "
                    f"{int((values <= 1).sum()):>3}/{len(values):<3} "
                    f"{np.median(values):>12.3f}  {values.max():>9.3f}"
                )


if __name__ == "__main__":
    main()
