"""Speed of the serving simulator: 100,000 chat requests on one replica, one core.

Target (issue #14): under 10 s of wall time for 100,000 requests of the ``chat`` use
case on one replica. Prints the step-cost build time, the simulation time, simulated
requests per wall-second and simulated steps per wall-second for each policy, and the
ratio to the target; then the same requests on disaggregated pools of two prefill and
two decode replicas (least-loaded routing in each pool, for scale: no target). Vidur (Agrawal et al., MLSys 2024) reports its simulator in
terms of cost saved versus GPU hours, not requests per wall-second; we found no
published requests-per-second figure to compare with, so none is printed.

Run: ``python benchmarks/serving_speed.py [--requests 100000] [--rate 15]``.
"""

from __future__ import annotations

import argparse
import time

from threadpoolctl import threadpool_limits

from genz import load_model
from roofline import load_platform
from search.serving import (
    SchedulerConfig,
    build_replica,
    kv_link,
    run,
    run_disaggregated,
    synthetic_workload,
)

TARGET_S = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=15.0, help="requests/s (below capacity)")
    parser.add_argument("--model", default="llama-3.1-8b")
    parser.add_argument("--hw", default="h100-sxm")
    args = parser.parse_args()
    model, platform = load_model(args.model), load_platform(args.hw)
    duration = args.requests / args.rate
    workload = synthetic_workload(args.rate, duration, seed=0)
    print(
        f"{len(workload)} chat requests at {args.rate:g}/s ({duration:.0f} s simulated), "
        f"{args.model} on {args.hw}, one thread"
    )
    with threadpool_limits(1):
        for policy, budget in (("continuous", 8192), ("chunked", 512)):
            start = time.perf_counter()
            replica = build_replica(
                model,
                platform,
                workload,
                config=SchedulerConfig(policy=policy, max_batched_tokens=budget),
            )
            built = time.perf_counter()
            result = run(workload, replica)
            end = time.perf_counter()
            wall = end - start
            print(
                f"{policy:<11} build {built - start:.3f} s, simulate {end - built:.2f} s: "
                f"{len(workload) / wall:,.0f} requests/s, {result.summary['steps'] / wall:,.0f} "
                f"steps/s of wall time; {wall:.2f} s vs target {TARGET_S:g} s "
                f"({'met' if wall < TARGET_S else 'MISSED'}, {wall / TARGET_S:.2f} of it); "
                f"P99 TTFT {result.summary['ttft_s_p99'] * 1e3:.0f} ms, {result.verdict}"
            )
        start = time.perf_counter()
        replica = build_replica(model, platform, workload)
        link = kv_link(replica, replica, 2, 2)
        result = run_disaggregated(
            workload, replica, replica, link, prefill_replicas=2, decode_replicas=2
        )
        wall = time.perf_counter() - start
        print(
            f"disaggregated 2 prefill + 2 decode replicas: {wall:.2f} s, "
            f"{len(workload) / wall:,.0f} requests/s of wall time; P99 TTFT "
            f"{result.summary['ttft_s_p99'] * 1e3:.0f} ms, {result.verdict}"
        )


if __name__ == "__main__":
    main()
