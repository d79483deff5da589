"""The numba functions the compiled loop (`compiled`) is made of, each the compiled
twin of one `engine._Engine` method (named in its docstring) with the same operations in
the same order: step costs (`genz.StepCost.step_time` and ``decode_time``), chunks to
clients, joining and leaving the decoding set, preemption, admission, a prefill step.
The loop's state is two small arrays (``state``: integers at the indices below;
``clock``: time and last chunk, s), per-request arrays (``per``) and numba lists."""

from __future__ import annotations

import heapq
import math
from typing import Any

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


# Integer state (indices into ``state``) and float state (``clock``: time, last chunk).
KV, D, G, CTX, FRESH, SWAPPED, HEAD, WAITING, STEPS, STAMP, ERROR, PREFILLING = range(12)
T, LAST = 0, 1


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
def emit(at: float, sequences: int, state: Any, clock: Any, fresh: Any, logs: Any) -> None:
    """`emissions.DecodeClock.emit`: every decoding sequence receives a chunk at ``at``."""
    gaps, counts = logs[0], logs[1]
    ids, stamps, fresh_on, fresh_at, fresh_stamp = fresh
    count = sequences - state[FRESH]
    if count > 0:
        gaps.append(at - clock[LAST])
        counts.append(float(count))
    for k in range(len(ids)):
        i = ids[k]
        if fresh_on[i] and fresh_stamp[i] == stamps[k]:
            gaps.append(at - fresh_at[i])
            counts.append(1.0)
            fresh_on[i] = False
    ids.clear()
    stamps.clear()
    state[FRESH] = 0
    clock[LAST] = at


@jit
def leave_decode(i: int, state: Any, per: Any, order: Any, fresh: Any) -> int:
    """`engine._Engine.leave_decode`: ``i`` leaves the decoding set; its context now."""
    joined_step, joined_ctx, in_decode = per[5], per[6], per[8]
    in_decode[i] = False
    context = joined_ctx[i] + state[G] - joined_step[i]
    fresh_on = fresh[2]
    if fresh_on[i]:
        fresh_on[i] = False
        state[FRESH] -= 1
    for k in range(len(order)):
        if order[k] == i:
            order.pop(k)
            break
    state[D] -= 1
    state[CTX] -= context
    return context


@jit
def join_decode(
    i: int, state: Any, clock: Any, per: Any, heap: Any, order: Any, fresh: Any, slack: int
) -> None:
    """`engine._Engine.join_decode`: ``i`` has its first token; decode the rest."""
    prompt, output, generated, finish, swapped = per[0], per[1], per[2], per[3], per[4]
    joined_step, joined_ctx, joined_due = per[5], per[6], per[7]
    context = prompt[i]
    if swapped[i] >= 0:
        context = swapped[i]
        swapped[i] = -1
        state[SWAPPED] -= 1
    remaining = output[i] - generated[i]
    if remaining <= 0:
        state[KV] -= context + slack
        finish[i] = clock[T]
        return
    g = state[G]
    joined_step[i], joined_ctx[i], joined_due[i] = g, context, g + remaining
    per[8][i] = True
    ids, stamps, fresh_on, fresh_at, fresh_stamp = fresh
    if not fresh_on[i]:
        state[STAMP] += 1
        fresh_on[i] = True
        fresh_stamp[i] = state[STAMP]
        ids.append(i)
        stamps.append(state[STAMP])
        state[FRESH] += 1
    fresh_at[i] = clock[T]
    heapq.heappush(heap, (g + remaining, i))
    order.append(i)
    state[D] += 1
    state[CTX] += context


@jit
def finish_due(
    state: Any, clock: Any, per: Any, heap: Any, order: Any, fresh: Any, slack: int
) -> None:
    """`engine._Engine.finish_due`: sequences whose last token is out leave."""
    output, generated, finish = per[1], per[2], per[3]
    joined_due, in_decode = per[7], per[8]
    while len(heap) > 0 and heap[0][0] <= state[G]:
        due, i = heapq.heappop(heap)
        if not in_decode[i] or joined_due[i] != due:  # stale: it was preempted
            continue
        context = leave_decode(i, state, per, order, fresh)
        generated[i] = output[i]
        state[KV] -= context + slack
        finish[i] = clock[T]


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
    prompt, generated, swapped, joined_step, preempted = per[0], per[2], per[4], per[5], per[10]
    victim = order[len(order) - 1]
    joined = joined_step[victim]
    context = leave_decode(victim, state, per, order, fresh)
    generated[victim] += state[G] - joined
    state[KV] -= context + slack
    preempted[victim] += 1
    if swap:
        swapped[victim] = context
        state[SWAPPED] += 1
        clock[T] += context * link[0] / link[1]  # engine._Engine.transfer_s
    else:
        prompt[victim] = context + 1
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
) -> int:
    """`engine._Engine.admit`: waiting requests taken FCFS into ``taken`` (id, prompt
    tokens to compute); their count."""
    max_sequences, block_tokens, capacity, slack = config
    running = state[D] + state[PREFILLING]
    prompt, swapped, rejected, admitted, preempted = per[0], per[4], per[11], per[12], per[10]
    count = 0
    while state[WAITING] > 0 and running + count < max_sequences:
        i = waiting[state[HEAD]]
        context = swapped[i] if swapped[i] >= 0 else prompt[i]
        need = context + slack
        if need > capacity:  # can never fit: refuse rather than block
            state[HEAD] = (state[HEAD] + 1) % len(waiting)
            state[WAITING] -= 1
            rejected[i] = True
            continue
        want = need + state[D] * block_tokens
        if capacity - state[KV] < want:
            break
        if swapped[i] >= 0:  # KV comes back from host (or arrived from the prefill pool)
            state[HEAD] = (state[HEAD] + 1) % len(waiting)
            state[WAITING] -= 1
            if math.isnan(admitted[i]):
                admitted[i] = clock[T]
            state[KV] += need
            if preempted[i]:
                clock[T] += context * link[0] / link[1]
            join_decode(i, state, clock, per, heap, order, fresh, slack)
            running = state[D] + state[PREFILLING]
            continue
        compute = prompt[i]
        if whole and count and compute > room:
            break
        if not whole and room <= 0:
            break
        state[HEAD] = (state[HEAD] + 1) % len(waiting)
        state[WAITING] -= 1
        if math.isnan(admitted[i]):
            admitted[i] = clock[T]
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
) -> None:
    """`engine._Engine.prefill_step` of the ``m`` chunks (id, new tokens, context after)."""
    prompt, generated, first = per[0], per[2], per[9]
    tokens = 0.0
    ctx = 0.0
    pairs = 0.0
    finishing = 0
    for j in range(m):
        i, q, c = chunks[j, 0], chunks[j, 1], chunks[j, 2]
        tokens += q
        ctx += c
        pairs += q * c - q * (q - 1) / 2
        if c == prompt[i]:
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
        emit(clock[T], d, state, clock, fresh, logs)
        state[G] += 1
        state[CTX] += d
        state[KV] += d
        finish_due(state, clock, per, heap, order, fresh, slack)
    for k in range(finishing):
        i = done[k]
        generated[i] += 1
        if math.isnan(first[i]):
            first[i] = clock[T]
        join_decode(i, state, clock, per, heap, order, fresh, slack)
