"""The replica event loop compiled with numba, for the configurations most runs use.

`engine._Engine` is the reference: every feature, in Python. `compiled_loop` runs the
same loop, statement for statement and floating-point operation for operation, as numba
functions over flat arrays: a pool of one or more replicas with least-loaded or
round-robin routing (`routing.route`'s rules, routing inside the compiled code), so a
disaggregated run's prefill pool and its decode pool (requests arriving with their KV
after the link's transfer time, admitted prefilled) are compiled too; open-loop
clients on any pool, closed-loop clients on one replica (a pool refuses them), with or
without front-end time; single-step scheduling (``continuous`` or ``chunked``;
recompute or swap preemption). `eligible` says when it applies; `simulate_pool` uses
it then and the Python loop otherwise. Results are bit for bit those of the Python loop
(tests compare both on many configurations), including numpy's pairwise summation where
the Python loop sums an array with ``ndarray.sum`` (`compiled_loop.pairwise_sum`).

Left to the Python loop (`eligible` or `simulate` says no): shared prefixes (the prefix
cache), multi-step scheduling (``scheduler_steps`` > 1), the ``static`` policy,
speculative decoding, overlap (async) scheduling (`genz.StepCost.host_overlap`), step
costs not affine in the context (windowed layers, KV offload), steps beyond the
step-cost tables (the Python loop then says which), and closed-loop clients over
disaggregated pools (`closed_pools`, which co-simulates both pools step by step).

Numba compiles on first use (about 35 s of CPU on a loaded 2-core machine) and caches
the machine code in ``__pycache__`` beside `compiled_loop` for later processes. Without
numba, or with ``CODESIGN_SERVING_CORE=python`` in the environment, the Python loop runs.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from genz import StepCost

from .clients import Clients
from .compiled_loop import (
    ADMITTED,
    ARRIVAL,
    EARLIEST,
    ERROR,
    FINISH,
    FIRST,
    GENERATED,
    OUTPUT,
    OUTSIDE,
    PREEMPTIONS,
    PROMPT,
    REJECTED,
    REPORT,
    SENT,
    STEPS,
    closed_pools,
    njit,
    pool,
)
from .config import SchedulerConfig
from .records import WORK_SLICE, RunRecord
from .workload import Workload, max_requests

#: Environment variable that selects the loop: ``python`` forces the reference loop.
CORE_VARIABLE = "CODESIGN_SERVING_CORE"
#: Bytes a compiled pool holds per request per replica (`compiled_loop.replicas_of`'s
#: inbox, leave-time and leave-order rows: two int64 and one float64) and per batch
#: slot per replica (its chunked-prefill row: two int64).
POOL_BYTES_PER_REQUEST_REPLICA = 24
POOL_BYTES_PER_SLOT_REPLICA = 16
#: Share of the memory available now that a compiled pool's replica rows may take; a
#: run that needs more takes the Python loop, whose memory grows with the requests only.
POOL_MEMORY_SHARE = 0.25


def pool_bytes(requests: int, replicas: int, max_sequences: int) -> int:
    """Bytes of the per-replica rows a compiled pool of ``replicas`` allocates for
    ``requests`` requests and ``max_sequences`` batch slots."""
    return replicas * (
        POOL_BYTES_PER_REQUEST_REPLICA * requests + POOL_BYTES_PER_SLOT_REPLICA * max_sequences
    )


def eligible(workload: Workload, config: SchedulerConfig, replicas: int) -> bool:
    """Whether the compiled loop covers this run on ``replicas`` replicas (module doc).
    Parallel samples and beams (``workload.sequences > 1``) run in the Python loop, as
    do windowed models (their steps are not affine in the context: `simulate` declines
    them), whose KV occupancy is window-aware there (`occupancy`). So is a pool whose
    replica rows (`pool_bytes`) would take more than `POOL_MEMORY_SHARE` of the memory
    available: thousands of replicas over millions of requests."""
    return (
        njit is not None
        and os.environ.get(CORE_VARIABLE, "auto") != "python"
        and replicas >= 1
        and config.policy in ("continuous", "chunked")
        and config.scheduler_steps == 1
        and len(workload) > 0
        and bool(np.all(workload.prefixes < 0))
        and workload.sequences == 1
        and pool_bytes(len(workload), replicas, config.max_sequences)
        <= POOL_MEMORY_SHARE * max_requests()[1]
    )


def simulate(
    workload: Workload,
    cost: StepCost,
    config: SchedulerConfig,
    kv_capacity_tokens: int,
    prefilled: bool,
    replicas: int = 1,
    routing: str = "least-loaded",
) -> RunRecord | None:
    """The `RunRecord` of ``workload`` on ``replicas`` replicas routed by ``routing``
    (`routing.route`'s rules), as `engine.simulate_pool` gives it, from the compiled
    loop (`eligible` runs only). None when a step exceeds the step-cost tables (the
    Python loop then says which) or the steps are not affine in the context (windowed
    layers, offload: not `StepCost.affine_in_context`)."""
    if not cost.affine_in_context:  # windows, offload: the Python loop costs those steps
        return None
    # A decode pool's requests reach it with their KV: no front end there (`engine`).
    delay = 0.0 if prefilled else config.request_overhead_s
    clients, per = _requests(workload, prefilled, delay, report=False)
    states, logs = pool(
        replicas,
        routing == "least-loaded",
        per[1][ARRIVAL],
        per,
        *_pool_terms(cost, config, kv_capacity_tokens, prefilled),
    )
    if states[:, ERROR].any():
        return None
    return _record(per, clients, states, logs, cost, kv_capacity_tokens)


def simulate_closed(
    workload: Workload,
    prefill: tuple[StepCost, SchedulerConfig, int],
    decode: tuple[StepCost, SchedulerConfig, int],
    transfer_s: NDArray[np.float64],
    replicas: tuple[int, int],
    routing: str,
) -> tuple[RunRecord, RunRecord] | None:
    """`closed_pools.simulate_closed_pools`' two records (prefill pool, decode pool)
    from the compiled loop (`compiled_loop.closed_pools`); None as `simulate`."""
    if not (prefill[0].affine_in_context and decode[0].affine_in_context):
        return None
    n = len(workload)
    output = workload.output_tokens.astype(np.int64)
    one_token = replace(workload, output_tokens=np.ones(n, np.int64))
    first, per_a = _requests(one_token, False, prefill[1].request_overhead_s, report=True)
    # arrival times set when the KV cache reaches the decode pool
    waiting = Workload(
        np.full(n, math.inf), workload.input_tokens, output, np.zeros(n, np.int64), workload.source
    )
    second, per_b = _requests(waiting, True, 0.0, report=True)
    states_a, logs_a, states_b, logs_b = closed_pools(
        replicas,
        routing == "least-loaded",
        per_a,
        per_b,
        _pool_terms(*prefill, False),
        _pool_terms(*decode, True),
        np.asarray(transfer_s, float),
        output,
    )
    if states_a[:, ERROR].any() or states_b[:, ERROR].any():
        return None
    return (
        _record(per_a, first, states_a, logs_a, prefill[0], prefill[2]),
        _record(per_b, second, states_b, logs_b, decode[0], decode[2]),
    )


def _requests(
    workload: Workload, prefilled: bool, delay: float, report: bool
) -> tuple[Clients, tuple[Any, ...]]:
    """The clients of ``workload`` (front-end time ``delay``, s) and the per-request
    arrays the compiled loop shares between a pool's replicas (`engine._Requests`);
    ``report``: leaves are logged (`compiled_loop.REPORT`), not sent."""
    n = len(workload)
    clients = Clients(workload.arrival_s.tolist(), workload.max_concurrency, delay)
    concurrency = -1.0 if clients.concurrency is None else float(clients.concurrency)
    ints = np.zeros((10, n), np.int64)  # rows: compiled_loop.PROMPT ... LEFT_ID
    ints[PROMPT], ints[OUTPUT] = workload.input_tokens, workload.output_tokens
    ints[GENERATED] = 1 if prefilled else 0
    ints[OUTSIDE] = -1  # context while the KV is outside (-1: not)
    floats = np.full((8, n), math.nan)  # rows: compiled_loop.FINISH ... LEFT_AT
    floats[ARRIVAL] = clients.arrival  # engine times (infinite: not yet sent)
    floats[EARLIEST] = clients.earliest
    floats[SENT] = clients.arrival if clients.sent is None else clients.sent
    per = (
        ints,
        floats,
        np.zeros((3, n), np.bool_),  # DECODING, REJECTED, FRESH_ON
        np.array([clients.front_free, clients.delay, REPORT if report else concurrency]),
        np.array([clients.unsent, 0], np.int64),  # next unsent, leaves logged
    )
    return clients, per


def _pool_terms(
    cost: StepCost, config: SchedulerConfig, kv_capacity_tokens: int, prefilled: bool
) -> tuple[Any, ...]:
    """A pool's terms as `compiled_loop.advance` takes them: cost tables, chunked,
    prefilled, token budget, (max sequences, block tokens, KV capacity tokens, slack),
    (KV bytes per token, host link bytes/s), swap preemption."""
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
    return (
        tab,
        config.policy == "chunked",
        prefilled,
        config.max_batched_tokens,
        limits,
        link,
        config.preemption == "swap",
    )


def _record(
    per: tuple[Any, ...],
    clients: Clients,
    states: NDArray[np.int64],
    packed: tuple[list[tuple[NDArray[Any], ...]], NDArray[np.float64]],
    cost: StepCost,
    kv_capacity_tokens: int,
) -> RunRecord:
    """`engine.pool_record` of a compiled pool from `compiled_loop.package`'s logs per
    replica (runs' meta, gaps, counts, single steps, run times, run contexts, run gaps,
    run counts) and merged timeline."""
    logs, timeline = packed
    seconds, flop, moved = _work(logs, cost)
    # `emissions.Emissions.joined`: each replica's chunk gaps, then its runs'
    itl = np.concatenate([replica[1] for replica in logs] + [replica[6] for replica in logs])
    counts = np.concatenate([replica[2] for replica in logs] + [replica[7] for replica in logs])
    ints, floats, flags = per[0], per[1], per[2]
    return RunRecord(
        first_token_s=floats[FIRST],
        finish_s=floats[FINISH],
        preemptions=ints[PREEMPTIONS],
        rejected=flags[REJECTED],
        timeline_s=timeline[:, 0],
        waiting=timeline[:, 1].astype(np.int64),
        running=timeline[:, 2].astype(np.int64),
        kv_tokens=timeline[:, 3],
        kv_capacity_tokens=kv_capacity_tokens * len(logs),
        steps=int(states[:, STEPS].sum()),
        prefix_hits=np.full(ints.shape[1], -1, np.int8),
        step_s=seconds,
        step_flop=flop,
        step_bytes=moved,
        itl_s=itl,
        itl_count=counts,
        arrival_s=None if clients.sent is None else floats[SENT],
        admitted_s=floats[ADMITTED],
        engine_arrival_s=floats[ARRIVAL] if clients.delay > 0 else None,
    )


def _work(
    logs: list[tuple[NDArray[Any], ...]], cost: StepCost
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """`records.StepLog.joined` of the replicas' logs, with the decode runs' sequence
    counts spread from their meta (start, steps, sequences) a slice at a time, without a
    Python object per run or an array of every run step: the single steps of every
    replica, then the runs of every replica, costed by `genz.StepCost.step_work` (which
    is elementwise) in slices of at most `WORK_SLICE` steps."""
    single = np.concatenate([replica[3].reshape(-1, 7) for replica in logs])
    first = len(single)
    seconds = np.concatenate([single[:, 0]] + [replica[4] for replica in logs])
    flop, moved = np.empty(len(seconds)), np.empty(len(seconds))
    for a in range(0, first, WORK_SLICE):
        rows = single[a : a + WORK_SLICE]
        b = a + len(rows)
        flop[a:b], moved[a:b] = cost.step_work(*(rows[:, k] for k in range(1, 7)))
    at = first  # where the replica's runs start in the joined steps
    for replica in logs:
        contexts, meta = replica[5], replica[0].reshape(-1, 3)
        ends = np.cumsum(meta[:, 1])  # each run's end in the replica's run steps
        for a in range(0, len(contexts), WORK_SLICE):
            c = contexts[a : a + WORK_SLICE]
            b = a + len(c)
            lo, hi = np.searchsorted(ends, [a, b - 1], side="right")
            steps = np.minimum(ends[lo : hi + 1], b) - np.maximum(
                ends[lo : hi + 1] - meta[lo : hi + 1, 1], a
            )
            d = np.repeat(meta[lo : hi + 1, 2].astype(float), steps)
            zero = np.zeros(len(d))
            flop[at + a : at + b], moved[at + a : at + b] = cost.step_work(
                zero, zero, zero, d, c, d
            )
        at += len(contexts)
    return seconds, flop, moved
