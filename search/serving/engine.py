"""The event loop of one replica under continuous batching (with or without chunked
prefill), paged KV blocks and preemption.

State is a handful of sums kept up to date (decoding sequences ``D``, the sum of their
contexts, KV tokens reserved) plus a heap of the decode step at which each sequence
finishes, so the loop does O(1) work per step outside the requests it touches. Runs
of decode-only steps between events (an arrival that can be admitted, a completion, KV
exhaustion) are costed as one array of steps (`genz.StepCost.step_times`).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from genz import StepCost

from .config import SchedulerConfig
from .workload import Workload

#: Decode runs of at most this many steps are costed step by step in plain Python.
SHORT_RUN = 6


@dataclass(frozen=True)
class RunRecord:
    """What one simulated replica did.

    Per request (NaN where it did not happen): ``first_token_s`` and ``finish_s``
    (absolute times, s), ``preemptions``, ``rejected`` (a prompt larger than the whole
    KV cache). Per loop iteration: ``timeline_s`` with ``waiting``, ``running`` and
    ``kv_tokens`` (KV tokens reserved) after it; ``kv_capacity_tokens``; ``steps``.
    """

    first_token_s: NDArray[np.float64]
    finish_s: NDArray[np.float64]
    preemptions: NDArray[np.int64]
    rejected: NDArray[np.bool_]
    timeline_s: NDArray[np.float64]
    waiting: NDArray[np.int64]
    running: NDArray[np.int64]
    kv_tokens: NDArray[np.float64]
    kv_capacity_tokens: int
    steps: int


class _Engine:
    """Mutable state of one run (see `simulate_continuous`)."""

    def __init__(
        self,
        workload: Workload,
        cost: StepCost,
        config: SchedulerConfig,
        kv_capacity_tokens: int,
        prefilled: bool,
    ) -> None:
        self.cost, self.config = cost, config
        self.arrival = workload.arrival_s.tolist()
        self.prompt = workload.input_tokens.tolist()  # full prompt (grows on recompute)
        self.cached = workload.cached_tokens.tolist()
        self.output = workload.output_tokens.tolist()
        n = len(self.arrival)
        self.generated = [1 if prefilled else 0] * n
        self.first = [math.nan] * n
        self.finish = [math.nan] * n
        self.preempted = [0] * n
        self.rejected = [False] * n
        # Requests whose KV cache waits outside the engine (swapped out, or prefilled by
        # another pool): id -> their context then.
        self.swapped: dict[int, int] = dict(enumerate(self.prompt)) if prefilled else {}
        self.prefix_pool = max(self.cached, default=0)
        self.capacity = kv_capacity_tokens - self.prefix_pool
        self.slack = config.block_tokens - 1
        self.t = 0.0
        self.g = 0  # decode steps taken by the decoding set
        self.d = 0  # decoding sequences
        self.ctx_sum = 0  # their contexts (attended tokens, prefix included)
        self.kv = 0  # KV tokens reserved (own tokens + one block's slack per sequence)
        self.heap: list[tuple[int, int]] = []
        # id -> (step joined, context then, step it finishes)
        self.joined: dict[int, tuple[int, int, int]] = {}
        self.order: list[int] = []  # decoding ids by admission (preemption victim: last)
        self.waiting: deque[int] = deque()
        self.prefilling: list[list[int]] = []  # [id, prompt tokens still to compute]
        self.next_arrival = 0
        self.steps = 0
        self.timeline: list[tuple[float, int, int, int]] = []

    # -- bookkeeping ---------------------------------------------------------------

    def own(self, i: int) -> int:
        """KV tokens request ``i`` holds when admitted (the shared prefix is pooled)."""
        return self.swapped.get(i, self.prompt[i]) - self.cached[i]

    def arrive(self) -> None:
        while self.next_arrival < len(self.arrival) and self.arrival[self.next_arrival] <= self.t:
            self.waiting.append(self.next_arrival)
            self.next_arrival += 1

    def join_decode(self, i: int) -> None:
        """Request ``i`` has emitted a token and holds its prompt's KV: decode the rest."""
        context = self.swapped.pop(i, self.prompt[i])
        remaining = self.output[i] - self.generated[i]
        if remaining <= 0:
            self.finish[i] = self.t
            self.kv -= context - self.cached[i] + self.slack
            return
        self.joined[i] = (self.g, context, self.g + remaining)
        heapq.heappush(self.heap, (self.g + remaining, i))
        self.order.append(i)
        self.d += 1
        self.ctx_sum += context

    def leave_decode(self, i: int) -> int:
        """Remove ``i`` from the decoding set; its context now."""
        joined_step, context, _ = self.joined.pop(i)
        context += self.g - joined_step
        self.order.remove(i)
        self.d -= 1
        self.ctx_sum -= context
        return context

    def finish_due(self) -> None:
        while self.heap and self.heap[0][0] <= self.g:
            due, i = heapq.heappop(self.heap)
            if i not in self.joined or self.joined[i][2] != due:  # stale: it was preempted
                continue
            context = self.leave_decode(i)
            self.generated[i] = self.output[i]
            self.finish[i] = self.t
            self.kv -= context - self.cached[i] + self.slack

    def preempt(self) -> None:
        """Evict the most recently admitted decoding sequence (vLLM's LIFO victim)."""
        victim = self.order[-1]
        joined_step = self.joined[victim][0]
        context = self.leave_decode(victim)
        self.generated[victim] += self.g - joined_step
        self.kv -= context - self.cached[victim] + self.slack
        self.preempted[victim] += 1
        if self.config.preemption == "swap":
            self.swapped[victim] = context
            self.t += self.transfer_s(context - self.cached[victim])
        else:  # recompute: prompt and generated tokens are prefilled again (vLLM)
            self.prompt[victim] = context + 1
        self.waiting.appendleft(victim)

    def transfer_s(self, tokens: int) -> float:
        return tokens * self.cost.kv_bytes_per_token / self.config.host_link_bytes_per_s

    def record(self) -> None:
        self.timeline.append((self.t, len(self.waiting), self.d + len(self.prefilling), self.kv))

    # -- admission -----------------------------------------------------------------

    def admit(self, token_room: int, whole: bool) -> list[int]:
        """Take waiting requests FCFS while sequences, tokens and KV allow."""
        taken: list[int] = []
        config = self.config
        while self.waiting and self.d + len(self.prefilling) + len(taken) < config.max_sequences:
            i = self.waiting[0]
            need = self.own(i) + self.slack
            if need > self.capacity:  # can never fit: refuse rather than block forever
                self.waiting.popleft()
                self.rejected[i] = True
                continue
            # Admit only with a block of growth left for every running sequence (the
            # role of vLLM's watermark): a re-admitted victim cannot be evicted again
            # before every sequence has decoded ``block_tokens`` more tokens.
            if self.kv + need + self.d * config.block_tokens > self.capacity:
                break
            if i in self.swapped:  # KV comes back from host (or arrived from the prefill pool)
                self.waiting.popleft()
                self.kv += need
                self.t += self.transfer_s(self.own(i)) if self.preempted[i] else 0.0
                self.join_decode(i)
                continue
            compute = self.prompt[i] - self.cached[i]
            if whole and taken and compute > token_room:
                break
            if not whole and token_room <= 0:
                break
            self.waiting.popleft()
            self.kv += need
            taken.append(i)
            token_room -= compute
        return taken

    # -- steps ---------------------------------------------------------------------

    def prefill_step(self, chunks: list[tuple[int, int, int]], decode: bool) -> None:
        """One step of prompt chunks ``(id, new tokens, context after)``, plus one token
        of every decoding sequence when ``decode``."""
        tokens = ctx = pairs = 0.0
        done = []
        for i, q, c in chunks:
            tokens += q
            ctx += c
            pairs += q * c - q * (q - 1) / 2
            if c == self.prompt[i]:
                done.append(i)
        d = self.d if decode else 0
        self.t += self.cost.step_time(
            int(tokens), ctx, pairs, d, self.ctx_sum + d, d + len(done), d + len(chunks)
        )
        self.steps += 1
        if decode and d:
            self.g += 1
            self.ctx_sum += d
            self.kv += d
            self.finish_due()
        for i in done:
            self.generated[i] += 1
            if math.isnan(self.first[i]):
                self.first[i] = self.t
            self.join_decode(i)

    def decode_run(self) -> None:
        """Decode-only steps until the next event."""
        room = self.capacity - self.kv
        if room < self.d:
            self.preempt()
            return
        steps = min(self.heap[0][0] - self.g, room // self.d)
        until = math.inf
        blocked = self.waiting or self.d + len(self.prefilling) >= self.config.max_sequences
        if not blocked and self.next_arrival < len(self.arrival):
            until = self.arrival[self.next_arrival]
        d, base = self.d, self.ctx_sum
        first = self.cost.step_time(0, 0.0, 0.0, d, base + d, d, d)
        if until < math.inf:
            steps = max(1, min(steps, int((until - self.t) / first) + 1))
        if steps <= SHORT_RUN:  # plain Python: stop at the step during which it arrives
            elapsed, taken = first, 1
            while taken < steps and self.t + elapsed < until:
                taken += 1
                elapsed += self.cost.step_time(0, 0.0, 0.0, d, base + d * taken, d, d)
            steps = taken
        else:
            j = np.arange(1, steps + 1, dtype=float)
            zero = np.zeros(steps)
            ends = np.cumsum(
                self.cost.step_times(zero, zero, zero, d + zero, base + d * j, d + zero, d + zero)
            )
            if until < math.inf:  # stop after the step during which the request arrives
                steps = min(int(np.searchsorted(ends, until - self.t)) + 1, steps)
            elapsed = float(ends[steps - 1])
        self.t += elapsed
        self.steps += steps
        self.g += steps
        self.ctx_sum += steps * d
        self.kv += steps * d
        self.finish_due()

    def run(self, progress: Callable[[int], None] | None) -> None:
        chunked = self.config.policy == "chunked"
        budget = self.config.max_batched_tokens
        reported = 0
        while True:
            self.arrive()
            if not (self.waiting or self.d or self.prefilling):
                if self.next_arrival >= len(self.arrival):
                    break
                self.t = max(self.t, self.arrival[self.next_arrival])
                continue
            if chunked:
                self.chunked_step(budget)
            else:
                taken = self.admit(budget, whole=True)
                if taken:
                    self.prefill_step([(i, self.own(i), self.prompt[i]) for i in taken], False)
                elif self.d:
                    self.decode_run()
            self.record()
            if progress is not None and self.next_arrival - reported >= 2000:
                progress(self.next_arrival - reported)
                reported = self.next_arrival
        if progress is not None:
            progress(self.next_arrival - reported)

    def chunked_step(self, budget: int) -> None:
        """Decode every running sequence and fill the rest of the budget with chunks."""
        room = budget - self.d
        if self.capacity - self.kv < self.d:
            self.preempt()
            return
        for i in self.admit(room, whole=False):
            self.prefilling.append([i, self.own(i)])
        if not self.prefilling:
            if self.d:
                self.decode_run()
            return
        chunks = []
        for entry in self.prefilling:
            if room <= 0:
                break
            i, left = entry
            q = min(left, room)
            room -= q
            entry[1] -= q
            chunks.append((i, q, self.prompt[i] - entry[1]))
        self.prefilling = [entry for entry in self.prefilling if entry[1] > 0]
        self.prefill_step(chunks, decode=True)


def simulate_continuous(
    workload: Workload,
    cost: StepCost,
    config: SchedulerConfig,
    kv_capacity_tokens: int,
    *,
    prefilled: bool = False,
    progress: Callable[[int], None] | None = None,
) -> RunRecord:
    """Run ``workload`` through one replica with the ``continuous`` or ``chunked`` policy.

    ``prefilled`` requests arrive with their prompt's KV cache and first token (the
    decode pool of disaggregated serving). ``progress`` is called with the count of
    newly arrived requests now and then.
    """
    engine = _Engine(workload, cost, config, kv_capacity_tokens, prefilled)
    engine.run(progress)
    timeline = np.asarray(engine.timeline, float).reshape(-1, 4)
    return RunRecord(
        first_token_s=np.asarray(engine.first, float),
        finish_s=np.asarray(engine.finish, float),
        preemptions=np.asarray(engine.preempted, np.int64),
        rejected=np.asarray(engine.rejected, bool),
        timeline_s=timeline[:, 0],
        waiting=timeline[:, 1].astype(np.int64),
        running=timeline[:, 2].astype(np.int64),
        kv_tokens=timeline[:, 3],
        kv_capacity_tokens=kv_capacity_tokens,
        steps=engine.steps,
    )
