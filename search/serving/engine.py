"""The event loop of replicas under continuous batching (with or without chunked
prefill), paged KV blocks, prefix caching and preemption.

State is a handful of sums kept up to date (decoding sequences ``D``, the sum of their
contexts, KV tokens reserved) plus a heap of the decode step at which each sequence
finishes, so the loop does O(1) work per step outside the requests it touches. Runs
of decode-only steps between events (an arrival that can be admitted, a completion, KV
exhaustion) are costed as one array of steps (`genz.StepCost.decode_times`).

Prefix cache (vLLM's automatic prefix caching): a replica keeps the KV of every shared
prefix it has computed, in the same paged budget as the sequences. A request whose
prefix is resident computes and stores only its other tokens (a hit); on a miss it
prefills the whole prompt and its prefix becomes resident. A prefix no running or
swapped-out sequence uses stays cached until KV blocks run out, then the least
recently used one is evicted, before any sequence is preempted. A sequence swapped out
takes all its blocks to host, its prefix's too, and brings them back as its own (vLLM's
swap copies every block of the sequence); a recomputed one looks its prefix up again
when re-admitted. A prefix counts as
resident from the admission of the request that computes it (a request admitted while
it is being prefilled counts as a hit), and it takes its token count of the budget
(partial blocks are not split out).

Closed-loop clients (`Workload.max_concurrency` C, one replica): the first C requests
are sent at their earliest send times; each time a request leaves (finishes, or is
rejected), the next unsent one is sent at the later of that moment and its own earliest
send time (a first-come-first-served semaphore of C slots, as ``vllm bench serve
--max-concurrency`` holds). The times they were sent are the record's ``arrival_s``.

A pool of replicas (`simulate_pool`) routes requests with `routing.route`: by default
every replica is advanced to each arrival and the request goes to the least-loaded
one (fewest requests routed there and not finished by then, lowest index on a tie).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
from numpy.typing import NDArray

from genz import StepCost
from roofline import InputError

from .config import SchedulerConfig
from .emissions import DecodeClock, Emissions
from .routing import route
from .workload import Workload

#: Decode runs of at most this many steps are costed step by step in plain Python.
SHORT_RUN = 6


@dataclass(frozen=True)
class RunRecord:
    """What one simulated replica did.

    Per request (NaN where it did not happen): ``first_token_s`` and ``finish_s``
    (absolute times, s), ``preemptions``, ``rejected`` (a prompt larger than the whole
    KV cache), ``prefix_hits`` (1: its prefix was cached at its first admission, 0: it
    was not, -1: no prefix or never admitted). Per loop iteration: ``timeline_s`` with
    ``waiting``, ``running`` and ``kv_tokens`` (KV tokens reserved, cached prefixes
    included) after it (summed over the replicas of a pool); ``kv_capacity_tokens``
    (of the pool); ``steps`` (of all its replicas). Per step of every replica:
    ``step_s`` (its time, s), ``step_flop`` and ``step_bytes`` (per-device FLOP and
    main-memory bytes, `genz.StepCost.step_work`), for the energy of the run.
    Per streamed chunk: ``itl_s`` (gaps, s) with ``itl_count`` (sequences that saw
    each), `emissions.Emissions`. ``arrival_s``: when each request was sent by its
    client (None: at the workload's arrival times and seen by the engine then: open
    loop, no front-end time). ``admitted_s``: when each was first admitted to a batch
    (its queueing delay ends; None where not recorded). ``engine_arrival_s``: when the
    engine saw each (send plus front-end time; None without a front-end time).
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
    prefix_hits: NDArray[np.int8]
    step_s: NDArray[np.float64]
    step_flop: NDArray[np.float64]
    step_bytes: NDArray[np.float64]
    itl_s: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    itl_count: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    arrival_s: NDArray[np.float64] | None = None
    admitted_s: NDArray[np.float64] | None = None
    engine_arrival_s: NDArray[np.float64] | None = None


class StepLog:
    """Time (s) and aggregates of every step a replica ran (the arguments of
    `genz.StepCost.step_work`: prefill tokens, their context and pair sums, decode
    sequences, their context sum, emitting sequences): single steps as seven numbers
    each in one flat list, runs of decode-only steps as (times, sequences, context sums). FLOP and bytes are
    computed once, vectorised, by `joined`, off the simulation's hot path."""

    def __init__(self) -> None:
        self.steps: list[float] = []
        self.runs: list[tuple[NDArray[np.float64], int, NDArray[np.float64]]] = []

    def add(
        self,
        seconds: float,
        prefill_tokens: float,
        prefill_context_sum: float,
        prefill_pairs_sum: float,
        decode_sequences: float,
        decode_context_sum: float,
        emitting: float,
    ) -> None:
        self.steps.extend(
            (
                seconds,
                prefill_tokens,
                prefill_context_sum,
                prefill_pairs_sum,
                decode_sequences,
                decode_context_sum,
                emitting,
            )
        )

    def extend_decode(
        self, seconds: NDArray[np.float64], sequences: int, context_sums: NDArray[np.float64]
    ) -> None:
        """Decode-only steps of ``sequences`` sequences (all emitting) at ``context_sums``."""
        self.runs.append((seconds, sequences, context_sums))

    @staticmethod
    def joined(logs: Sequence[StepLog], cost: StepCost) -> tuple[NDArray[np.float64], ...]:
        """Every step of ``logs`` (replicas sharing ``cost``) as three arrays (seconds,
        per-device FLOP, bytes): the single steps of every log, then the runs of every
        log, each in the order it was logged."""
        single = np.concatenate(
            [np.fromiter(log.steps, float, len(log.steps)).reshape(-1, 7) for log in logs]
        )
        runs = [run for log in logs for run in log.runs]
        lengths = [len(run[0]) for run in runs]
        sequences = np.repeat(np.array([float(run[1]) for run in runs]), lengths)
        zero = np.zeros(len(sequences))

        def column(k: int, tail: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.concatenate([single[:, k], tail])

        seconds = column(0, np.concatenate([run[0] for run in runs]) if runs else zero)
        contexts = column(5, np.concatenate([run[2] for run in runs]) if runs else zero)
        decoding = column(4, sequences)
        flop, moved = cost.step_work(
            column(1, zero),
            column(2, zero),
            column(3, zero),
            decoding,
            contexts,
            column(6, sequences),
        )
        return seconds, flop, moved


class Clients:
    """When each request is sent and when the engine sees it (module doc): open loop
    (every request sent at its arrival time) or closed loop of ``concurrency`` clients;
    ``delay`` is `SchedulerConfig.request_overhead_s`, the time in a first-come-first-
    served front end between a request's send and the engine seeing it.
    ``arrival`` (engine times; infinite for closed-loop requests not yet sent) is the
    list the replica reads; ``sent`` the send times (None when they are the arrivals)."""

    def __init__(self, arrivals: list[float], concurrency: int | None, delay: float) -> None:
        self.concurrency, self.delay = concurrency, delay
        self.arrival = arrivals
        self.earliest = arrivals
        self.sent: list[float] | None = None
        self.unsent = len(arrivals)
        self.front_free = -math.inf  # when the front end takes the next request
        if concurrency is None and delay == 0:
            return
        self.earliest = list(arrivals)
        self.sent = list(arrivals)
        first = len(arrivals) if concurrency is None else min(concurrency, len(arrivals))
        self.unsent = first
        for k in range(first):
            self.arrival[k] = self.front_end(self.earliest[k])
        self.arrival[first:] = [math.inf] * (len(arrivals) - first)

    def front_end(self, sent: float) -> float:
        """When the engine sees a request sent at ``sent``: it waits for the front end
        to finish the request before it, then spends ``delay`` there."""
        if self.delay == 0:
            return sent
        seen = max(sent, self.front_free) + self.delay
        self.front_free = seen
        return seen

    def engine_arrivals(self) -> NDArray[np.float64] | None:
        """When the engine saw each request (None without a front-end time)."""
        return np.asarray(self.arrival, float) if self.delay > 0 else None

    def send_next(self, t: float) -> None:
        """A closed-loop client is free at ``t``: send the next request."""
        k = self.unsent
        if self.concurrency is None or k >= len(self.arrival):
            return
        assert self.sent is not None
        self.sent[k] = max(self.earliest[k], t)
        self.arrival[k] = self.front_end(self.sent[k])
        self.unsent = k + 1


class _Requests:
    """Per-request state, shared by the replicas of a pool (lists indexed by request)."""

    def __init__(self, workload: Workload, prefilled: bool, delay: float = 0.0) -> None:
        self.clients = Clients(workload.arrival_s.tolist(), workload.max_concurrency, delay)
        self.arrival = self.clients.arrival  # engine times (sent + front end)
        self.prompt = workload.input_tokens.tolist()  # full prompt (grows on recompute)
        self.output = workload.output_tokens.tolist()
        self.prefix = workload.prefixes.tolist()
        self.prefix_tokens = workload.prefix_tokens.tolist()
        n = len(self.arrival)
        self.generated = [1 if prefilled else 0] * n
        self.first = [math.nan] * n
        self.finish = [math.nan] * n
        self.preempted = [0] * n
        self.rejected = [False] * n
        self.hits = [-1] * n
        self.admitted = [math.nan] * n  # first admission (queueing delay ends)


class _Engine:
    """Mutable state of one run (see `simulate_continuous`)."""

    def __init__(
        self,
        requests: _Requests,
        cost: StepCost,
        config: SchedulerConfig,
        kv_capacity_tokens: int,
        prefilled: bool,
    ) -> None:
        self.cost, self.config, self.r = cost, config, requests
        self.prefilled = prefilled
        self.closed = requests.clients.concurrency is not None
        self.arrival, self.prompt, self.output = requests.arrival, requests.prompt, requests.output
        self.generated, self.first, self.finish = (
            requests.generated,
            requests.first,
            requests.finish,
        )
        self.prefix, self.prefix_tokens = requests.prefix, requests.prefix_tokens
        self.inbox: list[int] = []  # requests routed here, in arrival order
        self.done_at: list[float] = []  # times requests left (finished or rejected), sorted
        # Requests whose KV cache waits outside the engine (swapped out, or prefilled by
        # another pool): id -> their context then.
        self.swapped: dict[int, int] = {}
        self.capacity = kv_capacity_tokens
        self.slack = config.block_tokens - 1
        # Prefix cache: resident prefixes in use (id -> [tokens, users]) and idle ones
        # (id -> tokens, least recently used first); the requests holding one.
        self.busy: dict[int, list[int]] = {}
        self.idle: OrderedDict[int, int] = OrderedDict()
        self.cache_tokens = 0
        self.holding: set[int] = set()
        self.t = 0.0
        self.limit = math.inf  # the next arrival not yet routed (pools)
        self.g = 0  # decode steps taken by the decoding set
        self.d = 0  # decoding sequences
        self.ctx_sum = 0  # their contexts (attended tokens, prefix included)
        self.kv = 0  # KV tokens of sequences (own tokens + one block's slack each)
        self.heap: list[tuple[int, int]] = []
        # id -> (step joined, context then, step it finishes)
        self.joined: dict[int, tuple[int, int, int]] = {}
        self.order: list[int] = []  # decoding ids by admission (preemption victim: last)
        self.waiting: deque[int] = deque()
        self.prefilling: list[list[int]] = []  # [id, prompt tokens still to compute]
        self.next_arrival = 0
        self.steps = 0
        self.timeline: list[tuple[float, int, int, int]] = []
        self.work = StepLog()
        self.emissions = Emissions()
        self.clock = DecodeClock(self.emissions)

    # -- bookkeeping ---------------------------------------------------------------

    def own(self, i: int) -> int:
        """KV tokens request ``i`` holds itself when admitted."""
        context = self.swapped.get(i, self.prompt[i]) if self.swapped else self.prompt[i]
        return context - self.prefix_tokens[i] if self.prefix[i] >= 0 else context

    def own_at(self, i: int, context: int) -> int:
        """KV tokens of ``i``'s own at ``context`` (a shared prefix is the cache's)."""
        return context - self.prefix_tokens[i] if self.prefix[i] >= 0 else context

    def load(self, at: float) -> int:
        """Requests routed here and not finished by ``at``."""
        return len(self.inbox) - bisect_right(self.done_at, at)

    def upcoming(self) -> float:
        """When the next request may arrive here."""
        if self.next_arrival < len(self.inbox):
            return self.arrival[self.inbox[self.next_arrival]]
        return self.limit

    def arrive(self) -> None:
        inbox = self.inbox
        while self.next_arrival < len(inbox) and self.arrival[inbox[self.next_arrival]] <= self.t:
            i = inbox[self.next_arrival]
            if self.prefilled:
                self.swapped[i] = self.prompt[i]
            self.waiting.append(i)
            self.next_arrival += 1

    def leave(self, i: int) -> None:
        """Request ``i`` has finished here."""
        self.finish[i] = self.t
        self.done_at.append(self.t)
        self.release(i)
        if self.closed:
            self.r.clients.send_next(self.t)

    def join_decode(self, i: int) -> None:
        """Request ``i`` has emitted a token and holds its prompt's KV: decode the rest."""
        context = self.swapped.get(i, self.prompt[i])
        own = self.own(i)
        self.swapped.pop(i, None)
        remaining = self.output[i] - self.generated[i]
        if remaining <= 0:
            self.kv -= own + self.slack
            self.leave(i)
            return
        self.joined[i] = (self.g, context, self.g + remaining)
        self.clock.join(i, self.t)
        heapq.heappush(self.heap, (self.g + remaining, i))
        self.order.append(i)
        self.d += 1
        self.ctx_sum += context

    def leave_decode(self, i: int) -> int:
        """Remove ``i`` from the decoding set; its context now."""
        joined_step, context, _ = self.joined.pop(i)
        context += self.g - joined_step
        self.clock.drop(i)
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
            self.kv -= self.own_at(i, context) + self.slack
            self.leave(i)

    def preempt(self) -> None:
        """Evict the most recently admitted decoding sequence (vLLM's LIFO victim)."""
        victim = self.order[-1]
        joined_step = self.joined[victim][0]
        context = self.leave_decode(victim)
        self.generated[victim] += self.g - joined_step
        own = self.own_at(victim, context)
        self.kv -= own + self.slack
        self.r.preempted[victim] += 1
        self.release(victim)
        if self.config.preemption == "swap":  # all its blocks go to host, shared ones too
            self.prefix[victim] = -1  # and come back as its own
            self.swapped[victim] = context
            self.t += self.transfer_s(context)
        else:  # recompute: prompt and generated tokens are prefilled again (vLLM)
            self.prompt[victim] = context + 1
        self.waiting.appendleft(victim)

    def transfer_s(self, tokens: int) -> float:
        return tokens * self.cost.kv_bytes_per_token / self.config.host_link_bytes_per_s

    def record(self) -> None:
        running = self.d + len(self.prefilling)
        self.timeline.append((self.t, len(self.waiting), running, self.kv + self.cache_tokens))

    # -- prefix cache --------------------------------------------------------------

    def resident(self, prefix: int) -> bool:
        return prefix in self.busy or prefix in self.idle

    def evict(self, keep: int) -> bool:
        """Drop the least recently used idle prefix other than ``keep``; False if none."""
        for prefix in self.idle:
            if prefix != keep:
                self.cache_tokens -= self.idle.pop(prefix)
                return True
        return False

    def acquire(self, i: int) -> None:
        """Request ``i`` uses its prefix (computing it makes it resident)."""
        prefix = self.prefix[i]
        if self.r.hits[i] < 0:
            self.r.hits[i] = int(self.resident(prefix))
        if prefix in self.busy:
            self.busy[prefix][1] += 1
        elif prefix in self.idle:
            self.busy[prefix] = [self.idle.pop(prefix), 1]
        else:
            tokens = self.prefix_tokens[i]
            self.busy[prefix] = [tokens, 1]
            self.cache_tokens += tokens
        self.holding.add(i)

    def release(self, i: int) -> None:
        if i not in self.holding:
            return
        self.holding.remove(i)
        prefix = self.prefix[i]
        entry = self.busy[prefix]
        entry[1] -= 1
        if entry[1] == 0:
            del self.busy[prefix]
            self.idle[prefix] = entry[0]  # most recently used

    def free(self) -> int:
        """KV tokens neither sequences nor cached prefixes hold."""
        return self.capacity - self.kv - self.cache_tokens

    # -- admission -----------------------------------------------------------------

    def admit(self, token_room: int, whole: bool) -> list[tuple[int, int]]:
        """Take waiting requests FCFS while sequences, tokens and KV allow; the taken
        ones with the prompt tokens each computes."""
        taken: list[tuple[int, int]] = []
        config = self.config
        while self.waiting and self.d + len(self.prefilling) + len(taken) < config.max_sequences:
            i = self.waiting[0]
            prefix = self.prefix[i]
            cached = prefix >= 0 and self.resident(prefix)
            need = self.own(i) + self.slack
            extra = self.prefix_tokens[i] if prefix >= 0 and not cached else 0
            # Can never fit (with its prefix resident): refuse rather than block.
            if need + (self.prefix_tokens[i] if prefix >= 0 else 0) > self.capacity:
                self.waiting.popleft()
                self.r.rejected[i] = True
                self.done_at.append(self.t)
                if self.closed:
                    self.r.clients.send_next(self.t)
                continue
            # Admit only with a block of growth left for every running sequence (the
            # role of vLLM's watermark): a re-admitted victim cannot be evicted again
            # before every sequence has decoded ``block_tokens`` more tokens.
            want = need + extra + self.d * config.block_tokens
            while self.free() < want and self.evict(keep=prefix):
                pass
            if self.free() < want:
                break
            if i in self.swapped:  # KV comes back from host (or arrived from the prefill pool)
                self.waiting.popleft()
                if math.isnan(self.r.admitted[i]):
                    self.r.admitted[i] = self.t
                self.kv += need
                self.t += self.transfer_s(self.own(i)) if self.r.preempted[i] else 0.0
                if prefix >= 0:
                    self.acquire(i)
                self.join_decode(i)
                continue
            compute = self.prompt[i] - (self.prefix_tokens[i] if cached else 0)
            if whole and taken and compute > token_room:
                break
            if not whole and token_room <= 0:
                break
            self.waiting.popleft()
            if math.isnan(self.r.admitted[i]):
                self.r.admitted[i] = self.t
            self.kv += need
            if prefix >= 0:
                self.acquire(i)
            taken.append((i, compute))
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
        seconds = self.cost.step_time(
            int(tokens), ctx, pairs, d, self.ctx_sum + d, d + len(done), d + len(chunks)
        )
        self.work.add(seconds, int(tokens), ctx, pairs, d, self.ctx_sum + d, d + len(done))
        self.t += seconds
        self.steps += 1
        if decode and d:
            self.clock.emit(self.t, d)
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
        d, base, cost, work = self.d, self.ctx_sum, self.cost, self.work
        room = self.free()
        if room < d:
            if not self.evict(keep=-1):
                self.preempt()
            return
        steps = min(self.heap[0][0] - self.g, room // d)
        until = math.inf
        if not (self.waiting or d + len(self.prefilling) >= self.config.max_sequences):
            until = self.upcoming()
        first = cost.decode_time(d, base + d)
        if until < math.inf:
            steps = max(1, min(steps, int((until - self.t) / first) + 1))
        if steps <= SHORT_RUN:  # plain Python: stop at the step during which it arrives
            start, elapsed, taken = self.t, first, 1
            log, gaps, decode_time = work.steps.extend, self.emissions, cost.decode_time
            log((first, 0, 0.0, 0.0, d, base + d, d))
            self.clock.emit(start + first, d)
            while taken < steps and start + elapsed < until:
                taken += 1
                context = base + d * taken
                seconds = decode_time(d, context)
                log((seconds, 0, 0.0, 0.0, d, context, d))
                elapsed += seconds
                gaps.add(seconds, d)
            self.clock.last = start + elapsed
            steps = taken
        else:
            contexts = base + d * np.arange(1, steps + 1, dtype=float)
            times = cost.decode_times(d, contexts)
            ends = np.cumsum(times)
            if until < math.inf:  # stop after the step during which the request arrives
                steps = min(int(ends.searchsorted(until - self.t)) + 1, steps)
            elapsed = float(ends[steps - 1])
            work.extend_decode(times[:steps], d, contexts[:steps])
            self.clock.emit_run(self.t, times[:steps], d)
        self.t += elapsed
        self.steps += steps
        self.g += steps
        self.ctx_sum += steps * d
        self.kv += steps * d
        self.finish_due()

    def decode_block(self, n: int) -> None:
        """One multi-step block (`SchedulerConfig.scheduler_steps`): ``n`` decode steps
        of the whole decoding set, planned once; its tokens are emitted together at its
        end, when sequences that ended inside it leave. The block reserves ``n`` KV
        slots per sequence and is shortened when fewer are free."""
        d = self.d
        room = self.free()
        if room < d:
            if not self.evict(keep=-1):
                self.preempt()
            return
        n = min(n, room // d)
        context = self.ctx_sum + d * np.arange(1, n + 1, dtype=float)
        times = self.cost.decode_times(d, context)
        self.work.extend_decode(times, d, context)
        self.t += float(times.sum())
        self.clock.emit(self.t, d)
        self.steps += n
        self.g += n
        self.ctx_sum += n * d
        self.kv += n * d
        self.finish_due()

    def advance(self, limit: float, progress: Callable[[int], None] | None = None) -> None:
        """Run the steps that start before ``limit`` (the next arrival not yet routed
        anywhere; infinite once every request is routed), or until idle."""
        self.limit = limit
        chunked = self.config.policy == "chunked"
        budget = self.config.max_batched_tokens
        block = self.config.scheduler_steps
        reported = self.next_arrival
        while True:
            self.arrive()
            if not (self.waiting or self.d or self.prefilling):
                if self.next_arrival >= len(self.inbox):
                    break
                if self.arrival[self.inbox[self.next_arrival]] == math.inf:
                    break  # closed loop: nothing in flight sends it (not reached)
                self.t = max(self.t, self.arrival[self.inbox[self.next_arrival]])
                continue
            if self.t >= limit:
                break
            if chunked:
                self.chunked_step(budget)
            else:
                taken = self.admit(budget, whole=True) if self.waiting else []
                if taken:
                    self.prefill_step([(i, q, self.prompt[i]) for i, q in taken], False)
                elif self.d and block > 1:
                    self.decode_block(block)
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
        if self.free() < self.d:
            if not self.evict(keep=-1):
                self.preempt()
            return
        for i, q in self.admit(room, whole=False):
            self.prefilling.append([i, q])
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


def simulate_pool(
    workload: Workload,
    cost: StepCost,
    config: SchedulerConfig,
    kv_capacity_tokens: int,
    *,
    replicas: int = 1,
    prefilled: bool = False,
    progress: Callable[[int], None] | None = None,
    routing: str = "least-loaded",
) -> RunRecord:
    """Run ``workload`` through ``replicas`` identical replicas with the
    ``continuous`` or ``chunked`` policy, each request routed by ``routing``
    (`routing.route`: least-loaded by default); one replica takes every request.

    ``prefilled`` requests arrive with their prompt's KV cache and first token (the
    decode pool of disaggregated serving). ``progress`` is called with the count of
    newly arrived requests now and then (one replica only).
    """
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise InputError(f"replicas must be an integer >= 1, got {replicas!r}")
    refuse_closed_pool(workload, replicas)
    requests = _Requests(workload, prefilled, 0.0 if prefilled else config.request_overhead_s)
    engines = [
        _Engine(requests, cost, config, kv_capacity_tokens, prefilled) for _ in range(replicas)
    ]
    if replicas == 1:
        engines[0].inbox = list(range(len(workload)))
        engines[0].advance(math.inf, progress)
    else:
        route(requests.arrival, engines, routing)
    timeline = merged_timeline([engine.timeline for engine in engines])
    seconds, flop, moved = StepLog.joined([engine.work for engine in engines], cost)
    itl, counts = Emissions.joined([engine.emissions for engine in engines])
    return RunRecord(
        first_token_s=np.asarray(requests.first, float),
        finish_s=np.asarray(requests.finish, float),
        preemptions=np.asarray(requests.preempted, np.int64),
        rejected=np.asarray(requests.rejected, bool),
        timeline_s=timeline[:, 0],
        waiting=timeline[:, 1].astype(np.int64),
        running=timeline[:, 2].astype(np.int64),
        kv_tokens=timeline[:, 3],
        kv_capacity_tokens=kv_capacity_tokens * replicas,
        steps=sum(engine.steps for engine in engines),
        prefix_hits=np.asarray(requests.hits, np.int8),
        step_s=seconds,
        step_flop=flop,
        step_bytes=moved,
        itl_s=itl,
        itl_count=counts,
        arrival_s=None if requests.clients.sent is None else np.asarray(requests.clients.sent),
        admitted_s=np.asarray(requests.admitted, float),
        engine_arrival_s=requests.clients.engine_arrivals(),
    )


def refuse_closed_pool(workload: Workload, replicas: int) -> None:
    """Closed-loop clients are simulated on one replica only."""
    if workload.max_concurrency is not None and replicas != 1:
        raise InputError(
            "max_concurrency (closed-loop clients) is simulated on one replica; got "
            f"{replicas} replicas (use an open-loop rate for pools)"
        )


def merged_timeline(
    timelines: Sequence[Sequence[tuple[float, float, float, float]]],
) -> NDArray[np.float64]:
    """Rows (time, waiting, running, KV tokens) of the replicas summed: each replica's
    values hold from its row to its next (0 before its first)."""
    arrays = [rows_array(rows, 4) for rows in timelines]
    if len(arrays) == 1:
        return arrays[0]
    times = np.unique(np.concatenate([rows[:, 0] for rows in arrays]))
    total = np.zeros((len(times), 3))
    for rows in arrays:
        if not len(rows):
            continue
        at = np.searchsorted(rows[:, 0], times, side="right") - 1
        total += np.where((at >= 0)[:, None], rows[np.maximum(at, 0), 1:], 0.0)
    return np.column_stack([times, total])


def rows_array(rows: Sequence[tuple[float, ...]], width: int) -> NDArray[np.float64]:
    """``rows`` (tuples of ``width`` numbers) as a float array of shape (rows, width):
    ``np.asarray(rows, float)``, without its per-row sequence checks."""
    flat = np.fromiter(chain.from_iterable(rows), float, count=len(rows) * width)
    return flat.reshape(-1, width)
