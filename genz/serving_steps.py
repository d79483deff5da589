"""Cost of one serving step (a forward pass over a mix of prefill chunks and decode
sequences), vectorised over many steps, from genz's own operator graph and costing.

A continuous-batching step runs one forward pass over ``T`` tokens: the prefill
chunks of some sequences (``q`` new tokens attending to ``c`` tokens each) and one
token of every decoding sequence. genz's operators split into three kinds by what
their FLOP and bytes depend on (found by probing the graph, not by name):

- *token* operators (projections, FFN or MoE, norms, collectives, embedding,
  pipeline hand-offs) depend on the step's token count ``T`` only; their genz cost
  (roofline ``max(compute, memory)`` + interconnect + launch overhead, MoE weights of
  the expected experts touched by ``T`` tokens) is tabulated at every integer ``T``;
- *head* operators (final norm, LM head) run on the ``H`` rows that emit a token
  (decoding sequences and prefills finishing their prompt), tabulated at every ``H``;
- *context* operators (attention; MLA's K/V decompression) have compute and memory
  times affine in ``(1, T_prefill, sum of chunk contexts, sum of causal pairs)`` for the
  prefill chunks and ``(1, D, sum of decode contexts)`` for the ``D`` decode tokens;
  the coefficients are solved from genz's costed graph at probe shapes (exact: the
  graph is affine in these aggregates, checked on construction) and the step pays
  ``max(compute, memory) + overhead`` per operator over all its sequences at once.

Prefill-form and decode-form passes are costed separately (they differ for MLA and in
runtime efficiencies); a mixed step blends the two by its prefill share of tokens
(exact for pure steps, which reproduce `genz.predict`'s TTFT and TPOT). Contexts
count the tokens in the KV cache after the step (genz's convention).

With a runtime profile (`genz.load_runtime`), resolved once for the platform and the
precision (`genz.resolved.resolve`), the probes take the cost path `genz.predict` takes
(stored weight bits, the physics platform, per-phase fractions of peak, KV-format memory
factors, all-reduce latency), and each step adds the profile's fixed cost
``step_overhead_s + sequence_overhead_s x sequences`` of its phase (blended the same way).
The tables are built by `genz.step_probes.step_cost`.

Alongside the times, the same probes give each step's per-device FLOP and main-memory
bytes (`StepCost.step_work`): token and head operators tabulated the same way, context
operators affine in the same aggregates (no ``max``: FLOP and bytes add up over
operators), blended by the prefill share as the times are. They count the operators
that take time, as `genz.predict`'s ``PhaseCost.flop`` and ``bytes`` do, and feed the
activity power model (`search.economics.serving_energy_j`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError


@dataclass(frozen=True)
class StepCost:
    """Time of serving steps of one model replica, from genz's cost model (seconds).

    Built by `step_cost`. Tables are indexed by form (0 prefill, 1 decode). Call
    `step_times` with the aggregates of each step (numbers or equal-length arrays).
    ``kv_bytes_per_token`` is per device for one token of one sequence (all the
    device's layers); ``weights_bytes`` per device.
    """

    model: str
    platform: str
    token_time_s: NDArray[np.float64]  # (2, max_tokens + 1)
    head_time_s: NDArray[np.float64]  # (2, max_sequences + 1)
    context_compute: NDArray[np.float64]  # (2, operators, features=4); decode uses 3
    context_memory: NDArray[np.float64]
    context_overhead_s: NDArray[np.float64]  # (2, operators)
    kv_bytes_per_token: float
    weights_bytes: float
    capacity_bytes: float
    fixed_step_s: NDArray[np.float64]  # (2,): the runtime's fixed cost per step
    fixed_sequence_s: NDArray[np.float64]  # (2,): and per sequence in the step
    token_work: NDArray[np.float64]  # (2 quantities, 2 forms, max_tokens + 1)
    head_work: NDArray[np.float64]  # (2 quantities, 2 forms, max_sequences + 1)
    context_work: NDArray[np.float64]  # (2 quantities, 2 forms, features=4)
    runtime: str = "ideal"
    #: Host work overlaps the GPU (async / overlap scheduling): a step takes the larger of
    #: the runtime's fixed cost (``fixed_step_s + fixed_sequence_s x sequences``, host
    #: time) and the rest (device time), not their sum.
    host_overlap: bool = False

    @property
    def max_tokens(self) -> int:
        """Largest token count per step the tables cover."""
        return self.token_time_s.shape[1] - 1

    @property
    def max_sequences(self) -> int:
        """Largest count of token-emitting sequences per step the tables cover."""
        return self.head_time_s.shape[1] - 1

    def step_times(
        self,
        prefill_tokens: ArrayLike,
        prefill_context_sum: ArrayLike,
        prefill_pairs_sum: ArrayLike,
        decode_sequences: ArrayLike,
        decode_context_sum: ArrayLike,
        emitting: ArrayLike,
        sequences: ArrayLike,
    ) -> NDArray[np.float64]:
        """Time of each step, seconds, for equal-length arrays of step aggregates.

        Parameters
        ----------
        prefill_tokens
            New prompt tokens in the step (sum of chunk sizes ``q``).
        prefill_context_sum
            Sum over the chunks of the context after the chunk ``c`` (tokens).
        prefill_pairs_sum
            Sum over the chunks of causal query-key pairs ``q c - q (q - 1) / 2``.
        decode_sequences
            Sequences decoding one token in the step (``D``).
        decode_context_sum
            Sum of their contexts after the step (tokens).
        emitting
            Rows through the LM head: ``D`` plus prefills that finish their prompt.
        sequences
            Sequences in the step (decoding plus those with a prompt chunk); the runtime
            profile's per-sequence cost counts them.
        """
        tp, d, rows, tokens, w = self._step_arrays(prefill_tokens, decode_sequences, emitting)
        total = self._combine(
            (self.token_time_s[0][tokens], self.token_time_s[1][tokens]),
            (self.head_time_s[0][rows], self.head_time_s[1][rows]),
            w,
            (tp, np.asarray(prefill_context_sum, float), np.asarray(prefill_pairs_sum, float)),
            (d, np.asarray(decode_context_sum, float)),
            np.asarray(sequences, float),
            np.maximum,
        )
        if self.host_overlap:
            total = self._overlapped(total, w, np.asarray(sequences, float), np.maximum)
        return np.where(tokens > 0, total, 0.0)

    def step_time(
        self,
        prefill_tokens: int,
        prefill_context_sum: float,
        prefill_pairs_sum: float,
        decode_sequences: int,
        decode_context_sum: float,
        emitting: int,
        sequences: int,
    ) -> float:
        """`step_times` of one step in plain Python arithmetic (the simulator's hot path:
        a few microseconds where numpy on scalars takes a hundred), seconds."""
        tokens = prefill_tokens + decode_sequences
        if tokens <= 0:
            return 0.0
        w = prefill_tokens / tokens
        token_lists, head_lists = self._lists
        try:
            token = (token_lists[0][tokens], token_lists[1][tokens])
            head = (head_lists[0][emitting], head_lists[1][emitting])
        except IndexError:
            self._check(tokens, emitting)
            raise
        total = self._combine(
            token,
            head,
            w,
            (prefill_tokens, prefill_context_sum, prefill_pairs_sum),
            (decode_sequences, decode_context_sum),
            sequences,
            max,
        )
        if self.host_overlap:
            total = self._overlapped(total, w, sequences, max)
        return float(total)

    def decode_times(self, sequences: int, context_sums: ArrayLike) -> NDArray[np.float64]:
        """`step_times` of decode-only steps, seconds: ``sequences`` sequences decoding
        (all emitting, no prompt chunk) at each of ``context_sums``. The same floating-point
        operations in the same order, less those on the prefill terms (exact zeros), so
        equal to `step_times` bit for bit at a fraction of its cost on short runs."""
        contexts = np.asarray(context_sums, float)
        if sequences <= 0:
            return np.zeros(contexts.shape)
        base, operators = self.decode_terms(sequences)
        if not operators:
            flat = np.full(contexts.shape, base)
            return self._overlapped(flat, 0.0, sequences, np.maximum) if self.host_overlap else flat
        total: Any = base
        for compute, memory, slope_c, slope_m, overhead in operators:
            total = total + np.maximum(compute + slope_c * contexts, memory + slope_m * contexts)
            total = total + overhead
        if self.host_overlap:
            total = self._overlapped(total, 0.0, sequences, np.maximum)
        return total

    def decode_time(self, sequences: int, context_sum: float) -> float:
        """`step_time` of one decode-only step (`decode_times`), seconds."""
        if sequences <= 0:
            return 0.0
        total, operators = self.decode_terms(sequences)
        for compute, memory, slope_c, slope_m, overhead in operators:
            total = total + max(compute + slope_c * context_sum, memory + slope_m * context_sum)
            total = total + overhead
        if self.host_overlap:
            total = self._overlapped(total, 0.0, sequences, max)
        return total

    def decode_terms(
        self, sequences: int
    ) -> tuple[float, list[tuple[float, float, float, float, float]]]:
        """For a decode-only step of ``sequences`` sequences: the terms of `_combine` that
        do not depend on the context sum (token and head tables, the runtime's fixed
        cost; seconds), and per context operator its compute and memory constants (s),
        their slopes in the context sum (s per token), and its overhead (s); checked
        against the tables. `decode_time` is ``constant`` plus, operator by operator,
        ``max(compute + slope_c x context, memory + slope_m x context)`` then
        ``overhead``, added in that order (a caller may inline it unless `host_overlap`)."""
        known = self._decode_cache.get(sequences)
        if known is not None:
            return known
        token_lists, head_lists = self._lists
        try:
            total = token_lists[1][sequences] + head_lists[1][sequences]
        except IndexError:
            self._check(sequences, sequences)
            raise
        step, per = self._fixed
        total = total + step[1] + per[1] * sequences
        operators = [
            (
                compute[1][0] + compute[1][1] * sequences,
                memory[1][0] + memory[1][1] * sequences,
                compute[1][2],
                memory[1][2],
                overhead[1],
            )
            for compute, memory, overhead in self._coefficients
        ]
        self._decode_cache[sequences] = (total, operators)
        return total, operators

    @cached_property
    def _decode_cache(
        self,
    ) -> dict[int, tuple[float, list[tuple[float, float, float, float, float]]]]:
        """`decode_terms` by sequence count, filled as the simulator asks."""
        return {}

    def step_work(
        self,
        prefill_tokens: ArrayLike,
        prefill_context_sum: ArrayLike,
        prefill_pairs_sum: ArrayLike,
        decode_sequences: ArrayLike,
        decode_context_sum: ArrayLike,
        emitting: ArrayLike,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-device FLOP and main-memory bytes of each step (arguments as
        `step_times`, equal-length arrays)."""
        tp, d, rows, tokens, w = self._step_arrays(prefill_tokens, decode_sequences, emitting)
        v = 1 - w
        ctx, pairs = np.asarray(prefill_context_sum, float), np.asarray(prefill_pairs_sum, float)
        dctx = np.asarray(decode_context_sum, float)
        out = []
        for q in (0, 1):
            token, head, (pre, dec) = self.token_work[q], self.head_work[q], self.context_work[q]
            total = w * (token[0][tokens] + head[0][rows] + pre[0])
            total = total + v * (token[1][tokens] + head[1][rows] + dec[0])
            total = total + pre[1] * tp + pre[2] * ctx + pre[3] * pairs + dec[1] * d + dec[2] * dctx
            out.append(np.where(tokens > 0, total, 0.0))
        return out[0], out[1]

    def _step_arrays(
        self, prefill_tokens: ArrayLike, decode_sequences: ArrayLike, emitting: ArrayLike
    ) -> tuple[
        NDArray[np.float64],
        NDArray[np.float64],
        NDArray[np.int64],
        NDArray[np.int64],
        NDArray[np.float64],
    ]:
        """Per step: prefill tokens and decode sequences as floats, LM-head rows and
        tokens (their sum) as table indices checked against the tables, and the prefill
        share of the tokens ``w`` (0 for an empty step)."""
        tp = np.asarray(prefill_tokens, float)
        d = np.asarray(decode_sequences, float)
        rows = np.asarray(emitting, np.int64)
        tokens = (tp + d).astype(np.int64)
        self._check(int(np.max(tokens, initial=0)), int(np.max(rows, initial=0)))
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.where(tokens > 0, tp / tokens, 0.0)
        return tp, d, rows, tokens, w

    @cached_property
    def _lists(self) -> tuple[list[list[float]], list[list[float]]]:
        return self.token_time_s.tolist(), self.head_time_s.tolist()

    @cached_property
    def _fixed(self) -> tuple[list[float], list[float]]:
        return self.fixed_step_s.tolist(), self.fixed_sequence_s.tolist()

    @cached_property
    def _coefficients(self) -> list[tuple[list[list[float]], list[list[float]], list[float]]]:
        """Per context operator: compute and memory coefficients and overhead, by form."""
        return [
            (
                self.context_compute[:, op].tolist(),
                self.context_memory[:, op].tolist(),
                self.context_overhead_s[:, op].tolist(),
            )
            for op in range(self.context_compute.shape[1])
        ]

    def _check(self, tokens: int, rows: int) -> None:
        if tokens > self.max_tokens or rows > self.max_sequences:
            raise InputError(
                f"a step of {tokens} tokens and {rows} emitting sequences exceeds the "
                f"{self.max_tokens} tokens and {self.max_sequences} sequences this step "
                "cost covers"
            )

    def _overlapped(self, total: Any, w: Any, sequences: Any, maximum: Any) -> Any:
        """``total`` (the summed step time) with the host's fixed cost overlapping the
        device's work (`host_overlap`): the larger of the two, seconds."""
        step, per = self._fixed
        v = 1 - w
        host = w * step[0] + v * step[1] + (w * per[0] + v * per[1]) * sequences
        return maximum(total - host, host)

    def _combine(
        self,
        token: tuple[Any, Any],
        head: tuple[Any, Any],
        w: Any,
        prefill_x: tuple[Any, Any, Any],
        decode_x: tuple[Any, Any],
        sequences: Any,
        maximum: Any,
    ) -> Any:
        """The step formula on numbers or arrays (see the module doc)."""
        v = 1 - w
        step, per = self._fixed
        total = w * token[0] + v * token[1] + w * head[0] + v * head[1]
        total = total + w * step[0] + v * step[1] + (w * per[0] + v * per[1]) * sequences
        for compute, memory, overhead in self._coefficients:
            terms = []
            for pre, dec in (compute, memory):
                terms.append(
                    w * pre[0]
                    + v * dec[0]
                    + pre[1] * prefill_x[0]
                    + pre[2] * prefill_x[1]
                    + pre[3] * prefill_x[2]
                    + dec[1] * decode_x[0]
                    + dec[2] * decode_x[1]
                )
            total = total + maximum(terms[0], terms[1]) + w * overhead[0] + v * overhead[1]
        return total

    def kv_capacity_tokens(self, memory_utilization: float, activation_bytes: float) -> int:
        """Tokens of KV cache the replica holds: ``memory_utilization`` of each device's
        memory minus weights and ``activation_bytes`` of working set, over the KV bytes
        of one token (0 when the weights alone do not fit)."""
        free = memory_utilization * self.capacity_bytes - self.weights_bytes - activation_bytes
        return max(int(free // self.kv_bytes_per_token), 0)
