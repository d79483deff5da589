"""The compiled loop of `compiled`: numba functions, each the compiled twin of one
`engine._Engine` method (named in its docstring) with the same operations in the same
order: step costs (`genz.StepCost.step_time` and ``decode_time``), chunks to clients,
closed-loop sends, joining and leaving the decoding set, preemption, admission, a prefill
step, a decode run, a replica's loop up to the next arrival (`advance`), and a pool of
replicas with its routing (`pool`). Every jitted function is in this one file: numba keys
its on-disk cache on the file of the function compiled, so a callee in another file
could change without the caller's cached machine code noticing.

A pool's replica ``e`` is row ``e`` of its arrays (``rows``: integer states at the
indices below, clocks (time and last chunk, s), waiting rings, chunked prefills, inboxes
and the times requests left it, the last two filled up to ``ROUTED`` and ``LEFT``) and
its numba lists in three pool-wide containers (``lists``: heaps; integer lists at
``INT_LISTS * e + ORDER ...``; float logs at ``FLOAT_LISTS * e + GAPS ...``); the
per-request arrays (``per``) are shared by the replicas of a pool, as `engine._Requests`
is. Numba updates two atomic reference counts per array or list argument of every call
(most of this loop's time once): the pool's functions pass `borrowed` views of their
arrays, which carry no count, and fetch from ``lists`` only the lists they use."""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

#: Decode runs of at most this many steps are costed step by step (`engine.SHORT_RUN`).
SHORT_RUN = 6

njit: Any
intrinsic: Any
try:  # numba is a dependency; the Python loop stays the fallback
    from numba import njit
    from numba.core import cgutils, types
    from numba.extending import intrinsic
except ImportError:  # pragma: no cover - exercised only without numba
    njit = intrinsic = None


def identity(function: Any) -> Any:
    return function


jit = njit(cache=True, nogil=True) if njit is not None else identity


def _borrowed(context: Any, a: Any) -> Any:
    """Typing of `borrowed`: an array of the same type, built by ``codegen``."""
    if not isinstance(a, types.Array):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        view = context.make_array(signature.args[0])(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        return view._getvalue()

    return a(a), codegen


#: ``borrowed(a)``: a view of array ``a`` (same data, shape and strides) without its
#: reference count, so calls that pass it update none. Valid while ``a`` lives: only the
#: function that owns ``a`` makes it, passes it down, and never returns it.
borrowed = intrinsic(_borrowed) if intrinsic is not None else identity


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
# index into the inbox; ROUTED, LEFT: how many requests were routed to the replica and
# left it; DUE_FIRST: the heap's smallest due step (read without fetching the heap);
# LISTED: fresh ids listed since the last chunk) and float state (``clock``: time, last
# chunk).
KV, D, G, CTX, FRESH, SWAPPED, HEAD, WAITING, STEPS, STAMP, ERROR, PREFILLING = range(12)
NEXT, ROUTED, LEFT, DUE_FIRST, LISTED = 12, 13, 14, 15, 16
STATE = 17  # integers per replica
T, LAST = 0, 1
NEVER = 1 << 62  # DUE_FIRST of an empty heap
# A replica's lists in ``lists``: integer lists (decoding order, fresh ids and their
# stamps, decode runs' meta: start, steps, sequences) and float logs (chunk gaps and
# counts, single steps (7 values each), decode runs' step times and contexts, their
# gaps and counts after the first, timeline (4 values per iteration)).
ORDER, IDS, STAMPS, META = range(4)
GAPS, COUNTS, SINGLES, RUN_TIMES, RUN_CTX, RUN_GAPS, RUN_COUNTS, TIMELINE = range(8)
INT_LISTS, FLOAT_LISTS = 4, 8
# Rows of the per-request arrays a pool's replicas share (``per``: integers, floats,
# flags, then the clients' [front end free, front-end time, concurrency or -1 or
# `REPORT`] and [next unsent, leaves logged]).
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
def emit(at: float, sequences: int, e: int, state: Any, clock: Any, per: Any, lists: Any) -> None:
    """`emissions.DecodeClock.emit`: every decoding sequence of replica ``e`` receives a
    chunk at ``at`` (its gap and count logged in the replica's GAPS and COUNTS)."""
    ints, floats, flags = per[0], per[1], per[2]
    gaps, counts = lists[2][FLOAT_LISTS * e + GAPS], lists[2][FLOAT_LISTS * e + COUNTS]
    count = sequences - state[FRESH]
    if count > 0:
        gaps.append(at - clock[LAST])
        counts.append(float(count))
    if state[LISTED]:
        ids, stamps = lists[1][INT_LISTS * e + IDS], lists[1][INT_LISTS * e + STAMPS]
        for k in range(len(ids)):
            i = ids[k]
            if flags[FRESH_ON, i] and ints[FRESH_STAMP, i] == stamps[k]:
                gaps.append(at - floats[FRESH_AT, i])
                counts.append(1.0)
                flags[FRESH_ON, i] = False
        ids.clear()
        stamps.clear()
        state[LISTED] = 0
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
def leave(i: int, t: float, state: Any, done_at: Any, per: Any) -> None:
    """Request ``i`` left the replica at ``t`` (finished or refused): logged in
    ``done_at`` (the replica's row, filled up to ``state[LEFT]``), then `send_next`."""
    done_at[state[LEFT]] = t
    state[LEFT] += 1
    send_next(i, t, per)


@jit
def join_decode(
    i: int,
    e: int,
    state: Any,
    clock: Any,
    per: Any,
    lists: Any,
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
        leave(i, clock[T], state, done_at, per)
        return
    g = state[G]
    ints[JOINED, i], ints[JOINED_CTX, i], ints[DUE, i] = g, context, g + remaining
    flags[DECODING, i] = True
    if not flags[FRESH_ON, i]:
        state[STAMP] += 1
        flags[FRESH_ON, i] = True
        ints[FRESH_STAMP, i] = state[STAMP]
        lists[1][INT_LISTS * e + IDS].append(i)
        lists[1][INT_LISTS * e + STAMPS].append(state[STAMP])
        state[LISTED] += 1
        state[FRESH] += 1
    floats[FRESH_AT, i] = clock[T]
    heap = lists[0][e]
    heapq.heappush(heap, (g + remaining, i))
    state[DUE_FIRST] = heap[0][0]
    lists[1][INT_LISTS * e + ORDER].append(i)
    state[D] += 1
    state[CTX] += context


@jit
def finish_due(
    e: int, state: Any, clock: Any, per: Any, lists: Any, slack: int, done_at: Any
) -> None:
    """`engine._Engine.finish_due`: sequences whose last token is out leave."""
    ints, floats, flags = per[0], per[1], per[2]
    heap, order = lists[0][e], lists[1][INT_LISTS * e + ORDER]
    while len(heap) > 0 and heap[0][0] <= state[G]:
        due, i = heapq.heappop(heap)
        if not flags[DECODING, i] or ints[DUE, i] != due:  # stale: it was preempted
            continue
        context = leave_decode(i, state, per, order)
        ints[GENERATED, i] = ints[OUTPUT, i]
        state[KV] -= context + slack
        floats[FINISH, i] = clock[T]
        leave(i, clock[T], state, done_at, per)
    state[DUE_FIRST] = heap[0][0] if len(heap) else NEVER


@jit
def preempt(
    e: int,
    state: Any,
    clock: Any,
    per: Any,
    lists: Any,
    waiting: Any,
    slack: int,
    link: Any,
    swap: bool,
) -> None:
    """`engine._Engine.preempt`: evict the most recently admitted decoding sequence."""
    ints = per[0]
    order = lists[1][INT_LISTS * e + ORDER]
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
    e: int,
    state: Any,
    clock: Any,
    per: Any,
    lists: Any,
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
            leave(i, clock[T], state, done_at, per)
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
            join_decode(i, e, state, clock, per, lists, slack, done_at)
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
    e: int,
    state: Any,
    clock: Any,
    per: Any,
    lists: Any,
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
    singles = lists[2][FLOAT_LISTS * e + SINGLES]
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
        emit(clock[T], d, e, state, clock, per, lists)
        state[G] += 1
        state[CTX] += d
        state[KV] += d
        finish_due(e, state, clock, per, lists, slack, done_at)
    for k in range(finishing):
        i = done[k]
        ints[GENERATED, i] += 1
        if math.isnan(floats[FIRST, i]):
            floats[FIRST, i] = clock[T]
        join_decode(i, e, state, clock, per, lists, slack, done_at)


@jit
def decode_run(
    until: float,
    tab: Any,
    e: int,
    state: Any,
    clock: Any,
    per: Any,
    lists: Any,
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
        preempt(e, state, clock, per, lists, waiting, slack, link, swap)
        return
    steps = min(state[DUE_FIRST] - state[G], room // d)
    if state[WAITING] > 0 or d + state[PREFILLING] >= max_sequences:
        until = math.inf
    first = decode_time(tab, d, float(base + d))
    if first < 0:
        state[ERROR] = 1
        return
    if until < math.inf:
        steps = max(1, min(steps, int((until - clock[T]) / first) + 1))
    logs = lists[2]
    f = FLOAT_LISTS * e
    start = clock[T]
    if steps <= SHORT_RUN:  # step by step: stop at the step during which it arrives
        singles = logs[f + SINGLES]
        elapsed, taken = first, 1
        singles.append(first)
        singles.append(0.0)
        singles.append(0.0)
        singles.append(0.0)
        singles.append(float(d))
        singles.append(float(base + d))
        singles.append(float(d))
        emit(start + first, d, e, state, clock, per, lists)
        if taken < steps and start + elapsed < until:
            gaps, counts = logs[f + GAPS], logs[f + COUNTS]
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
        run_times, run_ctx = logs[f + RUN_TIMES], logs[f + RUN_CTX]
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
        run_meta = lists[1][INT_LISTS * e + META]
        run_meta.append(at)
        run_meta.append(used)
        run_meta.append(d)
        emit(start + run_times[at], d, e, state, clock, per, lists)
        if used > 1:
            run_gaps, run_counts = logs[f + RUN_GAPS], logs[f + RUN_COUNTS]
            for k in range(at + 1, at + used):
                run_gaps.append(run_times[k])
                run_counts.append(float(d))
            clock[LAST] = start + pairwise_sum(run_times, at, used)
    clock[T] += elapsed
    state[STEPS] += steps
    state[G] += steps
    state[CTX] += steps * d
    state[KV] += steps * d
    if state[DUE_FIRST] <= state[G]:
        finish_due(e, state, clock, per, lists, slack, done_at)


@jit
def floats_of(values: Any) -> Any:
    out = np.empty(len(values))
    for k in range(len(values)):
        out[k] = values[k]
    return out


@jit
def advance(
    limit: float,
    e: int,
    rows: Any,
    lists: Any,
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
    """`engine._Engine.advance`: run replica ``e``'s steps that start before ``limit``
    (the next arrival not yet routed; infinite once all are), or until idle."""
    states, clocks, waits, pendings, inboxes, lefts = rows
    state, clock, waiting, pending = states[e], clocks[e], waits[e], pendings[e]
    inbox, done_at = inboxes[e], lefts[e]
    taken, chunks, done = scratch
    ints = per[0]
    capacity, slack = config[2], config[3]
    n = len(waiting)
    timeline = lists[2][FLOAT_LISTS * e + TIMELINE]
    while True:
        k = state[NEXT]
        routed = state[ROUTED]
        if k < routed and arrival[inbox[k]] <= clock[T]:
            while k < routed and arrival[inbox[k]] <= clock[T]:
                i = inbox[k]
                if prefilled:
                    ints[OUTSIDE, i] = ints[PROMPT, i]
                    state[SWAPPED] += 1
                waiting[(state[HEAD] + state[WAITING]) % n] = i
                state[WAITING] += 1
                k += 1
            state[NEXT] = k
        if not (state[WAITING] or state[D] or state[PREFILLING]):
            if k >= routed or arrival[inbox[k]] == math.inf:
                break
            clock[T] = max(clock[T], arrival[inbox[k]])
            continue
        if clock[T] >= limit:
            break
        until = arrival[inbox[k]] if k < routed else limit
        if chunked:
            room = budget - state[D]
            if capacity - state[KV] < state[D]:
                preempt(e, state, clock, per, lists, waiting, slack, link, swap)
            else:
                count = admit(
                    room,
                    False,
                    e,
                    state,
                    clock,
                    per,
                    lists,
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
                        until = arrival[inbox[k]] if k < state[ROUTED] else limit
                        decode_run(
                            until,
                            tab,
                            e,
                            state,
                            clock,
                            per,
                            lists,
                            waiting,
                            config,
                            link,
                            swap,
                            done_at,
                        )
                else:
                    m = 0
                    for j in range(state[PREFILLING]):
                        if room <= 0:
                            break
                        i, left = pending[j, 0], pending[j, 1]
                        q = min(left, room)
                        room -= q
                        pending[j, 1] -= q
                        chunks[m, 0], chunks[m, 1] = i, q
                        chunks[m, 2] = ints[PROMPT, i] - pending[j, 1]
                        m += 1
                    kept = 0
                    for j in range(state[PREFILLING]):
                        if pending[j, 1] > 0:
                            pending[kept, 0], pending[kept, 1] = pending[j, 0], pending[j, 1]
                            kept += 1
                    state[PREFILLING] = kept
                    prefill_step(
                        chunks, m, True, tab, e, state, clock, per, lists, done, slack, done_at
                    )
        else:
            count = 0
            if state[WAITING]:
                count = admit(
                    budget,
                    True,
                    e,
                    state,
                    clock,
                    per,
                    lists,
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
                    chunks, count, False, tab, e, state, clock, per, lists, done, slack, done_at
                )
            elif state[D]:
                k = state[NEXT]
                until = arrival[inbox[k]] if k < state[ROUTED] else limit
                decode_run(
                    until, tab, e, state, clock, per, lists, waiting, config, link, swap, done_at
                )
        if state[ERROR]:
            break
        timeline.append(clock[T])
        timeline.append(float(state[WAITING]))
        timeline.append(float(state[D] + state[PREFILLING]))
        timeline.append(float(state[KV]))


@jit
def load(states: Any, lefts: Any, e: int, at: float) -> int:
    """`engine._Engine.load`: requests routed to replica ``e`` and not finished by
    ``at`` (the times they left are sorted: a binary search, as `bisect.bisect_right`)."""
    lo, hi = 0, states[e, LEFT]
    while lo < hi:
        mid = (lo + hi) // 2
        if at < lefts[e, mid]:
            hi = mid
        else:
            lo = mid + 1
    return states[e, ROUTED] - lo


@jit
def package(replicas: int, lists: Any) -> Any:
    """Each replica's decode-run meta and logs as arrays (`pool`), and the replicas'
    timelines merged (`merged_timeline`)."""
    out = []
    for e in range(replicas):
        meta_list = lists[1][INT_LISTS * e + META]
        meta = np.empty(len(meta_list), np.int64)
        for j in range(len(meta_list)):
            meta[j] = meta_list[j]
        logs = lists[2]
        f = FLOAT_LISTS * e
        out.append(
            (
                meta,
                floats_of(logs[f + GAPS]),
                floats_of(logs[f + COUNTS]),
                floats_of(logs[f + SINGLES]),
                floats_of(logs[f + RUN_TIMES]),
                floats_of(logs[f + RUN_CTX]),
                floats_of(logs[f + RUN_GAPS]),
                floats_of(logs[f + RUN_COUNTS]),
            )
        )
    return out, merged_timeline(replicas, lists)


@jit
def merged_timeline(replicas: int, lists: Any) -> Any:
    """`records.merged_timeline` of the replicas' TIMELINE logs (rows of time, waiting,
    running, KV tokens; each replica's times in order) in one merge: every time any
    replica logged, once, and the sum over the replicas (in replica order) of each one's
    last row at or before it (0 before its first); one replica: its rows as logged."""
    logs = lists[2]
    starts = np.zeros(replicas + 1, np.int64)  # each replica's first row in ``rows``
    for e in range(replicas):
        starts[e + 1] = starts[e] + len(logs[FLOAT_LISTS * e + TIMELINE]) // 4
    rows = np.empty((starts[replicas], 4))
    for e in range(replicas):
        timeline = logs[FLOAT_LISTS * e + TIMELINE]
        for k in range(len(timeline)):
            rows[starts[e] + k // 4, k % 4] = timeline[k]
    if replicas == 1:
        return rows
    at = starts[:replicas].copy()  # each replica's next row
    held = np.zeros((replicas, 3))  # each replica's values now
    out = np.empty((starts[replicas], 4))
    m = 0
    while True:
        now, found = math.inf, False
        for e in range(replicas):
            if at[e] < starts[e + 1] and (not found or rows[at[e], 0] < now):
                now, found = rows[at[e], 0], True
        if not found:
            break
        for e in range(replicas):
            while at[e] < starts[e + 1] and rows[at[e], 0] <= now:
                held[e, 0], held[e, 1], held[e, 2] = rows[at[e], 1], rows[at[e], 2], rows[at[e], 3]
                at[e] += 1
        out[m, 0] = now
        for c in range(3):
            total = 0.0
            for e in range(replicas):
                total += held[e, c]
            out[m, c + 1] = total
        m += 1
    return out[:m].copy()


@jit
def replicas_of(replicas: int, n: int, max_sequences: int) -> Any:
    """The arrays of ``replicas`` idle replicas of one pool for ``n`` requests (`advance`'s
    ``rows``: integer states, clocks, waiting rings, chunked prefills [id, tokens left],
    inboxes, the times requests left; and ``scratch``, buffers the replicas share: taken,
    chunks, finishing ids) and their lists (``lists``: heaps, integer lists, float logs)."""
    rows = (
        np.zeros((replicas, STATE), np.int64),
        np.zeros((replicas, 2)),
        np.empty((replicas, n), np.int64),
        np.empty((replicas, max_sequences, 2), np.int64),
        np.empty((replicas, n), np.int64),
        np.empty((replicas, n)),
    )
    scratch = (
        np.empty((max_sequences, 2), np.int64),
        np.empty((max_sequences, 3), np.int64),
        np.empty(max_sequences, np.int64),
    )
    heaps = [[(0, 0)] for _ in range(replicas)]
    int_lists = [[0] for _ in range(INT_LISTS * replicas)]
    float_lists = [[0.0] for _ in range(FLOAT_LISTS * replicas)]
    for heap in heaps:
        heap.pop()
    for values in int_lists:
        values.pop()
    for logged in float_lists:
        logged.pop()
    return (rows, scratch), (heaps, int_lists, float_lists)


@jit
def views_of(owners: Any, per: Any, tab: Any) -> Any:
    """`borrowed` views of a pool's arrays (`replicas_of`'s ``rows`` and ``scratch``), its
    per-request arrays ``per`` and cost tables ``tab``; the caller keeps all three."""
    (states, clocks, waits, pendings, inboxes, lefts), (taken, chunks, done) = owners
    rows = (
        borrowed(states),
        borrowed(clocks),
        borrowed(waits),
        borrowed(pendings),
        borrowed(inboxes),
        borrowed(lefts),
    )
    shared = (
        borrowed(per[0]),
        borrowed(per[1]),
        borrowed(per[2]),
        borrowed(per[3]),
        borrowed(per[4]),
    )
    costs = (
        borrowed(tab[0]),
        borrowed(tab[1]),
        borrowed(tab[2]),
        borrowed(tab[3]),
        borrowed(tab[4]),
        borrowed(tab[5]),
        borrowed(tab[6]),
    )
    return rows, (borrowed(taken), borrowed(chunks), borrowed(done)), shared, costs


@jit
def route_to(
    states: Any, inboxes: Any, lefts: Any, least_loaded: bool, routed: int, i: int, at: float
) -> None:
    """`routing.route`'s choice for request ``i`` arriving at ``at`` (the ``routed``-th
    routed to this pool): least-loaded (lowest index on a tie) or round-robin."""
    replicas = len(states)
    best = routed % replicas
    if least_loaded and replicas > 1:
        best, fewest = 0, load(states, lefts, 0, at)
        for e in range(1, replicas):
            count = load(states, lefts, e, at)
            if count < fewest:
                best, fewest = e, count
    inboxes[best, states[best, ROUTED]] = i
    states[best, ROUTED] += 1


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
    owners, lists = replicas_of(replicas, n, config[0])  # kept to the end: see borrowed
    rows, scratch, shared, costs = views_of(owners, per, tab)
    view = borrowed(arrival)
    states, inboxes, lefts = rows[0], rows[4], rows[5]
    if replicas == 1 or not least_loaded:
        for i in range(n):
            route_to(states, inboxes, lefts, False, i, i, 0.0)
    else:
        for i in range(n):
            at = view[i]
            for e in range(replicas):
                advance(
                    at,
                    e,
                    rows,
                    lists,
                    view,
                    shared,
                    costs,
                    chunked,
                    prefilled,
                    budget,
                    config,
                    link,
                    swap,
                    scratch,
                )
                if states[e, ERROR]:
                    return owners[0][0], package(replicas, lists)
            route_to(states, inboxes, lefts, True, i, i, at)
    for e in range(replicas):
        advance(
            math.inf,
            e,
            rows,
            lists,
            view,
            shared,
            costs,
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
    return owners[0][0], package(replicas, lists)


@jit
def next_start(states: Any, clocks: Any, e: int, inboxes: Any, arrival: Any) -> float:
    """`closed_pools._next_start`: when replica ``e``'s next loop iteration starts, s
    (infinite: nothing to do)."""
    if states[e, WAITING] or states[e, D] or states[e, PREFILLING]:
        return clocks[e, T]
    k = states[e, NEXT]
    if k < states[e, ROUTED]:
        return max(clocks[e, T], arrival[inboxes[e, k]])
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
    # both kept to the end: see borrowed
    owners_a, lists_a = replicas_of(replicas[0], n, config_a[0])
    owners_b, lists_b = replicas_of(replicas[1], n, config_b[0])
    rows_a, scratch_a, shared_a, costs_a = views_of(owners_a, per_a, tab_a)
    rows_b, scratch_b, shared_b, costs_b = views_of(owners_b, per_b, tab_b)
    states_a, clocks_a, inboxes_a, lefts_a = rows_a[0], rows_a[1], rows_a[4], rows_a[5]
    states_b, clocks_b, inboxes_b, lefts_b = rows_b[0], rows_b[1], rows_b[4], rows_b[5]
    arrival_a, arrival_b = shared_a[1][ARRIVAL], shared_b[1][ARRIVAL]
    rejected, unsent, logged_a, logged_b = (
        shared_a[2][REJECTED],
        shared_a[4],
        shared_a[4],
        shared_b[4],
    )
    left_a, left_b = shared_a[1][LEFT_AT], shared_b[1][LEFT_AT]
    left_id_a, left_id_b = shared_a[0][LEFT_ID], shared_b[0][LEFT_ID]
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
                start = next_start(states_a, clocks_a, e, inboxes_a, arrival_a)
            else:
                start = next_start(states_b, clocks_b, e - replicas[0], inboxes_b, arrival_b)
            if start < now:
                now, first = start, e
        while len(leaves) and leaves[0][0] <= now:  # a client is free: it sends
            k = unsent[0]
            send(heapq.heappop(leaves)[0], shared_a)
            if unsent[0] > k:
                heapq.heappush(queue_a, (arrival_a[k], k))
        due_a = queue_a[0][0] if len(queue_a) else math.inf
        due_b = queue_b[0][0] if len(queue_b) else math.inf
        if due_a <= due_b and due_a < math.inf and due_a <= now:
            at, i = heapq.heappop(queue_a)
            route_to(states_a, inboxes_a, lefts_a, least_loaded, routed_a, i, at)
            routed_a += 1
            continue
        if due_b < due_a and due_b <= now:
            at, i = heapq.heappop(queue_b)
            arrival_b[i] = at
            route_to(states_b, inboxes_b, lefts_b, least_loaded, routed_b, i, at)
            routed_b += 1
            continue
        if now == math.inf:
            break
        limit = np.nextafter(now, math.inf)
        if first < replicas[0]:
            advance(
                limit,
                first,
                rows_a,
                lists_a,
                arrival_a,
                shared_a,
                costs_a,
                chunked_a,
                prefilled_a,
                budget_a,
                config_a,
                link_a,
                swap_a,
                scratch_a,
            )
            for j in range(seen_a, logged_a[1]):  # closed_pools' prefill_left
                t, i = left_a[j], left_id_a[j]
                if rejected[i]:
                    heapq.heappush(leaves, (t, i))
                    continue
                heapq.heappush(queue_b, (t + transfer[i], i))
                if output[i] == 1:  # its first token was its last: the client is free
                    heapq.heappush(leaves, (t, i))
            seen_a = logged_a[1]
            if states_a[first, ERROR]:
                break
        else:
            e = first - replicas[0]
            advance(
                limit,
                e,
                rows_b,
                lists_b,
                arrival_b,
                shared_b,
                costs_b,
                chunked_b,
                prefilled_b,
                budget_b,
                config_b,
                link_b,
                swap_b,
                scratch_b,
            )
            for j in range(seen_b, logged_b[1]):  # closed_pools' decode_left
                if output[left_id_b[j]] > 1:
                    heapq.heappush(leaves, (left_b[j], left_id_b[j]))
            seen_b = logged_b[1]
            if states_b[e, ERROR]:
                break
    return (
        owners_a[0][0],
        package(replicas[0], lists_a),
        owners_b[0][0],
        package(replicas[1], lists_b),
    )
