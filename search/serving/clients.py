"""When each request is sent and when the engine sees it: open-loop clients (every
request sent at its arrival time) or closed-loop ones (``Workload.max_concurrency`` C:
the first C requests sent at their earliest send times, then one each time a request
leaves, at the later of that moment and its own earliest send time: a
first-come-first-served semaphore of C slots, as ``vllm bench serve --max-concurrency``
holds), with an optional front-end time between a request's send and the engine
seeing it (`SchedulerConfig.request_overhead_s`)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray


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
