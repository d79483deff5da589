"""The compiled loop of `compiled`: numba functions, each the compiled twin of one
`engine._Engine` method (named in its docstring) with the same operations in the same
order: step costs (`genz.StepCost.step_time` and ``decode_time``), chunks to clients,
closed-loop sends, joining and leaving the decoding set, preemption, admission, a prefill
step, a decode run, a replica's loop up to the next arrival (`advance`), and a pool of
replicas with its routing (`pool`). Every jitted function is in this one file: numba keys
its on-disk cache on the file of the function compiled, so a callee in another file
could change without the caller's cached machine code noticing.
A replica's state is two small arrays (``state``: integers at the indices below;
``clock``: time and last chunk, s), numba lists (its heap, decoding order, logs, the
times requests left it, its inbox) and a ring of waiting requests; the per-request
arrays (``per``) are shared by the replicas of a pool, as `engine._Requests` is."""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

#: Decode runs of at most this many steps are costed step by step (`engine.SHORT_RUN`).
SHORT_RUN = 6

njit: Any
try:  # numba is a dependency; the Python loop stays the fallback
    from numba import njit
except ImportError:  # pragma: no cover - exercised only without numba
    njit = None


def identity(function: Any) -> Any:
    return function


jit = njit(cache=True, nogil=True) if njit is not None else identity


@jit
def pairwise_sum(a: Any, lo: int, n: int) -> float:
    """``a[lo:lo + n].sum()`` as numpy computes it for a contiguous float64 array
    (pairwise: blocks of 8 partial sums up to 128 values, halves above)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
        r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        i = 8
        stop = n - (n % 8)
        while i < stop:
            r0 += a[lo + i]
            r1 += a[lo + i + 1]
            r2 += a[lo + i + 2]
            r3 += a[lo + i + 3]
            r4 += a[lo + i + 4]
            r5 += a[lo + i + 5]
            r6 += a[lo + i + 6]
            r7 += a[lo + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[lo + i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return pairwise_sum(a, lo, half) + pairwise_sum(a, lo + half, n - half)


@jit
def step_time(
    tab: Any, tp: int, ctx: float, pairs: float, d: int, dctx: int, emitting: int, seqs: int
) -> float:
    """`genz.StepCost.step_time` with the same operations in the same order (-1.0:
    the step exceeds the tables)."""
    token, head, fixed_step, fixed_seq, compute, memory, overhead = tab
    tokens = tp + d
    if tokens <= 0:
        return 0.0
    if tokens >= token.shape[1] or emitting >= head.shape[1]:
        return -1.0
    w = tp / tokens
    v = 1 - w
    total = w * token[0, tokens] + v * token[1, tokens] + w * head[0, emitting]
    total = total + v * head[1, emitting]
    total = (
        total + w * fixed_step[0] + v * fixed_step[1] + (w * fixed_seq[0] + v * fixed_seq[1]) * seqs
    )
    for op in range(compute.shape[1]):
        a = w * compute[0, op, 0] + v * compute[1, op, 0] + compute[0, op, 1] * tp
        a = a + compute[0, op, 2] * ctx + compute[0, op, 3] * pairs
        a = a + compute[1, op, 1] * d + compute[1, op, 2] * dctx
        b = w * memory[0, op, 0] + v * memory[1, op, 0] + memory[0, op, 1] * tp
        b = b + memory[0, op, 2] * ctx + memory[0, op, 3] * pairs
        b = b + memory[1, op, 1] * d + memory[1, op, 2] * dctx
        total = total + max(a, b) + w * overhead[0, op] + v * overhead[1, op]
    return total


# Integer state (indices into ``state``; NEXT: the next routed request to arrive, an
# index into the inbox) and float state (``clock``: time, last chunk).
KV, D, G, CTX, FRESH, SWAPPED, HEAD, WAITING, STEPS, STAMP, ERROR, PREFILLING, NEXT = range(13)
T, LAST = 0, 1
# Rows of the per-request arrays a pool's replicas share (``per``: integers, floats,
# flags, then the clients' [front end free, front-end time, concurrency or -1 or
# `REPORT`] and [next unsent, leaves logged]); few arrays, as every array a kernel
# takes costs two atomic reference-count updates per call.
PROMPT, OUTPUT, GENERATED, OUTSIDE, JOINED, JOINED_CTX, DUE, PREEMPTIONS = range(8)
FRESH_STAMP, LEFT_ID = 8, 9  # OUTSIDE: context while the KV is outside (-1: not)
FINISH, FIRST, ADMITTED, ARRIVAL, EARLIEST, SENT, FRESH_AT, LEFT_AT = range(8)
DECODING, REJECTED, FRESH_ON = range(3)


@jit
def decode_time(tab: Any, d: int, context: float) -> float:
    """`genz.StepCost.decode_time` (same operations; -1.0: beyond the tables)."""
    token, head, fixed_step, fixed_seq, compute, memory, overhead = tab
    if d >= token.shape[1] or d >= head.shape[1]:
        return -1.0
    total = token[1, d] + head[1, d]
    total = total + fixed_step[1] + fixed_seq[1] * d
    for op in range(compute.shape[1]):
        c = compute[1, op, 0] + compute[1, op, 1] * d
        m = memory[1, op, 0] + memory[1, op, 1] * d
        total = total + max(c + compute[1, op, 2] * context, m + memory[1, op, 2] * context)
        total = total + overhead[1, op]
    return total


@jit
def emit(
    at: float,
    sequences: int,
    state: Any,
    clock: Any,
    per: Any,
    fresh: Any,
    gaps: Any,
    counts: Any,
) -> None:
    """`emissions.DecodeClock.emit`: every decoding sequence receives a chunk at ``at``
    (its gap and count logged in ``gaps`` and ``counts``)."""
    ids, stamps = fresh
    ints, floats, flags = per[0], per[1], per[2]
    count = sequences - state[FRESH]
    if count > 0:
        gaps.append(at - clock[LAST])
        counts.append(float(count))
    for k in range(len(ids)):
        i = ids[k]
        if flags[FRESH_ON, i] and ints[FRESH_STAMP, i] == stamps[k]:
            gaps.append(at - floats[FRESH_AT, i])
            counts.append(1.0)
            flags[FRESH_ON, i] = False
    ids.clear()
    stamps.clear()
    state[FRESH] = 0
    clock[LAST] = at


@jit
def leave_decode(i: int, state: Any, per: Any, order: Any) -> int:
    """`engine._Engine.leave_decode`: ``i`` leaves the decoding set; its context now."""
    ints, flags = per[0], per[2]
    flags[DECODING, i] = False
    context = ints[JOINED_CTX, i] + state[G] - ints[JOINED, i]
    if flags[FRESH_ON, i]:
        flags[FRESH_ON, i] = False
        state[FRESH] -= 1
    for k in range(len(order)):
        if order[k] == i:
            order.pop(k)
            break
    state[D] -= 1
    state[CTX] -= context
    return context


#: ``per[3][2]`` (the concurrency) of the pools `closed_pools` runs: leaves are logged.
REPORT = -2


@jit
def send(t: float, per: Any) -> None:
    """`clients.Clients.send_next` of closed-loop clients: a client is free at ``t``:
    the next request is sent (engine arrival, send time; the clients' state)."""
    floats, clients, unsent = per[1], per[3], per[4]
    k = unsent[0]
    if k >= floats.shape[1]:
        return
    floats[SENT, k] = max(floats[EARLIEST, k], t)
    seen = floats[SENT, k]
    if clients[1] != 0:  # Clients.front_end
        seen = max(floats[SENT, k], clients[0]) + clients[1]
        clients[0] = seen
    floats[ARRIVAL, k] = seen
    unsent[0] = k + 1


@jit
def send_next(i: int, t: float, per: Any) -> None:
    """`engine._Requests.left`: request ``i`` left its replica at ``t``: a closed-loop
    client sends the next request (`send`); in `closed_pools`' pools the leave is
    logged instead (rows LEFT_AT, LEFT_ID: time and id), as ``on_leave`` does."""
    clients, count = per[3], per[4]
    if clients[2] == REPORT:
        per[1][LEFT_AT, count[1]] = t
        per[0][LEFT_ID, count[1]] = i
        count[1] += 1
    elif clients[2] >= 0:
        send(t, per)


@jit
def join_decode(
    i: int,
    state: Any,
    clock: Any,
    per: Any,
    heap: Any,
    order: Any,
    fresh: Any,
    slack: int,
    done_at: Any,
) -> None:
    """`engine._Engine.join_decode`: ``i`` has its first token; decode the rest."""
    ints, floats, flags = per[0], per[1], per[2]
    context = ints[PROMPT, i]
    if ints[OUTSIDE, i] >= 0:
        context = ints[OUTSIDE, i]
        ints[OUTSIDE, i] = -1
        state[SWAPPED] -= 1
    remaining = ints[OUTPUT, i] - ints[GENERATED, i]
    if remaining <= 0:
        state[KV] -= context + slack
        floats[FINISH, i] = clock[T]
        done_at.append(clock[T])
        send_next(i, clock[T], per)
        return
    g = state[G]
    ints[JOINED, i], ints[JOINED_CTX, i], ints[DUE, i] = g, context, g + remaining
    flags[DECODING, i] = True
    ids, stamps = fresh
    if not flags[FRESH_ON, i]:
        state[STAMP] += 1
        flags[FRESH_ON, i] = True
        ints[FRESH_STAMP, i] = state[STAMP]
        ids.append(i)
        stamps.append(state[STAMP])
        state[FRESH] += 1
    floats[FRESH_AT, i] = clock[T]
    heapq.heappush(heap, (g + remaining, i))
    order.append(i)
    state[D] += 1
    state[CTX] += context


@jit
def finish_due(
    state: Any, clock: Any, per: Any, heap: Any, order: Any, fresh: Any, slack: int, done_at: Any
) -> None:
    """`engine._Engine.finish_due`: sequences whose last token is out leave."""
    ints, floats, flags = per[0], per[1], per[2]
    while len(heap) > 0 and heap[0][0] <= state[G]:
        due, i = heapq.heappop(heap)
        if not flags[DECODING, i] or ints[DUE, i] != due:  # stale: it was preempted
            continue
        context = leave_decode(i, state, per, order)
        ints[GENERATED, i] = ints[OUTPUT, i]
        state[KV] -= context + slack
        floats[FINISH, i] = clock[T]
        done_at.append(clock[T])
        send_next(i, clock[T], per)


@jit
def preempt(
    state: Any,
    clock: Any,
    per: Any,
    order: Any,
    fresh: Any,
    waiting: Any,
    slack: int,
    link: Any,
    swap: bool,
) -> None:
    """`engine._Engine.preempt`: evict the most recently admitted decoding sequence."""
    ints = per[0]
    victim = order[len(order) - 1]
    joined = ints[JOINED, victim]
    context = leave_decode(victim, state, per, order)
    ints[GENERATED, victim] += state[G] - joined
    state[KV] -= context + slack
    ints[PREEMPTIONS, victim] += 1
    if swap:
        ints[OUTSIDE, victim] = context
        state[SWAPPED] += 1
        clock[T] += context * link[0] / link[1]  # engine._Engine.transfer_s
    else:
        ints[PROMPT, victim] = context + 1
    state[HEAD] = (state[HEAD] - 1) % len(waiting)
    waiting[state[HEAD]] = victim
    state[WAITING] += 1


@jit
def admit(
    room: int,
    whole: bool,
    state: Any,
    clock: Any,
    per: Any,
    heap: Any,
    order: Any,
    fresh: Any,
    waiting: Any,
    taken: Any,
    config: Any,
    link: Any,
    swap: bool,
    done_at: Any,
) -> int:
    """`engine._Engine.admit`: waiting requests taken FCFS into ``taken`` (id, prompt
    tokens to compute); their count."""
    max_sequences, block_tokens, capacity, slack = config
    running = state[D] + state[PREFILLING]
    ints, floats, flags = per[0], per[1], per[2]
    count = 0
    while state[WAITING] > 0 and running + count < max_sequences:
        i = waiting[state[HEAD]]
        outside = ints[OUTSIDE, i]
        context = outside if outside >= 0 else ints[PROMPT, i]
        need = context + slack
        # `engine._Engine.first_growth`: swapped when preempted, it must also take a
        # decode step alone (else it is swapped in and out forever)
        growth = 1 if swap and ints[OUTPUT, i] > max(ints[GENERATED, i], 1) else 0
        if need + growth > capacity:  # can never fit, or never grow: refuse, not block
            state[HEAD] = (state[HEAD] + 1) % len(waiting)
            state[WAITING] -= 1
            flags[REJECTED, i] = True
            done_at.append(clock[T])
            send_next(i, clock[T], per)
            continue
        # the watermark, at least one step of every sequence, this one included (engine)
        step = state[D] + growth if state[D] else 0
        want = need + max(state[D] * block_tokens, step)
        if capacity - state[KV] < want:
            break
        if outside >= 0:  # KV comes back from host (or arrived from the prefill pool)
            state[HEAD] = (state[HEAD] + 1) % len(waiting)
            state[WAITING] -= 1
            if math.isnan(floats[ADMITTED, i]):
                floats[ADMITTED, i] = clock[T]
            state[KV] += need
            if ints[PREEMPTIONS, i]:
                clock[T] += context * link[0] / link[1]
            join_decode(i, state, clock, per, heap, order, fresh, slack, done_at)
            running = state[D] + state[PREFILLING]
            continue
        compute = ints[PROMPT, i]
        if whole and count and compute > room:
            break
        if not whole and room <= 0:
            break
        state[HEAD] = (state[HEAD] + 1) % len(waiting)
        state[WAITING] -= 1
        if math.isnan(floats[ADMITTED, i]):
            floats[ADMITTED, i] = clock[T]
        state[KV] += need
        taken[count, 0] = i
        taken[count, 1] = compute
        count += 1
        room -= compute
    return count


@jit
def prefill_step(
    chunks: Any,
    m: int,
    decode: bool,
    tab: Any,
    state: Any,
    clock: Any,
    per: Any,
    heap: Any,
    order: Any,
    fresh: Any,
    logs: Any,
    done: Any,
    slack: int,
    done_at: Any,
) -> None:
    """`engine._Engine.prefill_step` of the ``m`` chunks (id, new tokens, context after)."""
    ints, floats = per[0], per[1]
    tokens = 0.0
    ctx = 0.0
    pairs = 0.0
    finishing = 0
    for j in range(m):
        i, q, c = chunks[j, 0], chunks[j, 1], chunks[j, 2]
        tokens += q
        ctx += c
        pairs += q * c - q * (q - 1) / 2
        if c == ints[PROMPT, i]:
            done[finishing] = i
            finishing += 1
    d = state[D] if decode else 0
    seconds = step_time(tab, int(tokens), ctx, pairs, d, state[CTX] + d, d + finishing, d + m)
    if seconds < 0:
        state[ERROR] = 1
        return
    singles = logs[2]
    singles.append(seconds)
    singles.append(float(int(tokens)))
    singles.append(ctx)
    singles.append(pairs)
    singles.append(float(d))
    singles.append(float(state[CTX] + d))
    singles.append(float(d + finishing))
    clock[T] += seconds
    state[STEPS] += 1
    if decode and d:
        emit(clock[T], d, state, clock, per, fresh, logs[0], logs[1])
        state[G] += 1
        state[CTX] += d
        state[KV] += d
        finish_due(state, clock, per, heap, order, fresh, slack, done_at)
    for k in range(finishing):
        i = done[k]
        ints[GENERATED, i] += 1
        if math.isnan(floats[FIRST, i]):
            floats[FIRST, i] = clock[T]
        join_decode(i, state, clock, per, heap, order, fresh, slack, done_at)


@jit
def decode_run(
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
    done_at: Any,
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
        emit(start + first, d, state, clock, per, fresh, gaps, counts)
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
        emit(start + run_times[at], d, state, clock, per, fresh, gaps, counts)
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
        finish_due(state, clock, per, heap, order, fresh, slack, done_at)


@jit
def floats_of(values: Any) -> Any:
    out = np.empty(len(values))
    for k in range(len(values)):
        out[k] = values[k]
    return out


@jit
def advance(
    limit: float,
    engine: Any,
    arrival: Any,
    per: Any,
    tab: Any,
    chunked: bool,
    prefilled: bool,
    budget: int,
    config: Any,
    link: Any,
    swap: bool,
    scratch: Any,
) -> None:
    """`engine._Engine.advance`: run replica ``engine``'s steps that start before
    ``limit`` (the next arrival not yet routed; infinite once all are), or until idle."""
    state, clock, heap, order, fresh, logs, waiting, pending, done_at, inbox = engine
    taken, chunks, done = scratch
    ints = per[0]
    capacity, slack = config[2], config[3]
    n = len(waiting)
    timeline = logs[8]
    while True:
        k = state[NEXT]
        if k < len(inbox) and arrival[inbox[k]] <= clock[T]:
            while k < len(inbox) and arrival[inbox[k]] <= clock[T]:
                i = inbox[k]
                if prefilled:
                    ints[OUTSIDE, i] = ints[PROMPT, i]
                    state[SWAPPED] += 1
                waiting[(state[HEAD] + state[WAITING]) % n] = i
                state[WAITING] += 1
                k += 1
            state[NEXT] = k
        if not (state[WAITING] or state[D] or state[PREFILLING]):
            if k >= len(inbox) or arrival[inbox[k]] == math.inf:
                break
            clock[T] = max(clock[T], arrival[inbox[k]])
            continue
        if clock[T] >= limit:
            break
        until = arrival[inbox[k]] if k < len(inbox) else limit
        if chunked:
            room = budget - state[D]
            if capacity - state[KV] < state[D]:
                preempt(state, clock, per, order, fresh, waiting, slack, link, swap)
            else:
                count = admit(
                    room,
                    False,
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
                    swap,
                    done_at,
                )
                for j in range(count):
                    pending[state[PREFILLING], 0] = taken[j, 0]
                    pending[state[PREFILLING], 1] = taken[j, 1]
                    state[PREFILLING] += 1
                if not state[PREFILLING]:
                    if state[D]:
                        k = state[NEXT]
                        until = arrival[inbox[k]] if k < len(inbox) else limit
                        decode_run(
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
                            done_at,
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
                        chunks[m, 0], chunks[m, 1] = i, q
                        chunks[m, 2] = ints[PROMPT, i] - pending[e, 1]
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
                        done_at,
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
                    swap,
                    done_at,
                )
            if count:
                for j in range(count):
                    i = taken[j, 0]
                    chunks[j, 0], chunks[j, 1], chunks[j, 2] = i, taken[j, 1], ints[PROMPT, i]
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
                    done_at,
                )
            elif state[D]:
                k = state[NEXT]
                until = arrival[inbox[k]] if k < len(inbox) else limit
                decode_run(
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
                    done_at,
                )
        if state[ERROR]:
            break
        timeline.append(clock[T])
        timeline.append(float(state[WAITING]))
        timeline.append(float(state[D] + state[PREFILLING]))
        timeline.append(float(state[KV]))


@jit
def load(inbox: Any, done_at: Any, at: float) -> int:
    """`engine._Engine.load`: requests routed to a replica and not finished by ``at``
    (``done_at`` is sorted: a binary search, as `bisect.bisect_right`)."""
    lo, hi = 0, len(done_at)
    while lo < hi:
        mid = (lo + hi) // 2
        if at < done_at[mid]:
            hi = mid
        else:
            lo = mid + 1
    return len(inbox) - lo


@jit
def package(engines: Any) -> Any:
    """Each replica's decode-run meta and logs as arrays (`pool`)."""
    out = []
    for engine in engines:
        logs = engine[5]
        meta = np.empty(len(logs[5]), np.int64)
        for j in range(len(logs[5])):
            meta[j] = logs[5][j]
        out.append(
            (
                meta,
                floats_of(logs[0]),
                floats_of(logs[1]),
                floats_of(logs[2]),
                floats_of(logs[3]),
                floats_of(logs[4]),
                floats_of(logs[6]),
                floats_of(logs[7]),
                floats_of(logs[8]),
            )
        )
    return out


@jit
def replicas_of(replicas: int, n: int, max_sequences: int) -> Any:
    """The state of ``replicas`` idle replicas of one pool for ``n`` requests: their
    integer states and clocks (rows), each replica's bundle (`advance`'s ``engine``),
    and apart (for routing, without taking every reference of a bundle) each one's
    inbox and the times requests left it."""
    states = np.zeros((replicas, 13), np.int64)
    clocks = np.zeros((replicas, 2))
    waits = np.empty((replicas, n), np.int64)
    pendings = np.empty((replicas, max_sequences, 2), np.int64)  # chunked: [id, tokens left]
    heaps = [[(0, 0)] for _ in range(replicas)]
    int_lists = [[0] for _ in range(5 * replicas)]  # order, ids, stamps, meta, inbox per replica
    # per replica: gaps, counts, single steps, run times, run contexts, the times
    # requests left (done_at: the slot of the runs' meta, an integer list), run gaps,
    # run counts, timeline
    float_lists = [[0.0] for _ in range(9 * replicas)]
    for e in range(replicas):
        heaps[e].pop()
    for e in range(5 * replicas):
        int_lists[e].pop()
    for e in range(9 * replicas):
        float_lists[e].pop()
    engines = []
    for e in range(replicas):
        f = 9 * e
        logs = (
            float_lists[f],
            float_lists[f + 1],
            float_lists[f + 2],
            float_lists[f + 3],
            float_lists[f + 4],
            int_lists[5 * e + 3],
            float_lists[f + 6],
            float_lists[f + 7],
            float_lists[f + 8],
        )
        fresh = (int_lists[5 * e + 1], int_lists[5 * e + 2])
        engines.append(
            (
                states[e],
                clocks[e],
                heaps[e],
                int_lists[5 * e],
                fresh,
                logs,
                waits[e],
                pendings[e],
                float_lists[f + 5],
                int_lists[5 * e + 4],
            )
        )
    inboxes = [int_lists[5 * e + 4] for e in range(replicas)]
    lefts = [float_lists[9 * e + 5] for e in range(replicas)]
    return states, clocks, engines, inboxes, lefts


@jit
def scratch_of(max_sequences: int) -> Any:
    """Buffers a pool's replicas share (`advance`): taken, chunks, finishing ids."""
    return (
        np.empty((max_sequences, 2), np.int64),
        np.empty((max_sequences, 3), np.int64),
        np.empty(max_sequences, np.int64),
    )


@jit
def route_to(inboxes: Any, lefts: Any, least_loaded: bool, routed: int, i: int, at: float) -> None:
    """`routing.route`'s choice for request ``i`` arriving at ``at`` (the ``routed``-th
    routed to this pool): least-loaded (lowest index on a tie) or round-robin."""
    best = routed % len(inboxes)
    if least_loaded and len(inboxes) > 1:
        best, fewest = 0, load(inboxes[0], lefts[0], at)
        for e in range(1, len(inboxes)):
            count = load(inboxes[e], lefts[e], at)
            if count < fewest:
                best, fewest = e, count
    inboxes[best].append(i)


@jit
def pool(
    replicas: int,
    least_loaded: bool,
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
    """`engine.simulate_pool` over ``replicas`` replicas (`routing.route`: least-loaded,
    or round-robin when not ``least_loaded``), each to its end: every replica's integer
    state (rows) and its logs as arrays (`package`)."""
    n = len(arrival)
    states, _, engines, inboxes, lefts = replicas_of(replicas, n, config[0])
    scratch = scratch_of(config[0])
    if replicas == 1 or not least_loaded:
        for e in range(replicas):
            for i in range(e, n, replicas):
                inboxes[e].append(i)
    else:
        for i in range(n):
            at = arrival[i]
            for e in range(replicas):
                advance(
                    at,
                    engines[e],
                    arrival,
                    per,
                    tab,
                    chunked,
                    prefilled,
                    budget,
                    config,
                    link,
                    swap,
                    scratch,
                )
                if states[e, ERROR]:
                    return states, package(engines)
            route_to(inboxes, lefts, True, i, i, at)
    for e in range(replicas):
        advance(
            math.inf,
            engines[e],
            arrival,
            per,
            tab,
            chunked,
            prefilled,
            budget,
            config,
            link,
            swap,
            scratch,
        )
        if states[e, ERROR]:
            break
    return states, package(engines)


@jit
def next_start(states: Any, clocks: Any, e: int, inbox: Any, arrival: Any) -> float:
    """`closed_pools._next_start`: when replica ``e``'s next loop iteration starts, s
    (infinite: nothing to do)."""
    if states[e, WAITING] or states[e, D] or states[e, PREFILLING]:
        return clocks[e, T]
    k = states[e, NEXT]
    if k < len(inbox):
        return max(clocks[e, T], arrival[inbox[k]])
    return math.inf


@jit
def closed_pools(
    replicas: Any,
    least_loaded: bool,
    per_a: Any,
    per_b: Any,
    pool_a: Any,
    pool_b: Any,
    transfer: Any,
    output: Any,
) -> Any:
    """`closed_pools._ClosedPools.run`: closed-loop clients over a prefill pool (``a``:
    one-token requests) and a decode pool (``b``: prefilled), ``replicas`` (prefill,
    decode) replicas, each pool's (cost tables, chunked, prefilled, budget, limits,
    link, swap) in ``pool_a`` / ``pool_b``; ``transfer`` the KV transfer time of each
    request (s), ``output`` its output tokens. Each pool's states and logs (`pool`)."""
    n = len(output)
    tab_a, chunked_a, prefilled_a, budget_a, config_a, link_a, swap_a = pool_a
    tab_b, chunked_b, prefilled_b, budget_b, config_b, link_b, swap_b = pool_b
    states_a, clocks_a, engines_a, inboxes_a, lefts_a = replicas_of(replicas[0], n, config_a[0])
    states_b, clocks_b, engines_b, inboxes_b, lefts_b = replicas_of(replicas[1], n, config_b[0])
    scratch_a, scratch_b = scratch_of(config_a[0]), scratch_of(config_b[0])
    arrival_a, arrival_b = per_a[1][ARRIVAL], per_b[1][ARRIVAL]
    rejected, unsent, logged_a, logged_b = per_a[2][REJECTED], per_a[4], per_a[4], per_b[4]
    queue_a = [(0.0, 0)]  # requests known to arrive at each pool: (time, id) heaps
    queue_a.pop()
    for k in range(unsent[0]):
        queue_a.append((arrival_a[k], k))
    heapq.heapify(queue_a)
    queue_b = queue_a.copy()
    queue_b.clear()
    leaves = queue_b.copy()  # (time, id) not yet released to the clients
    routed_a = routed_b = seen_a = seen_b = 0
    total = replicas[0] + replicas[1]
    while True:
        now, first = math.inf, -1
        for e in range(total):
            if e < replicas[0]:
                start = next_start(states_a, clocks_a, e, inboxes_a[e], arrival_a)
            else:
                b = e - replicas[0]
                start = next_start(states_b, clocks_b, b, inboxes_b[b], arrival_b)
            if start < now:
                now, first = start, e
        while len(leaves) and leaves[0][0] <= now:  # a client is free: it sends
            k = unsent[0]
            send(heapq.heappop(leaves)[0], per_a)
            if unsent[0] > k:
                heapq.heappush(queue_a, (arrival_a[k], k))
        due_a = queue_a[0][0] if len(queue_a) else math.inf
        due_b = queue_b[0][0] if len(queue_b) else math.inf
        if due_a <= due_b and due_a < math.inf and due_a <= now:
            at, i = heapq.heappop(queue_a)
            route_to(inboxes_a, lefts_a, least_loaded, routed_a, i, at)
            routed_a += 1
            continue
        if due_b < due_a and due_b <= now:
            at, i = heapq.heappop(queue_b)
            arrival_b[i] = at
            route_to(inboxes_b, lefts_b, least_loaded, routed_b, i, at)
            routed_b += 1
            continue
        if now == math.inf:
            break
        limit = np.nextafter(now, math.inf)
        if first < replicas[0]:
            engine = engines_a[first]
            advance(
                limit,
                engine,
                arrival_a,
                per_a,
                tab_a,
                chunked_a,
                prefilled_a,
                budget_a,
                config_a,
                link_a,
                swap_a,
                scratch_a,
            )
            for j in range(seen_a, logged_a[1]):  # closed_pools' prefill_left
                t, i = per_a[1][LEFT_AT, j], per_a[0][LEFT_ID, j]
                if rejected[i]:
                    heapq.heappush(leaves, (t, i))
                    continue
                heapq.heappush(queue_b, (t + transfer[i], i))
                if output[i] == 1:  # its first token was its last: the client is free
                    heapq.heappush(leaves, (t, i))
            seen_a = logged_a[1]
        else:
            engine = engines_b[first - replicas[0]]
            advance(
                limit,
                engine,
                arrival_b,
                per_b,
                tab_b,
                chunked_b,
                prefilled_b,
                budget_b,
                config_b,
                link_b,
                swap_b,
                scratch_b,
            )
            for j in range(seen_b, logged_b[1]):  # closed_pools' decode_left
                if output[per_b[0][LEFT_ID, j]] > 1:
                    heapq.heappush(leaves, (per_b[1][LEFT_AT, j], per_b[0][LEFT_ID, j]))
            seen_b = logged_b[1]
        if engine[0][ERROR]:
            break
    return states_a, package(engines_a), states_b, package(engines_b)
