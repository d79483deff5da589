"""Routing requests over the replicas of a pool: the one helper every pool uses
(colocated replicas, prefill and decode pools).

``least-loaded`` (default): every replica is simulated up to the request's arrival,
then the request goes to the replica with the fewest requests routed there and not
finished by then (lowest index on a tie). ``round-robin``: request ``i`` goes to
replica ``i mod replicas`` whatever their state (kept for comparison).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from roofline import InputError

#: Routing rules `route` accepts.
ROUTING = ("least-loaded", "round-robin")


class Routable(Protocol):
    """A replica simulation that takes requests as they are routed to it."""

    inbox: list[int]

    def advance(self, limit: float) -> None:
        """Simulate what starts before ``limit`` (s; infinite: run to the end)."""

    def load(self, at: float) -> int:
        """Requests routed here and not finished by ``at`` (s)."""


def route(arrival: Sequence[float], replicas: Sequence[Routable], routing: str) -> None:
    """Route requests arriving at ``arrival`` (s, sorted) to ``replicas`` by
    ``routing`` (module doc) and run every replica to its end."""
    if routing not in ROUTING:
        raise InputError(f"routing must be one of {', '.join(ROUTING)}, got {routing!r}")
    count = len(replicas)
    if routing == "round-robin" or count == 1:
        for k, replica in enumerate(replicas):
            replica.inbox.extend(range(k, len(arrival), count))
    else:
        for i, at in enumerate(arrival):
            for replica in replicas:
                replica.advance(at)
            best = min(range(count), key=lambda k: replicas[k].load(at))
            replicas[best].inbox.append(i)
    for replica in replicas:
        replica.advance(math.inf)
