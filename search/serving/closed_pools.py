"""Closed-loop clients over disaggregated prefill/decode pools: both pools in one event
loop.

With open-loop clients the prefill pool can run to its end before the decode pool
starts (`schedulers.simulate_disaggregated`). Closed-loop clients
(`Workload.max_concurrency` C) send the next request when one leaves, which for a
request with more than one output token happens in the decode pool, so the prefill
pool's arrivals depend on the decode pool's progress. Here every replica of both pools
advances one loop iteration at a time (`engine._Engine.advance`), always the one whose
next step starts earliest (a conservative discrete-event simulation without lookahead):

- A request leaves where it ends: the decode pool when it finishes or is refused there,
  the prefill pool when it is refused there or has one output token (its first token
  is its last). Leaves are released to the clients in time order, once no replica can
  still produce an earlier one (each replica's next step starts no earlier); each
  frees a client, which sends the next request (`clients.Clients.send_next`).
- A request whose prompt is prefilled crosses the KV link (``transfer_s``, from
  `schedulers.kv_transfer`) and arrives at the decode pool then (one-token requests
  too, as in the open-loop path).
- A request is routed to its pool (`routing`'s rules: least-loaded counts requests
  routed to a replica and not finished by the arrival) once every replica has run
  every step that starts before the arrival and none can produce an earlier arrival.

`compiled.simulate_closed` runs the same loop compiled (bit for bit; the configurations
`compiled.eligible` covers, in both pools, without speculation) and this module's loop
runs the rest.

With C at least the request count no send waits for a leave and the run is the
open-loop one (tests check it to floating-point rounding: the decode pool's runs of
decode steps are split at other replicas' steps, which reorders a few additions).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from genz import StepCost
from roofline import InputError

from . import compiled
from .config import SchedulerConfig
from .engine import _Engine, _Requests, pool_record, refuse_speculation
from .records import RunRecord
from .routing import ROUTING
from .speculative import SpeculativeDecoder
from .workload import Workload


def _next_start(engine: _Engine) -> float:
    """When ``engine``'s next loop iteration starts, s (infinite: nothing to do)."""
    if engine.waiting or engine.d or engine.prefilling:
        return engine.t
    k = engine.next_arrival
    if k < len(engine.inbox):
        return max(engine.t, engine.arrival[engine.inbox[k]])
    return math.inf


class _Pool:
    """The replicas of one pool and how it routes (`routing.route`'s rules)."""

    def __init__(self, engines: list[_Engine], routing: str) -> None:
        self.engines, self.routing, self.routed = engines, routing, 0

    def take(self, i: int, at: float) -> None:
        """Route request ``i`` arriving at ``at`` (every replica has run the steps
        that start before ``at``)."""
        engines = self.engines
        if self.routing == "round-robin" or len(engines) == 1:
            best = self.routed % len(engines)
        else:
            best = min(range(len(engines)), key=lambda k: engines[k].load(at))
        engines[best].inbox.append(i)
        self.routed += 1


class _ClosedPools:
    """State of one closed-loop run over a prefill and a decode pool (module doc)."""

    def __init__(
        self,
        workload: Workload,
        prefill: tuple[StepCost, SchedulerConfig, int],
        decode: tuple[StepCost, SchedulerConfig, int],
        transfer_s: NDArray[np.float64],
        replicas: tuple[int, int],
        routing: str,
        speculative: SpeculativeDecoder | None,
    ) -> None:
        n = len(workload)
        self.output = workload.output_tokens.tolist()
        self.transfer = transfer_s.tolist()
        one_token = replace(workload, output_tokens=np.ones(n, np.int64))
        self.first = _Requests(one_token, False, prefill[1].request_overhead_s)
        self.second = _Requests(
            Workload(
                np.full(n, math.inf),  # set when the KV cache reaches the decode pool
                workload.input_tokens,
                workload.output_tokens,
                np.zeros(n, np.int64),
                workload.source,
            ),
            True,
        )
        self.first.on_leave, self.second.on_leave = self.prefill_left, self.decode_left
        self.pools = (
            _Pool([_Engine(self.first, *prefill, False) for _ in range(replicas[0])], routing),
            _Pool(
                [_Engine(self.second, *decode, True, speculative) for _ in range(replicas[1])],
                routing,
            ),
        )
        self.engines = self.pools[0].engines + self.pools[1].engines
        for engine in self.engines:
            engine.closed = True  # report every leave (`_Requests.left`)
        clients = self.first.clients
        # Requests known to arrive at each pool: (time, id) heaps.
        self.arrivals: tuple[list[tuple[float, int]], list[tuple[float, int]]] = (
            [(clients.arrival[k], k) for k in range(clients.unsent)],
            [],
        )
        heapq.heapify(self.arrivals[0])
        self.leaves: list[tuple[float, int]] = []  # (time, order) not yet released

    def prefill_left(self, i: int, t: float) -> None:
        """Request ``i`` left a prefill replica at ``t``: refused, or its prompt is done."""
        if self.first.rejected[i]:
            heapq.heappush(self.leaves, (t, i))
            return
        heapq.heappush(self.arrivals[1], (t + self.transfer[i], i))
        if self.output[i] == 1:  # its first token was its last: the client is free
            heapq.heappush(self.leaves, (t, i))

    def decode_left(self, i: int, t: float) -> None:
        """Request ``i`` finished (or was refused) at a decode replica at ``t``."""
        if self.output[i] > 1:
            heapq.heappush(self.leaves, (t, i))

    def release(self, t: float) -> None:
        """A client freed at ``t`` sends the next request (if any is left)."""
        clients = self.first.clients
        k = clients.unsent
        clients.send_next(t)
        if clients.unsent > k:
            heapq.heappush(self.arrivals[0], (clients.arrival[k], k))

    def run(self) -> None:
        engines, leaves, arrivals, pools = self.engines, self.leaves, self.arrivals, self.pools
        while True:
            starts = [_next_start(engine) for engine in engines]
            now = min(starts)
            while leaves and leaves[0][0] <= now:
                self.release(heapq.heappop(leaves)[0])
            due = [queue[0][0] if queue else math.inf for queue in arrivals]
            pool = 0 if due[0] <= due[1] else 1
            if due[pool] < math.inf and due[pool] <= now:
                at, i = heapq.heappop(arrivals[pool])
                if pool == 1:
                    self.second.arrival[i] = at
                pools[pool].take(i, at)
                continue
            if now == math.inf:
                return
            engines[starts.index(now)].advance(math.nextafter(now, math.inf))


def simulate_closed_pools(
    workload: Workload,
    prefill: tuple[StepCost, SchedulerConfig, int],
    decode: tuple[StepCost, SchedulerConfig, int],
    transfer_s: NDArray[np.float64],
    *,
    prefill_replicas: int = 1,
    decode_replicas: int = 1,
    routing: str = "least-loaded",
    speculative: SpeculativeDecoder | None = None,
) -> tuple[RunRecord, RunRecord]:
    """Closed-loop clients (``workload.max_concurrency``) over ``prefill_replicas``
    prefill and ``decode_replicas`` decode replicas, each pool given as its (step cost,
    scheduler, KV capacity tokens); ``transfer_s`` is each request's KV transfer time
    (s). The prefill pool's record (its ``finish_s`` is each first token;
    ``arrival_s`` the send times) and the decode pool's, both in workload order (NaN,
    False, 0 for requests that never reached the decode pool); ``speculative``
    decodes speculatively in the decode pool."""
    if workload.max_concurrency is None:
        raise InputError("simulate_closed_pools needs closed-loop clients (max_concurrency)")
    if routing not in ROUTING:
        raise InputError(f"routing must be one of {', '.join(ROUTING)}, got {routing!r}")
    for config in (prefill[1], decode[1]):
        if config.policy not in ("continuous", "chunked"):
            raise InputError(f"pools run policy continuous or chunked, got {config.policy!r}")
    if speculative is not None:
        refuse_speculation(decode[1])
    if (
        speculative is None
        and not (prefill[0].host_overlap or decode[0].host_overlap)
        and all(
            compiled.eligible(workload, pool[1], count)
            for pool, count in ((prefill, prefill_replicas), (decode, decode_replicas))
        )
    ):
        records = compiled.simulate_closed(
            workload, prefill, decode, transfer_s, (prefill_replicas, decode_replicas), routing
        )
        if records is not None:
            return records
    state = _ClosedPools(
        workload,
        prefill,
        decode,
        transfer_s,
        (prefill_replicas, decode_replicas),
        routing,
        speculative,
    )
    if len(workload):
        state.run()
    engines = state.pools[0].engines, state.pools[1].engines
    return (
        pool_record(state.first, engines[0], prefill[0], prefill[2]),
        pool_record(state.second, engines[1], decode[0], decode[2]),
    )
