"""The replica event loop compiled with numba, for the configurations most runs use.

`engine._Engine` is the reference: every feature, in Python. `compiled_loop` runs the
same loop, statement for statement and floating-point operation for operation, as numba
functions over flat arrays, for one replica without shared prefixes (open- or
closed-loop clients, with or without front-end time) and single-step scheduling
(``continuous`` or ``chunked``; recompute or swap preemption; decode pools' prefilled
requests included). `eligible` says when it applies; `simulate_pool` uses it then and
the Python loop otherwise. Results are bit for bit those of the Python loop (tests
compare both on many configurations), including numpy's pairwise summation where the
Python loop sums an array with ``ndarray.sum`` (`compiled_loop.pairwise_sum`).

Numba compiles on first use (about 25 s of CPU on a loaded 2-core machine) and caches
the machine code in ``__pycache__`` beside `compiled_loop` for later processes. Without
numba, or with ``CODESIGN_SERVING_CORE=python`` in the environment, the Python loop runs.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

from genz import StepCost

from .clients import Clients
from .compiled_loop import ERROR, STEPS, loop, njit
from .config import SchedulerConfig
from .workload import Workload

#: Environment variable that selects the loop: ``python`` forces the reference loop.
CORE_VARIABLE = "CODESIGN_SERVING_CORE"


def eligible(workload: Workload, config: SchedulerConfig, replicas: int) -> bool:
    """Whether the compiled loop covers this run (module doc). Parallel samples and
    beams (``workload.sequences > 1``) run in the Python loop, as do windowed models
    (their steps are not affine in the context: `simulate` declines them), whose KV
    occupancy is window-aware there (`occupancy`)."""
    return (
        njit is not None
        and os.environ.get(CORE_VARIABLE, "auto") != "python"
        and replicas == 1
        and config.policy in ("continuous", "chunked")
        and config.scheduler_steps == 1
        and len(workload) > 0
        and bool(np.all(workload.prefixes < 0))
        and workload.sequences == 1
    )


def simulate(
    workload: Workload,
    cost: StepCost,
    config: SchedulerConfig,
    kv_capacity_tokens: int,
    prefilled: bool,
) -> tuple[dict[str, NDArray[Any] | None], NDArray[np.float64], Any, Any, int] | None:
    """Run the compiled loop (`eligible` runs only): per-request arrays (first_token_s,
    finish_s, preemptions, rejected, admitted_s; arrival_s and engine_arrival_s, None as
    in `clients.Clients`), the timeline rows (n, 4), the
    `records.StepLog` and `emissions.Emissions` of the run, and its step count. None
    when a step exceeds the step-cost tables (the Python loop then says which) or the
    steps are not affine in the context (windowed layers, offload: not
    `StepCost.affine_in_context`)."""
    from .emissions import Emissions
    from .records import StepLog

    if not cost.affine_in_context:  # windows, offload: the Python loop costs those steps
        return None
    n = len(workload)
    clients = Clients(
        workload.arrival_s.tolist(), workload.max_concurrency, config.request_overhead_s
    )
    arrival = np.array(clients.arrival, float)  # engine times (infinite: not yet sent)
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
        arrival,
        np.array(clients.earliest, float),
        np.array(clients.arrival if clients.sent is None else clients.sent, float),
        np.array(
            [
                clients.front_free,
                clients.delay,
                -1.0 if clients.concurrency is None else float(clients.concurrency),
            ]
        ),
        np.array([clients.unsent], np.int64),
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
    state, meta, arrays = loop(
        arrival,
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
        "arrival_s": None if clients.sent is None else per[15],
        "engine_arrival_s": arrival if clients.delay > 0 else None,
    }
    return outcome, timeline.reshape(-1, 4), work, emissions, int(state[STEPS])
