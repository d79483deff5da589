"""The event loop of replicas under continuous batching (with or without chunked
prefill), paged KV blocks, prefix caching and preemption.

State is a handful of sums kept up to date (decoding sequences ``D``, the sum of their
contexts, KV tokens reserved) plus a heap of the decode step at which each sequence
finishes, so the loop does O(1) work per step outside the requests it touches. Runs
of decode-only steps between events (an arrival that can be admitted, a completion, KV
exhaustion) are costed as one array of steps (`genz.StepCost.decode_times`), short ones
step by step with the decode set's constant terms looked up once
(`genz.StepCost.decode_terms`). What the loop logs goes to compact buffers
(`records.Spool`). KV is counted in `occupancy` units (tokens for a model without
windowed layers and one sequence per request): windowed layers hold at most their window
in blocks, and the samples or beams of a request (one group in the loop, decoding in
lockstep) share their prompt's whole blocks.

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

Closed-loop clients (`Workload.max_concurrency` C, one replica; over disaggregated pools
see `closed_pools`): the first C requests are sent at their earliest send times; each
time a request leaves (finishes, or is rejected), the next unsent one is sent at the later of that moment and its own earliest
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
from collections import deque
from collections.abc import Callable

import numpy as np

from genz import StepCost
from roofline import InputError

from . import compiled
from .clients import Clients
from .config import SchedulerConfig
from .emissions import DecodeClock, Emissions
from .occupancy import Occupancy
from .prefix_cache import PrefixCache
from .records import SPILL_FLOATS, RunRecord, Spool, StepLog, merged_timeline
from .routing import ROUTING, route
from .speculative import SpeculativeDecoder
from .workload import Workload

#: Decode runs of at most this many steps are costed step by step in plain Python.
SHORT_RUN = 6


class _Requests:
    """Per-request state, shared by the replicas of a pool (lists indexed by request)."""

    def __init__(self, workload: Workload, prefilled: bool, delay: float = 0.0) -> None:
        self.clients = Clients(workload.arrival_s.tolist(), workload.max_concurrency, delay)
        self.arrival = self.clients.arrival  # engine times (sent + front end)
        self.prompt = workload.input_tokens.tolist()  # full prompt (grows on recompute)
        self.output = workload.output_tokens.tolist()
        self.prefix = workload.prefixes.tolist()
        self.prefix_tokens = workload.prefix_tokens.tolist()
        self.sequences = workload.sequences  # per request (samples or beams)
        n = len(self.arrival)
        self.generated = [1 if prefilled else 0] * n
        self.first = [math.nan] * n
        self.finish = [math.nan] * n
        self.preempted = [0] * n
        self.rejected = [False] * n
        self.hits = [-1] * n
        self.admitted = [math.nan] * n  # first admission (queueing delay ends)
        # Called as (request, time) when a request leaves a closed-loop replica (it
        # finished or was rejected); None: the next request is sent (`Clients.send_next`).
        self.on_leave: Callable[[int, float], None] | None = None

    def left(self, i: int, t: float) -> None:
        """Request ``i`` left a closed-loop replica at ``t`` (finished or rejected)."""
        if self.on_leave is None:
            self.clients.send_next(t)
        else:
            self.on_leave(i, t)


class _Engine:
    """Mutable state of one replica's run (`simulate_pool`)."""

    def __init__(
        self,
        requests: _Requests,
        cost: StepCost,
        config: SchedulerConfig,
        kv_capacity_tokens: int,
        prefilled: bool,
        speculative: SpeculativeDecoder | None = None,
    ) -> None:
        self.cost, self.config, self.r = cost, config, requests
        self.prefilled = prefilled
        self.speculative = speculative
        self.iterations = 0  # speculative iterations taken (`speculate`)
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
        # KV counts are units (`occupancy`: tokens unless windowed layers or groups).
        self.occupancy = Occupancy(cost, config.block_tokens, requests.sequences)
        self.plain = self.occupancy.plain
        self.n = requests.sequences  # sequences per request (samples or beams)
        self.capacity = kv_capacity_tokens * self.occupancy.unit
        self.slack = self.occupancy.slack
        self.cache = PrefixCache(requests.hits)
        self.t = 0.0
        self.limit = math.inf  # the next arrival not yet routed (pools)
        self.g = 0  # decode steps taken by the decoding set
        self.d = 0  # decoding sequences
        self.ctx_sum = 0  # their contexts (attended tokens, prefix included)
        self.kv = 0  # KV units of sequences (own tokens + one block's slack each)
        self.heap: list[tuple[int, int]] = []
        # id -> (step joined, context then, step it finishes)
        self.joined: dict[int, tuple[int, int, int]] = {}
        self.order: list[int] = []  # decoding ids by admission (preemption victim: last)
        self.waiting: deque[int] = deque()
        self.prefilling: list[list[int]] = []  # [id, prompt tokens still to compute]
        self.next_arrival = 0
        self.steps = 0
        self.timeline = Spool()  # per loop iteration: time, waiting, running, KV tokens
        self.work = StepLog()
        self.emissions = Emissions()
        self.clock = DecodeClock(self.emissions)

    # -- bookkeeping ---------------------------------------------------------------

    def own(self, i: int) -> int:
        """KV units request ``i`` holds itself when admitted."""
        context = self.swapped.get(i, self.prompt[i]) if self.swapped else self.prompt[i]
        return self.own_at(i, context)

    def own_at(self, i: int, context: int) -> int:
        """KV units of ``i``'s own at ``context`` (a shared prefix is the cache's; a
        group's sequences share their prompt's whole blocks, `occupancy`)."""
        if self.plain:
            return context - self.prefix_tokens[i] if self.prefix[i] >= 0 else context
        units, prefix = self.occupancy.units, self.prefix_tokens[i] if self.prefix[i] >= 0 else 0
        own = units(context) - units(prefix) if prefix else units(context)
        return self.occupancy.group(own, self.shared(i), context)

    def shared(self, i: int) -> int:
        """Tokens of ``i``'s own prompt blocks its sequences share (`occupancy`)."""
        prefix = self.prefix_tokens[i] if self.prefix[i] >= 0 else 0
        return self.occupancy.shared(self.r.prompt[i] - prefix)

    def prefix_units(self, i: int) -> int:
        """KV units of ``i``'s shared prefix when resident."""
        tokens = self.prefix_tokens[i]
        return tokens if self.plain else self.occupancy.units(tokens)

    def first_growth(self, i: int) -> int:
        """KV units ``i`` needs beyond its reservation to take a decode step when it
        would be swapped out for lack of them (0 otherwise: recompute re-prefills a
        longer prompt, which is refused once it cannot fit)."""
        recomputed = self.n == 1 and self.config.preemption != "swap"
        if recomputed or self.output[i] <= max(self.generated[i], 1):
            return 0
        if self.plain:
            return 1
        context = self.swapped.get(i, self.prompt[i]) if self.swapped else self.prompt[i]
        return self.occupancy.step_units(context, self.shared(i))

    def rate(self) -> int:
        """KV units the decoding set adds in its next decode step."""
        return self.d if self.plain else self.occupancy.rate(self.d)

    def grow(self, steps: int) -> int:
        """KV units the decoding set adds over its next ``steps`` decode steps."""
        return steps * self.d if self.plain else self.occupancy.grow(self.g, steps, self.d)

    def load(self, at: float) -> int:
        """Requests routed here and not finished by ``at``."""
        return len(self.inbox) - bisect_right(self.done_at, at)

    def upcoming(self) -> float:
        """When the next request may arrive here."""
        if self.next_arrival < len(self.inbox):
            return self.arrival[self.inbox[self.next_arrival]]
        return self.limit

    def arrive(self) -> None:
        inbox, arrival, t = self.inbox, self.arrival, self.t
        k, count = self.next_arrival, len(inbox)
        while k < count and arrival[inbox[k]] <= t:
            i = inbox[k]
            if self.prefilled:
                self.swapped[i] = self.prompt[i]
            self.waiting.append(i)
            k += 1
        self.next_arrival = k

    def leave(self, i: int) -> None:
        """Request ``i`` has finished here."""
        self.finish[i] = self.t
        self.done_at.append(self.t)
        if self.cache.holding:
            self.cache.release(i, self.prefix[i])
        if self.closed:
            self.r.left(i, self.t)

    def join_decode(self, i: int) -> None:
        """Request ``i`` has emitted a token and holds its prompt's KV: decode the rest."""
        swapped = self.swapped
        context = swapped.pop(i, None) if swapped else None
        if context is None:
            context = self.prompt[i]
        own = self.own_at(i, context)
        remaining = self.output[i] - self.generated[i]
        if remaining <= 0:
            self.kv -= own + self.slack
            self.leave(i)
            return
        g = self.g
        self.joined[i] = (g, context, g + remaining)
        self.clock.fresh[i] = self.t
        heapq.heappush(self.heap, (g + remaining, i))
        self.order.append(i)
        if not self.plain:
            self.occupancy.join(i, g, context, self.shared(i))
        self.d += self.n
        self.ctx_sum += self.n * context

    def leave_decode(self, i: int) -> int:
        """Remove ``i`` from the decoding set; its context now."""
        joined_step, context, _ = self.joined.pop(i)
        context += self.g - joined_step
        self.clock.drop(i)
        order = self.order
        if order[0] == i:  # usually the oldest leaves first
            del order[0]
        else:
            order.remove(i)
        self.occupancy.drop(i)
        self.d -= self.n
        self.ctx_sum -= self.n * context
        return context

    def finish_due(self) -> None:
        heap, g, joined = self.heap, self.g, self.joined
        while heap and heap[0][0] <= g:
            due, i = heapq.heappop(heap)
            entry = joined.get(i)
            if entry is None or entry[2] != due:  # stale: it was preempted
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
        self.cache.release(victim, self.prefix[victim])
        # vLLM recomputes only single-sequence groups; a group of samples or beams is
        # swapped (`_preempt` in vllm-project/vllm ``vllm/core/scheduler.py``, V0).
        if self.config.preemption == "swap" or self.n > 1:
            self.prefix[victim] = -1  # all its blocks go to host, shared ones too,
            self.swapped[victim] = context  # and come back as its own
            self.t += self.transfer_s(context if self.plain else self.own_at(victim, context))
        else:  # recompute: prompt and generated tokens are prefilled again (vLLM)
            self.prompt[victim] = context + 1
        self.waiting.appendleft(victim)

    def transfer_s(self, units: int) -> float:
        """Seconds to copy ``units`` of KV between device and host."""
        per_unit = self.cost.kv_bytes_per_token if self.plain else self.occupancy.bytes_per_unit
        return units * per_unit / self.config.host_link_bytes_per_s

    def free(self) -> int:
        """KV units neither sequences nor cached prefixes hold."""
        return self.capacity - self.kv - self.cache.tokens

    def spill(self) -> None:
        """Move what the loop logged to compact arrays (`records.Spool`)."""
        self.timeline.spill()
        self.work.spool.spill()
        self.emissions.spill()

    # -- admission -----------------------------------------------------------------

    def admit(self, token_room: int, whole: bool) -> list[tuple[int, int]]:
        """Take waiting requests FCFS while sequences, tokens and KV allow; the taken
        ones with the prompt tokens each computes."""
        taken: list[tuple[int, int]] = []
        config, cache, waiting = self.config, self.cache, self.waiting
        prefixes, prefix_tokens, admitted = self.prefix, self.prefix_tokens, self.r.admitted
        n = self.n  # sequences a request adds
        running = self.d + n * len(self.prefilling)
        while waiting and running + n * len(taken) + n <= config.max_sequences:
            i = waiting[0]
            prefix = prefixes[i]
            cached = prefix >= 0 and cache.resident(prefix)
            need = self.own(i) + self.slack
            resident = self.prefix_units(i) if prefix >= 0 else 0
            extra = resident if not cached else 0
            # Can never fit (with its prefix resident), or, swapped when preempted, never
            # take a decode step even alone: refuse rather than block.
            if need + resident + self.first_growth(i) > self.capacity:
                waiting.popleft()
                self.r.rejected[i] = True
                self.done_at.append(self.t)
                if self.closed:
                    self.r.left(i, self.t)
                continue
            # Admit only with a block of growth left for every running sequence (the
            # role of vLLM's watermark): a re-admitted victim cannot be evicted again
            # before every sequence has decoded ``block_tokens`` more tokens; at least
            # one step of them all, itself included (with 1-token blocks a swapped
            # victim was else swapped back in and out, forever, before any step).
            rate = self.rate()
            want = need + extra + rate * config.block_tokens
            # (plain, blocks of 2+ tokens: rate x block_tokens >= rate + 1 already)
            if rate and (config.block_tokens == 1 or not self.plain):
                want = max(want, need + extra + rate + self.first_growth(i))
            while self.free() < want and cache.evict(keep=prefix):
                pass
            if self.free() < want:
                break
            if i in self.swapped:  # KV comes back from host (or arrived from the prefill pool)
                waiting.popleft()
                if math.isnan(admitted[i]):
                    admitted[i] = self.t
                self.kv += need
                self.t += self.transfer_s(self.own(i)) if self.r.preempted[i] else 0.0
                if prefix >= 0:
                    cache.acquire(i, prefix, resident)
                self.join_decode(i)
                running = self.d + n * len(self.prefilling)
                continue
            compute = self.prompt[i] - (prefix_tokens[i] if cached else 0)
            if whole and taken and compute > token_room:
                break
            if not whole and token_room <= 0:
                break
            waiting.popleft()
            if math.isnan(admitted[i]):
                admitted[i] = self.t
            self.kv += need
            if prefix >= 0:
                cache.acquire(i, prefix, resident)
            taken.append((i, compute))
            token_room -= compute
        return taken

    # -- steps ---------------------------------------------------------------------

    def prefill_step(self, chunks: list[tuple[int, int, int]], decode: bool) -> None:
        """One step of prompt chunks ``(id, new tokens, context after)``, plus one token
        of every decoding sequence when ``decode``."""
        tokens = ctx = pairs = 0.0
        done = []
        prompt = self.prompt
        for i, q, c in chunks:
            tokens += q
            ctx += c
            pairs += q * c - q * (q - 1) / 2
            if c == prompt[i]:
                done.append(i)
        d = self.d if decode else 0
        seconds = self.cost.step_time(
            int(tokens), ctx, pairs, d, self.ctx_sum + d, d + len(done), d + len(chunks)
        )
        if self.cost.vision_s is not None:  # images: the tower runs with a first chunk
            starts = sum(1 for _, q, c in chunks if c == q)
            seconds += self.cost.vision_s[starts]
            self.work.tower(starts)
        self.work.steps.extend(
            (seconds, int(tokens), ctx, pairs, d, self.ctx_sum + d, d + len(done))
        )
        self.t += seconds
        self.steps += 1
        if decode and d:
            self.clock.emit(self.t, d // self.n)
            self.kv += self.grow(1)
            self.g += 1
            self.ctx_sum += d
            self.finish_due()
        generated, first = self.generated, self.first
        for i in done:
            generated[i] += 1
            if math.isnan(first[i]):
                first[i] = self.t
            self.join_decode(i)

    def decode_run(self) -> None:
        """Decode-only steps until the next event."""
        d, base, cost = self.d, self.ctx_sum, self.cost
        room, rate = self.free(), self.rate()
        if room < rate:
            if not self.cache.evict(keep=-1):
                self.preempt()
            return
        steps = self.heap[0][0] - self.g
        if rate:  # else no sequence grows (every windowed layer full, no full layer)
            steps = min(steps, room // rate)
        until = math.inf
        if not (
            self.waiting or d + self.n * (len(self.prefilling) + 1) > self.config.max_sequences
        ):
            until = self.upcoming()
        constant, operators = cost.decode_terms(d)
        one = len(operators) == 1 and cost.affine_in_context
        if one:  # the decode_time of one context operator, inline
            ((compute, memory, slope_c, slope_m, overhead),) = operators
            context = base + d
            first = (
                constant + max(compute + slope_c * context, memory + slope_m * context) + overhead
            )
        else:
            first = cost.decode_time(d, base + d)
        if until < math.inf:
            steps = max(1, min(steps, int((until - self.t) / first) + 1))
        if steps <= SHORT_RUN:  # plain Python: stop at the step during which it arrives
            start, elapsed, taken = self.t, first, 1
            log = self.work.steps.extend
            log((first, 0, 0.0, 0.0, d, base + d, d))
            streams = d // self.n  # requests (a group's sequences share each chunk time)
            self.clock.emit(start + first, streams)
            if taken < steps and start + elapsed < until:
                gaps, counts = self.emissions.gaps, self.emissions.counts
                while taken < steps and start + elapsed < until:
                    taken += 1
                    context = base + d * taken
                    if one:
                        seconds = (
                            constant
                            + max(compute + slope_c * context, memory + slope_m * context)
                            + overhead
                        )
                    else:
                        seconds = cost.decode_time(d, context)
                    log((seconds, 0, 0.0, 0.0, d, context, d))
                    elapsed += seconds
                    gaps.append(seconds)
                    counts.append(streams)
            self.clock.last = start + elapsed
            steps = taken
        else:
            contexts = base + d * np.arange(1, steps + 1, dtype=float)
            times = cost.decode_times(d, contexts)
            ends = np.cumsum(times)
            if until < math.inf:  # stop after the step during which the request arrives
                steps = min(int(ends.searchsorted(until - self.t)) + 1, steps)
            elapsed = float(ends[steps - 1])
            self.work.extend_decode(times[:steps], d, contexts[:steps])
            self.clock.emit_run(self.t, times[:steps], d // self.n)
        self.kv += self.grow(steps)
        self.t += elapsed
        self.steps += steps
        self.g += steps
        self.ctx_sum += steps * d
        if self.heap[0][0] <= self.g:
            self.finish_due()

    def decode_block(self, n: int) -> None:
        """One multi-step block (`SchedulerConfig.scheduler_steps`): ``n`` decode steps
        of the whole decoding set, planned once; its tokens are emitted together at its
        end, when sequences that ended inside it leave. The block reserves ``n`` KV
        slots per sequence and is shortened when fewer are free."""
        d = self.d
        room, rate = self.free(), self.rate()
        if room < rate:
            if not self.cache.evict(keep=-1):
                self.preempt()
            return
        if rate:
            n = min(n, room // rate)
        context = self.ctx_sum + d * np.arange(1, n + 1, dtype=float)
        times = self.cost.decode_times(d, context)
        self.work.extend_decode(times, d, context)
        self.t += float(times.sum())
        self.clock.emit(self.t, d // self.n)
        self.kv += self.grow(n)
        self.steps += n
        self.g += n
        self.ctx_sum += n * d
        self.finish_due()

    def speculate(self) -> None:
        """One speculative iteration of the decoding set (`speculative` module): the
        draft's steps and the verify pass, then every sequence's accepted tokens at its
        end. It runs with ``k + 1`` KV slots free per sequence (else a prefix is
        evicted or a sequence preempted, as before a decode step)."""
        spec, d = self.speculative, self.d
        assert spec is not None
        if self.free() < self.rate() * (spec.k + 1):
            if not self.cache.evict(keep=-1):
                self.preempt()
            return
        seconds = spec.iteration_s(self.cost, d, self.ctx_sum)
        tokens, contexts, rows = spec.verify_terms(d, self.ctx_sum)
        self.work.steps.extend((seconds, 0, 0.0, 0.0, tokens, contexts, rows))
        self.t += seconds
        self.steps += 1
        self.clock.emit(self.t, d)
        n = spec.tokens(self.iterations)
        self.iterations += 1
        self.kv += self.grow(n)
        self.g += n
        self.ctx_sum += d * n
        self.finish_due()

    def advance(self, limit: float, progress: Callable[[int], None] | None = None) -> None:
        """Run the steps that start before ``limit`` (the next arrival not yet routed
        anywhere; infinite once every request is routed), or until idle."""
        self.limit = limit
        chunked = self.config.policy == "chunked"
        budget = self.config.max_batched_tokens
        block = self.config.scheduler_steps
        reported = self.next_arrival
        inbox, arrival, waiting, prompt = self.inbox, self.arrival, self.waiting, self.prompt
        timeline = self.timeline.buffer
        record = timeline.extend
        unit = self.occupancy.unit
        while True:
            k = self.next_arrival
            if k < len(inbox) and arrival[inbox[k]] <= self.t:
                self.arrive()
            if not (waiting or self.d or self.prefilling):
                k = self.next_arrival
                if k >= len(inbox):
                    break
                if arrival[inbox[k]] == math.inf:
                    break  # closed loop: nothing in flight sends it (not reached)
                self.t = max(self.t, arrival[inbox[k]])
                continue
            if self.t >= limit:
                break
            if chunked:
                self.chunked_step(budget)
            else:
                taken = self.admit(budget, whole=True) if waiting else []
                if taken:
                    self.prefill_step([(i, q, prompt[i]) for i, q in taken], False)
                elif self.d and self.speculative is not None:
                    self.speculate()
                elif self.d and block > 1:
                    self.decode_block(block)
                elif self.d:
                    self.decode_run()
            kv = self.kv + self.cache.tokens
            record(
                (
                    self.t,
                    len(waiting),
                    self.d + self.n * len(self.prefilling),
                    kv if unit == 1 else kv / unit,  # full-attention-token equivalents
                )
            )
            if len(timeline) >= SPILL_FLOATS:
                self.spill()
            if progress is not None and self.next_arrival - reported >= 2000:
                progress(self.next_arrival - reported)
                reported = self.next_arrival
        if progress is not None:
            progress(self.next_arrival - reported)

    def chunked_step(self, budget: int) -> None:
        """Decode every running sequence and fill the rest of the budget with chunks."""
        room = budget - self.d
        if self.free() < self.rate():
            if not self.cache.evict(keep=-1):
                self.preempt()
            return
        for i, q in self.admit(room, whole=False):
            self.prefilling.append([i, q])
        if not self.prefilling:
            if self.d:
                self.decode_run()
            return
        chunks = []
        prompt = self.prompt
        for entry in self.prefilling:
            if room <= 0:
                break
            i, left = entry
            q = min(left, room)
            room -= q
            entry[1] -= q
            chunks.append((i, q, prompt[i] - entry[1]))
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
    speculative: SpeculativeDecoder | None = None,
) -> RunRecord:
    """Run ``workload`` through ``replicas`` identical replicas with the
    ``continuous`` or ``chunked`` policy, each request routed by ``routing``
    (`routing.route`: least-loaded by default); one replica takes every request.

    ``prefilled`` requests arrive with their prompt's KV cache and first token (the
    decode pool of disaggregated serving). ``progress`` is called with the count of
    newly arrived requests now and then (one replica only). ``speculative`` decodes
    with speculation (`speculative.SpeculativeDecoder`; continuous policy, single-step
    scheduling).
    """
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise InputError(f"replicas must be an integer >= 1, got {replicas!r}")
    refuse_closed_pool(workload, replicas)
    refuse_groups(workload, config, speculative is not None)
    if speculative is not None:
        refuse_speculation(config)
    elif (
        not cost.host_overlap
        and routing in ROUTING
        and compiled.eligible(workload, config, replicas)
    ):
        record = compiled.simulate(
            workload, cost, config, kv_capacity_tokens, prefilled, replicas, routing
        )
        if record is not None:
            if progress is not None and replicas == 1:
                progress(len(workload))
            return record
    requests = _Requests(workload, prefilled, 0.0 if prefilled else config.request_overhead_s)
    engines = [
        _Engine(requests, cost, config, kv_capacity_tokens, prefilled, speculative)
        for _ in range(replicas)
    ]
    if replicas == 1:
        engines[0].inbox = list(range(len(workload)))
        engines[0].advance(math.inf, progress)
    else:
        route(requests.arrival, engines, routing)
    return pool_record(requests, engines, cost, kv_capacity_tokens)


def pool_record(
    requests: _Requests, engines: list[_Engine], cost: StepCost, kv_capacity_tokens: int
) -> RunRecord:
    """The `RunRecord` of ``engines`` (the replicas of one pool, each of
    ``kv_capacity_tokens``) that ran ``requests``."""
    timeline = merged_timeline([engine.timeline.array() for engine in engines])
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
        kv_capacity_tokens=kv_capacity_tokens * len(engines),
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


def refuse_groups(workload: Workload, config: SchedulerConfig, speculative: bool) -> None:
    """Samples or beams of a request decode in one batch, without speculation."""
    if workload.sequences == 1:
        return
    label = "samples" if workload.samples > 1 else "beams"
    if workload.sequences > config.max_sequences:
        raise InputError(
            f"{label} ({workload.sequences}) must be at most max_sequences "
            f"({config.max_sequences}): a request's {label} decode in one batch"
        )
    if speculative:
        raise InputError(f"{label} > 1 is simulated without speculative decoding")


def refuse_speculation(config: SchedulerConfig) -> None:
    """Speculative decoding is simulated with the continuous policy, single-step."""
    if config.policy != "continuous" or config.scheduler_steps != 1:
        raise InputError(
            "speculative decoding is simulated with policy continuous and scheduler_steps "
            f"1, got policy {config.policy!r} and scheduler_steps {config.scheduler_steps}"
        )
