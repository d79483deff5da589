"""Inter-token latency (ITL) as a streaming client records it.

vLLM's and SGLang's serving benchmarks (``benchmark_serving.py`` /
``bench_serving.py``, read 2026-12-03) append one ITL sample per streamed chunk: the
time since the previous chunk of the same request. A replica emits a chunk for every
decoding sequence at the end of each step that produces tokens (one token a step, or
the N tokens of a multi-step block together), so the samples are kept as (gap, count)
pairs: ``count`` sequences saw a gap of ``gap`` seconds. TPOT, by contrast, is per
request: ``(e2e - ttft) / (output tokens - 1)``.

The gap of a sequence's first decode chunk runs from the moment it joined the decoding
set on that replica (its first token after a prefill here; its admission after a swap-in
or a transfer from a prefill pool). A sequence evicted by recompute restarts its gaps
there; the gap across the eviction is not sampled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .records import Spool


class Emissions:
    """The (gap, count) samples of one replica: scalars appended one by one (to the
    ``gaps`` and ``counts`` lists of two `records.Spool`), runs of steps as arrays."""

    def __init__(self) -> None:
        self.gap_spool, self.count_spool = Spool(), Spool()
        self.gaps, self.counts = self.gap_spool.buffer, self.count_spool.buffer
        self.runs: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []

    def add(self, gap: float, count: float) -> None:
        if count > 0:
            self.gaps.append(gap)
            self.counts.append(count)

    def extend(self, gaps: NDArray[np.float64], counts: NDArray[np.float64]) -> None:
        self.runs.append((gaps, counts))

    def spill(self) -> None:
        """Move the scalars appended so far to numpy chunks (`records.Spool`)."""
        self.gap_spool.spill()
        self.count_spool.spill()

    @staticmethod
    def joined(logs: Sequence[Emissions]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Every sample of ``logs`` as (gaps s, counts), in no particular order."""
        gaps = [log.gap_spool.array() for log in logs]
        counts = [log.count_spool.array() for log in logs]
        gaps += [run[0] for log in logs for run in log.runs]
        counts += [run[1] for log in logs for run in log.runs]
        return np.concatenate(gaps), np.concatenate(counts)


class DecodeClock:
    """When the decoding set last received a chunk, and which sequences joined it since
    (id -> time of their last token), to give each chunk its gap."""

    def __init__(self, log: Emissions) -> None:
        self.log = log
        self.last = 0.0
        self.fresh: dict[int, float] = {}

    def join(self, i: int, at: float) -> None:
        self.fresh[i] = at

    def drop(self, i: int) -> None:
        self.fresh.pop(i, None)

    def emit(self, at: float, sequences: int) -> None:
        """``sequences`` decoding sequences (all of the set) receive a chunk at ``at``."""
        log = self.log
        log.add(at - self.last, sequences - len(self.fresh))
        for joined in self.fresh.values():
            log.add(at - joined, 1)
        self.fresh.clear()
        self.last = at

    def emit_run(self, start: float, times: NDArray[np.float64], sequences: int) -> None:
        """A run of decode steps from ``start`` (step times ``times``), every one
        emitting a chunk to all ``sequences``."""
        if not len(times):
            return
        self.emit(start + float(times[0]), sequences)
        if len(times) > 1:
            self.log.extend(times[1:], np.full(len(times) - 1, float(sequences)))
            self.last = start + float(times.sum())
