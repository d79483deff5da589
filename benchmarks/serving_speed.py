"""Speed of the serving simulator: 100,000 chat requests on one replica, one core.

Target (issue #24): under 2 s of wall time for 100,000 requests of the ``chat`` use
case (on one replica and on pools). For each policy on one replica, prints the step-cost build time, the simulation
time of the compiled loop (`search.serving.compiled`, numba) and of the Python loop
(`search.serving.engine`, ``CODESIGN_SERVING_CORE=python``) on the same requests in
this process, their ratio (wall and CPU time: on a shared machine the CPU time is
the steadier figure), whether the two runs are identical (every `RunRecord`
array), and the ratio to the target. The compiled loop is loaded (or compiled, the
first time on a machine) by a warm-up run of 50 requests, timed apart. Then the same
requests on a colocated pool of four replicas and on disaggregated pools of two prefill
and two decode replicas (least-loaded routing in each pool; continuous batching), the
latter also with 64 closed-loop clients: the simulation's records on both loops, their
ratio, whether every record is identical, and the compiled time (wall and CPU) against
the same 2 s target, judged on the CPU time (on a shared machine other processes' load
inflates the wall time; on an idle core the two agree).
Last, the simulations the dashboard's Serving page runs per slider move (one replica,
continuous batching: 60 s of Poisson chat arrivals at each of the rate curve's 7 multiples
of the rate set; the rates `dashboard_slider_latency.py` moves through), compiled and
Python loop, median per move (the page's own drawing not included: that benchmark times
the whole page). Vidur (Agrawal et al., MLSys 2024) reports its simulator in terms of cost saved versus
GPU hours, not requests per wall-second; we found no published requests-per-second
figure to compare with, so none is printed.

Run: ``python benchmarks/serving_speed.py [--requests 100000] [--rate 15] [--no-peer]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from genz import ModelConfig, StepCost, load_model, step_cost
from roofline import Platform, load_platform
from search.serving import (
    Replica,
    SchedulerConfig,
    Workload,
    build_replica,
    kv_link,
    run,
    simulate_disaggregated,
    simulate_replica,
    step_table_tokens,
    synthetic_workload,
)
from search.serving.compiled import CORE_VARIABLE

TARGET_S = 2.0
#: The Serving page's rate-curve multiples and the rates the slider benchmark moves through.
RATE_MULTIPLES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
PAGE_RATES = (7.3, 11.9, 17.1, 23.7, 31.3)
#: Closed-loop clients of the last pools row (each sends at the later of its request's
#: arrival time and its previous request's end).
CLIENTS = 64


def same_records(a: object, b: object) -> bool:
    """Every field of two `RunRecord` equal (arrays bit for bit, NaN equal to NaN)."""
    for field in dataclasses.fields(a):  # type: ignore[arg-type]
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            if x.shape != y.shape or not np.array_equal(x, y, equal_nan=True):
                return False
        elif x != y:
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=15.0, help="requests/s (below capacity)")
    parser.add_argument("--model", default="llama-3.1-8b")
    parser.add_argument("--hw", default="h100-sxm")
    parser.add_argument("--no-peer", action="store_true", help="skip the Python loop's runs")
    args = parser.parse_args()
    model, platform = load_model(args.model), load_platform(args.hw)
    duration = args.requests / args.rate
    workload = synthetic_workload(args.rate, duration, seed=0)
    print(
        f"{len(workload)} chat requests at {args.rate:g}/s ({duration:.0f} s simulated), "
        f"{args.model} on {args.hw}, one thread"
    )
    with threadpool_limits(1):
        start = time.perf_counter()
        small = synthetic_workload(args.rate, 50 / args.rate, seed=0)
        simulate_replica(small, build_replica(model, platform, small))
        print(
            f"compiled loop loaded (compiled if not cached) in {time.perf_counter() - start:.2f} s"
        )
        for policy, budget in (("continuous", 8192), ("chunked", 512)):
            start = time.perf_counter()
            replica = build_replica(
                model,
                platform,
                workload,
                config=SchedulerConfig(policy=policy, max_batched_tokens=budget),
            )
            built, cpu = time.perf_counter(), time.process_time()
            result = run(workload, replica)
            end, cpu = time.perf_counter(), time.process_time() - cpu
            wall = end - start
            line = (
                f"{policy:<11} build {built - start:.3f} s, simulate {end - built:.2f} s: "
                f"{len(workload) / wall:,.0f} requests/s, {result.summary['steps'] / wall:,.0f} "
                f"steps/s of wall time; {wall:.2f} s vs target {TARGET_S:g} s "
                f"({'met' if wall < TARGET_S else 'MISSED'}, {wall / TARGET_S:.2f} of it); "
                f"P99 TTFT {result.summary['ttft_s_p99'] * 1e3:.0f} ms, {result.verdict}"
            )
            print(line)
            if args.no_peer:
                continue
            fast = simulate_replica(workload, replica)
            os.environ[CORE_VARIABLE] = "python"
            try:
                begin, python_cpu = time.perf_counter(), time.process_time()
                slow_result = run(workload, replica)
                python_wall = time.perf_counter() - begin
                python_cpu = time.process_time() - python_cpu
                slow = simulate_replica(workload, replica)
            finally:
                del os.environ[CORE_VARIABLE]
            identical = same_records(fast, slow) and slow_result.summary == result.summary
            print(
                f"{'':<11} Python loop: simulate {python_wall:.2f} s; compiled / Python "
                f"{(end - built) / python_wall:.3f} ({python_wall / (end - built):.1f}x faster); "
                f"CPU time of the simulation {cpu:.2f} s compiled, {python_cpu:.2f} s Python "
                f"({python_cpu / cpu:.1f}x); "
                f"records and summary {'identical' if identical else 'DIFFER'}"
            )
        pools(workload, build_replica(model, platform, workload), args.no_peer)
        page_moves(model, platform)


def timed(simulate: Callable[[], Any]) -> tuple[Any, float, float]:
    """``simulate()``'s result, wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = simulate()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def pools(workload: Workload, replica: Replica, no_peer: bool) -> None:
    """A colocated pool of 4 replicas and disaggregated 2 prefill + 2 decode pools
    (least-loaded routing), open-loop and with `CLIENTS` closed-loop clients: the
    simulation (records) on both loops, their ratio, whether every record is identical,
    and the ratio of the compiled time to the target."""
    link = kv_link(replica, replica, 2, 2)
    closed = dataclasses.replace(workload, max_concurrency=CLIENTS)
    runs: dict[str, Callable[[], list[Any]]] = {
        "4 replicas": lambda: [simulate_replica(workload, replica, replicas=4)],
        "2 prefill + 2 decode": lambda: [
            getattr(both, part)
            for both in [
                simulate_disaggregated(
                    workload, replica, replica, link=link, prefill_replicas=2, decode_replicas=2
                )
            ]
            for part in ("prefill", "decode", "combined")
        ],
        f"2 + 2, {CLIENTS} clients": lambda: [
            getattr(both, part)
            for both in [
                simulate_disaggregated(
                    closed, replica, replica, link=link, prefill_replicas=2, decode_replicas=2
                )
            ]
            for part in ("prefill", "decode", "combined")
        ],
    }
    for name, simulate in runs.items():
        fast, wall, cpu = timed(simulate)
        line = (
            f"pools, {name:<20} compiled {wall:.2f} s wall, {cpu:.2f} s CPU "
            f"({len(workload) / wall:,.0f} requests/s of wall time; CPU {cpu:.2f} s vs target "
            f"{TARGET_S:g} s: {'met' if cpu < TARGET_S else 'MISSED'}, {cpu / TARGET_S:.2f} of it)"
        )
        if not no_peer:
            os.environ[CORE_VARIABLE] = "python"
            try:
                slow, python_wall, python_cpu = timed(simulate)
            finally:
                del os.environ[CORE_VARIABLE]
            identical = all(same_records(a, b) for a, b in zip(fast, slow, strict=True))
            line += (
                f"; Python loop {python_wall:.2f} s; compiled / Python {wall / python_wall:.3f} "
                f"({python_wall / wall:.1f}x faster; CPU {cpu:.2f} s vs {python_cpu:.2f} s, "
                f"{python_cpu / cpu:.1f}x); records {'identical' if identical else 'DIFFER'}"
            )
        print(line)


def page_moves(model: ModelConfig, platform: Platform) -> None:
    """Median wall time of one Serving-page slider move's simulations, both loops."""
    medians = {}
    tables: dict[int, StepCost] = {}  # the page caches the step-cost table by its size
    for core in ("auto", "python"):
        os.environ[CORE_VARIABLE] = core
        moves = []
        for rate in PAGE_RATES:
            begin = time.perf_counter()
            for multiple in RATE_MULTIPLES:
                drawn = synthetic_workload(rate * multiple, 60.0, seed=0)
                tokens = step_table_tokens(drawn, SchedulerConfig())
                if tokens not in tables:
                    tables[tokens] = step_cost(
                        model, platform, max_tokens=tokens, max_sequences=256
                    )
                run(drawn, build_replica(model, platform, drawn, cost=tables[tokens]))
            moves.append(time.perf_counter() - begin)
        medians[core] = float(np.median(moves))
    del os.environ[CORE_VARIABLE]
    print(
        f"Serving page slider move (7 runs of 60 s, one replica): compiled "
        f"{medians['auto'] * 1e3:.0f} ms, Python loop {medians['python'] * 1e3:.0f} ms "
        f"(median of {len(PAGE_RATES)} moves; {medians['python'] / medians['auto']:.1f}x)"
    )


if __name__ == "__main__":
    main()
