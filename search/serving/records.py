"""What a simulated replica records: the per-run result (`RunRecord`), the log of its
steps (`StepLog`), and the compact buffers both fill as the simulation runs (`Spool`).

Values logged per step or per loop iteration go first into a Python list (appending
to one is the cheapest thing the event loop can do) and every `SPILL_FLOATS` values
move to a numpy chunk of 8 bytes a value, so a long run holds its logs as float64
arrays, not as Python objects (a Python float in a list takes 32 bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from genz import StepCost

#: Values a `Spool` keeps as Python objects before moving them to a numpy chunk.
SPILL_FLOATS = 1 << 15
#: Steps costed together by `StepLog.joined` (bounds its temporary arrays).
WORK_SLICE = 1 << 16


@dataclass(frozen=True)
class RunRecord:
    """What one simulated replica did.

    Per request (NaN where it did not happen): ``first_token_s`` and ``finish_s``
    (absolute times, s), ``preemptions``, ``rejected`` (a prompt larger than the whole
    KV cache), ``prefix_hits`` (1: its prefix was cached at its first admission, 0: it
    was not, -1: no prefix or never admitted). Per loop iteration: ``timeline_s`` with
    ``waiting``, ``running`` (sequences: a request's samples or beams each count)
    and ``kv_tokens`` (KV tokens reserved, cached prefixes included; full-attention-token
    equivalents for windowed models, `occupancy`) after it (summed over the replicas of a pool); ``kv_capacity_tokens``
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


class Spool:
    """Floats appended to ``buffer`` (a list: bind ``buffer.append`` or ``.extend`` in
    a hot loop) and moved by `spill` to float64 chunks (module doc)."""

    def __init__(self) -> None:
        self.buffer: list[float] = []
        self.chunks: list[NDArray[np.float64]] = []

    def spill(self) -> None:
        """Move the buffered values to a numpy chunk (the list object is kept)."""
        if self.buffer:
            self.chunks.append(np.array(self.buffer, float))
            self.buffer.clear()

    def array(self) -> NDArray[np.float64]:
        """Every value appended, in order."""
        self.spill()
        if len(self.chunks) > 1:
            self.chunks = [np.concatenate(self.chunks)]
        return self.chunks[0] if self.chunks else np.zeros(0)

    @property
    def nbytes(self) -> int:
        """Bytes of the numpy chunks (the buffer not counted)."""
        return sum(chunk.nbytes for chunk in self.chunks)


class StepLog:
    """Time (s) and aggregates of every step a replica ran (the arguments of
    `genz.StepCost.step_work`: prefill tokens, their context and pair sums, decode
    sequences, their context sum, emitting sequences): single steps as seven numbers
    each in one `Spool`, runs of decode-only steps as (times, sequences, context sums).
    FLOP and bytes are computed once, vectorised, by `joined`, off the simulation's hot
    path."""

    def __init__(self) -> None:
        self.spool = Spool()
        self.steps = self.spool.buffer
        self.runs: list[tuple[NDArray[np.float64], int, NDArray[np.float64]]] = []
        #: (single step, requests starting their prefill) of the steps that ran a VLM's
        #: vision tower, flat (`tower`).
        self.towers: list[int] = []

    def tower(self, starts: int) -> None:
        """The next single step logged runs the vision tower of ``starts`` requests
        (`genz.StepCost.vision_work`): call before logging it."""
        self.towers.extend(((self.spool.nbytes // 8 + len(self.steps)) // 7, starts))

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
        single = np.concatenate([log.spool.array().reshape(-1, 7) for log in logs])
        runs = [run for log in logs for run in log.runs]
        lengths = [len(run[0]) for run in runs]
        first = len(single)
        seconds = np.empty(first + sum(lengths))
        flop, moved = np.empty(len(seconds)), np.empty(len(seconds))
        seconds[:first] = single[:, 0]
        # step_work is elementwise: costed in slices, its temporaries stay small
        for a in range(0, first, WORK_SLICE):
            rows = single[a : a + WORK_SLICE]
            b = a + len(rows)
            flop[a:b], moved[a:b] = cost.step_work(*(rows[:, k] for k in range(1, 7)))
        if cost.vision_work is not None:  # the tower's work, in the steps it ran
            StepLog._add_towers(logs, cost.vision_work, flop, moved)
        if runs:
            seconds[first:] = np.concatenate([run[0] for run in runs])
            contexts = np.concatenate([run[2] for run in runs])
            sequences = np.repeat(np.array([float(run[1]) for run in runs]), lengths)
            for a in range(0, len(contexts), WORK_SLICE):
                d, c = sequences[a : a + WORK_SLICE], contexts[a : a + WORK_SLICE]
                zero = np.zeros(len(d))
                b = first + a + len(d)
                flop[first + a : b], moved[first + a : b] = cost.step_work(
                    zero, zero, zero, d, c, d
                )
        return seconds, flop, moved

    @staticmethod
    def _add_towers(
        logs: Sequence[StepLog],
        work: NDArray[np.float64],
        flop: NDArray[np.float64],
        moved: NDArray[np.float64],
    ) -> None:
        """Add the tower's per-device FLOP and bytes (``work``, (2, starts + 1)) to the
        single steps of ``logs`` that ran it (``flop`` / ``moved`` as `joined` orders
        them)."""
        offset = 0
        for log in logs:
            pairs = np.asarray(log.towers, np.int64).reshape(-1, 2)
            np.add.at(flop, offset + pairs[:, 0], work[0][pairs[:, 1]])
            np.add.at(moved, offset + pairs[:, 0], work[1][pairs[:, 1]])
            offset += len(log.spool.array()) // 7


def merged_timeline(timelines: Sequence[ArrayLike]) -> NDArray[np.float64]:
    """Rows (time, waiting, running, KV tokens) of the replicas summed (each rows of
    4 numbers, flat or not): each replica's values hold from its row to its next (0 before
    its first)."""
    arrays = [np.asarray(rows, float).reshape(-1, 4) for rows in timelines]
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
