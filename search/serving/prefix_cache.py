"""A replica's prefix cache (vLLM's automatic prefix caching) in its paged KV budget.

Resident prefixes in use (id -> [tokens, users]) and idle ones (id -> tokens, least
recently used first). A request whose prefix is resident when it is first admitted is a
hit; computing a prefix makes it resident from that admission. An idle prefix stays
until KV blocks run out; then the least recently used one is evicted, before any
sequence is preempted (`engine` module doc).
"""

from __future__ import annotations

from collections import OrderedDict


class PrefixCache:
    """Resident prefixes and the KV tokens they hold (``tokens``). ``hits`` is the
    per-request record it writes (1 hit, 0 miss, -1 not yet admitted with a prefix)."""

    def __init__(self, hits: list[int]) -> None:
        self.busy: dict[int, list[int]] = {}
        self.idle: OrderedDict[int, int] = OrderedDict()
        self.tokens = 0
        self.holding: set[int] = set()
        self.hits = hits

    def resident(self, prefix: int) -> bool:
        return prefix in self.busy or prefix in self.idle

    def evict(self, keep: int) -> bool:
        """Drop the least recently used idle prefix other than ``keep``; False if none."""
        for prefix in self.idle:
            if prefix != keep:
                self.tokens -= self.idle.pop(prefix)
                return True
        return False

    def acquire(self, i: int, prefix: int, tokens: int) -> None:
        """Request ``i`` uses ``prefix`` of ``tokens`` tokens (computing it makes it
        resident)."""
        if self.hits[i] < 0:
            self.hits[i] = int(prefix in self.busy or prefix in self.idle)
        busy = self.busy.get(prefix)
        if busy is not None:
            busy[1] += 1
        elif prefix in self.idle:
            self.busy[prefix] = [self.idle.pop(prefix), 1]
        else:
            self.busy[prefix] = [tokens, 1]
            self.tokens += tokens
        self.holding.add(i)

    def release(self, i: int, prefix: int) -> None:
        """Request ``i`` no longer uses its ``prefix`` (if it held one)."""
        if i not in self.holding:
            return
        self.holding.remove(i)
        entry = self.busy[prefix]
        entry[1] -= 1
        if entry[1] == 0:
            del self.busy[prefix]
            self.idle[prefix] = entry[0]  # most recently used
