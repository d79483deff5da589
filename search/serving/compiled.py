"""The replica event loop compiled with numba, for the configurations most runs use.

`engine._Engine` is the reference: every feature, in Python. This module runs the same
loop, statement for statement and floating-point operation for operation, as one
numba function over flat arrays, for one replica without shared prefixes, open-loop
clients without front-end time, and single-step scheduling (``continuous`` or
``chunked``; recompute or swap preemption; decode pools' prefilled requests included).
`eligible` says when it applies; `simulate_pool` uses it then and the Python loop
otherwise. Results are bit for bit those of the Python loop (tests compare both on
many configurations), including numpy's pairwise summation where the Python loop sums
an array with ``ndarray.sum`` (`pairwise_sum`).

Numba compiles on first use (a few seconds) and caches the machine code beside this
file (``__pycache__``) for later processes. Without numba, or with
``CODESIGN_SERVING_CORE=python`` in the environment, the Python loop runs.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

from genz import StepCost

from .compiled_state import (
    CTX,
    ERROR,
    HEAD,
    KV,
    LAST,
    PREFILLING,
    STEPS,
    SWAPPED,
    WAITING,
    D,
    G,
    T,
    admit,
    decode_time,
    emit,
    finish_due,
    jit,
    njit,
    pairwise_sum,
    preempt,
    prefill_step,
)
from .config import SchedulerConfig
from .workload import Workload

#: Decode runs of at most this many steps are costed step by step (`engine.SHORT_RUN`).
SHORT_RUN = 6
#: Environment variable that selects the loop: ``python`` forces the reference loop.
CORE_VARIABLE = "CODESIGN_SERVING_CORE"


def eligible(workload: Workload, config: SchedulerConfig, replicas: int) -> bool:
    """Whether the compiled loop covers this run (module doc)."""
    return (
        njit is not None
        and os.environ.get(CORE_VARIABLE, "auto") != "python"
        and replicas == 1
        and config.policy in ("continuous", "chunked")
        and config.scheduler_steps == 1
        and config.request_overhead_s == 0
        and workload.max_concurrency is None
        and len(workload) > 0
        and bool(np.all(workload.prefixes < 0))
    )


@jit
def _decode_run(
    until: float,
    tab: Any,
    state: Any,
    clock: Any,
    per: Any,
    heap: Any,
    order: Any,
    fresh: Any,
    logs: Any,
    waiting: Any,
    config: Any,
    link: Any,
    swap: bool,
) -> None:
    """`engine._Engine.decode_run`: decode-only steps until the next event (``until``:
    the next arrival, infinite when none)."""
    max_sequences, _, capacity, slack = config
    d, base = state[D], state[CTX]
    room = capacity - state[KV]
    if room < d:
        preempt(state, clock, per, order, fresh, waiting, slack, link, swap)
        return
    steps = min(heap[0][0] - state[G], room // d)
    if state[WAITING] > 0 or d + state[PREFILLING] >= max_sequences:
        until = math.inf
    first = decode_time(tab, d, float(base + d))
    if first < 0:
        state[ERROR] = 1
        return
    if until < math.inf:
        steps = max(1, min(steps, int((until - clock[T]) / first) + 1))
    gaps, counts, singles = logs[0], logs[1], logs[2]
    start = clock[T]
    if steps <= SHORT_RUN:  # step by step: stop at the step during which it arrives
        elapsed, taken = first, 1
        singles.append(first)
        singles.append(0.0)
        singles.append(0.0)
        singles.append(0.0)
        singles.append(float(d))
        singles.append(float(base + d))
        singles.append(float(d))
        emit(start + first, d, state, clock, fresh, logs)
        while taken < steps and start + elapsed < until:
            taken += 1
            context = base + d * taken
            seconds = decode_time(tab, d, float(context))
            singles.append(seconds)
            singles.append(0.0)
            singles.append(0.0)
            singles.append(0.0)
            singles.append(float(d))
            singles.append(float(context))
            singles.append(float(d))
            elapsed += seconds
            gaps.append(seconds)
            counts.append(float(d))
        clock[LAST] = start + elapsed
        steps = taken
    else:  # as one run (engine: decode_times, cumsum, searchsorted)
        run_times, run_ctx, run_meta, run_gaps, run_counts = (
            logs[3],
            logs[4],
            logs[5],
            logs[6],
            logs[7],
        )
        at = len(run_times)
        left = until - start
        elapsed = 0.0
        used = steps
        for k in range(steps):
            context = base + d * float(k + 1)
            seconds = decode_time(tab, d, context)
            elapsed += seconds
            run_times.append(seconds)
            run_ctx.append(context)
            if until < math.inf and elapsed >= left:
                used = k + 1
                break
        steps = used
        run_meta.append(at)
        run_meta.append(used)
        run_meta.append(d)
        emit(start + run_times[at], d, state, clock, fresh, logs)
        if used > 1:
            for k in range(at + 1, at + used):
                run_gaps.append(run_times[k])
                run_counts.append(float(d))
            clock[LAST] = start + pairwise_sum(run_times, at, used)
    clock[T] += elapsed
    state[STEPS] += steps
    state[G] += steps
    state[CTX] += steps * d
    state[KV] += steps * d
    if heap[0][0] <= state[G]:
        finish_due(state, clock, per, heap, order, fresh, slack)


@jit
def _floats(values: Any) -> Any:
    out = np.empty(len(values))
    for k in range(len(values)):
        out[k] = values[k]
    return out


@jit
def _loop(
    arrival: Any,
    per: Any,
    tab: Any,
    chunked: bool,
    prefilled: bool,
    budget: int,
    config: Any,
    link: Any,
    swap: bool,
) -> Any:
    """`engine._Engine.advance` to the end for one replica (module doc)."""
    n = len(arrival)
    prompt, swapped = per[0], per[4]
    max_sequences, _, capacity, slack = config
    state = np.zeros(12, np.int64)
    clock = np.zeros(2)
    heap = [(0, 0)]
    heap.pop()
    order = [0]
    order.pop()
    ids = [0]
    ids.pop()
    stamps = [0]
    stamps.pop()
    fresh = (ids, stamps, np.zeros(n, np.bool_), np.zeros(n), np.zeros(n, np.int64))
    floats = [0.0]
    floats.pop()
    meta_list = [0]
    meta_list.pop()
    logs = (
        floats,
        floats.copy(),
        floats.copy(),
        floats.copy(),
        floats.copy(),
        meta_list,
        floats.copy(),
        floats.copy(),
        floats.copy(),
    )
    timeline = logs[8]
    waiting = np.empty(n, np.int64)
    taken = np.empty((max_sequences, 2), np.int64)
    chunks = np.empty((max_sequences, 3), np.int64)
    done = np.empty(max_sequences, np.int64)
    pending = np.empty((max_sequences, 2), np.int64)  # chunked: [id, prompt tokens left]
    k = 0
    while True:
        if k < n and arrival[k] <= clock[T]:
            while k < n and arrival[k] <= clock[T]:
                if prefilled:
                    swapped[k] = prompt[k]
                    state[SWAPPED] += 1
                waiting[(state[HEAD] + state[WAITING]) % n] = k
                state[WAITING] += 1
                k += 1
        if not (state[WAITING] or state[D] or state[PREFILLING]):
            if k >= n or arrival[k] == math.inf:
                break
            clock[T] = max(clock[T], arrival[k])
            continue
        until = arrival[k] if k < n else math.inf
        if chunked:
            room = budget - state[D]
            if capacity - state[KV] < state[D]:
                preempt(state, clock, per, order, fresh, waiting, slack, link, swap)
            else:
                count = admit(
                    room, False, state, clock, per, heap, order, fresh, waiting, taken, config, link
                )
                for j in range(count):
                    pending[state[PREFILLING], 0] = taken[j, 0]
                    pending[state[PREFILLING], 1] = taken[j, 1]
                    state[PREFILLING] += 1
                if not state[PREFILLING]:
                    if state[D]:
                        until = arrival[k] if k < n else math.inf
                        _decode_run(
                            until,
                            tab,
                            state,
                            clock,
                            per,
                            heap,
                            order,
                            fresh,
                            logs,
                            waiting,
                            config,
                            link,
                            swap,
                        )
                else:
                    m = 0
                    for e in range(state[PREFILLING]):
                        if room <= 0:
                            break
                        i, left = pending[e, 0], pending[e, 1]
                        q = min(left, room)
                        room -= q
                        pending[e, 1] -= q
                        chunks[m, 0], chunks[m, 1], chunks[m, 2] = i, q, prompt[i] - pending[e, 1]
                        m += 1
                    kept = 0
                    for e in range(state[PREFILLING]):
                        if pending[e, 1] > 0:
                            pending[kept, 0], pending[kept, 1] = pending[e, 0], pending[e, 1]
                            kept += 1
                    state[PREFILLING] = kept
                    prefill_step(
                        chunks,
                        m,
                        True,
                        tab,
                        state,
                        clock,
                        per,
                        heap,
                        order,
                        fresh,
                        logs,
                        done,
                        slack,
                    )
        else:
            count = 0
            if state[WAITING]:
                count = admit(
                    budget,
                    True,
                    state,
                    clock,
                    per,
                    heap,
                    order,
                    fresh,
                    waiting,
                    taken,
                    config,
                    link,
                )
            if count:
                for j in range(count):
                    i = taken[j, 0]
                    chunks[j, 0], chunks[j, 1], chunks[j, 2] = i, taken[j, 1], prompt[i]
                prefill_step(
                    chunks,
                    count,
                    False,
                    tab,
                    state,
                    clock,
                    per,
                    heap,
                    order,
                    fresh,
                    logs,
                    done,
                    slack,
                )
            elif state[D]:
                until = arrival[k] if k < n else math.inf
                _decode_run(
                    until,
                    tab,
                    state,
                    clock,
                    per,
                    heap,
                    order,
                    fresh,
                    logs,
                    waiting,
                    config,
                    link,
                    swap,
                )
        if state[ERROR]:
            break
        timeline.append(clock[T])
        timeline.append(float(state[WAITING]))
        timeline.append(float(state[D] + state[PREFILLING]))
        timeline.append(float(state[KV]))
    meta = np.empty(len(logs[5]), np.int64)
    for j in range(len(logs[5])):
        meta[j] = logs[5][j]
    arrays = (
        _floats(logs[0]),
        _floats(logs[1]),
        _floats(logs[2]),
        _floats(logs[3]),
        _floats(logs[4]),
        _floats(logs[6]),
        _floats(logs[7]),
        _floats(logs[8]),
    )
    return state, meta, arrays


def simulate(
    workload: Workload,
    cost: StepCost,
    config: SchedulerConfig,
    kv_capacity_tokens: int,
    prefilled: bool,
) -> tuple[dict[str, NDArray[Any]], NDArray[np.float64], Any, Any, int] | None:
    """Run the compiled loop (`eligible` runs only): per-request arrays (first_token_s,
    finish_s, preemptions, rejected, admitted_s), the timeline rows (n, 4), the
    `records.StepLog` and `emissions.Emissions` of the run, and its step count. None
    when a step exceeds the step-cost tables (the Python loop then says which)."""
    from .emissions import Emissions
    from .records import StepLog

    n = len(workload)
    per = (
        workload.input_tokens.astype(np.int64),  # prompt (grows on recompute)
        workload.output_tokens.astype(np.int64),
        np.full(n, 1 if prefilled else 0, np.int64),  # generated
        np.full(n, math.nan),  # finish
        np.full(n, -1, np.int64),  # swapped: context while the KV is outside (-1: not)
        np.zeros(n, np.int64),  # step joined
        np.zeros(n, np.int64),  # context then
        np.zeros(n, np.int64),  # step it finishes
        np.zeros(n, np.bool_),  # decoding
        np.full(n, math.nan),  # first token
        np.zeros(n, np.int64),  # preemptions
        np.zeros(n, np.bool_),  # rejected
        np.full(n, math.nan),  # admitted
    )
    tab = tuple(
        np.ascontiguousarray(a, float)
        for a in (
            cost.token_time_s,
            cost.head_time_s,
            cost.fixed_step_s,
            cost.fixed_sequence_s,
            cost.context_compute,
            cost.context_memory,
            cost.context_overhead_s,
        )
    )
    limits = (
        config.max_sequences,
        config.block_tokens,
        kv_capacity_tokens,
        config.block_tokens - 1,
    )
    link = (float(cost.kv_bytes_per_token), float(config.host_link_bytes_per_s))
    state, meta, arrays = _loop(
        np.ascontiguousarray(workload.arrival_s, float),
        per,
        tab,
        config.policy == "chunked",
        prefilled,
        config.max_batched_tokens,
        limits,
        link,
        config.preemption == "swap",
    )
    gaps, counts, singles, run_times, run_ctx, run_gaps, run_counts, timeline = arrays
    if state[ERROR]:
        return None
    work = StepLog()
    work.spool.chunks = [singles]
    work.runs = [
        (run_times[a : a + steps], int(d), run_ctx[a : a + steps])
        for a, steps, d in meta.reshape(-1, 3).tolist()
    ]
    emissions = Emissions()
    emissions.gap_spool.chunks, emissions.count_spool.chunks = [gaps], [counts]
    emissions.runs = [(run_gaps, run_counts)] if len(run_gaps) else []
    outcome = {
        "first_token_s": per[9],
        "finish_s": per[3],
        "preemptions": per[10],
        "rejected": per[11],
        "admitted_s": per[12],
    }
    return outcome, timeline.reshape(-1, 4), work, emissions, int(state[STEPS])
