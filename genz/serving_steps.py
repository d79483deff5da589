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

*State* operators (the scans of state-space and linear-attention layers) are token
operators whose prefill bytes also count a fixed state per sequence: written by every
prompt chunk, and read too by a chunk that continues its sequence. Their prefill-form
compute, memory and overhead are tabulated at every ``T`` for one sequence (one state
written), plus each operator's memory time of one more state; a step of ``T`` tokens
whose ``n`` prompt chunks make ``k = n (1 + [C > T_prefill])`` state passes (chunks taken
alike, as for the windowed sums) pays, in the prefill form, ``max(compute[T], memory[T]
+ (k T / T_prefill - 1) x state) + overhead[T]`` per operator: the prefill pass of ``T``
tokens in chunks of the step's size, which the blend then weighs by the prefill share.

Prefill-form and decode-form passes are costed separately (they differ for MLA and in
runtime efficiencies); a mixed step blends the two by its prefill share of tokens
(exact for pure steps, which reproduce `genz.predict`'s TTFT and TPOT).

*Adapter* operators (batched multi-LoRA, `genz.adapter_steps`) are token operators whose
bytes count the weights of every adapter the step's ``S`` sequences touch, ``A (1 -
(1 - 1/A)^S)`` of the ``A`` resident (Punica / S-LoRA: each distinct adapter's weights
read once per step, requests spread uniformly): tabulated at every ``T`` with one adapter,
plus the memory seconds of each further adapter, in both forms. Contexts
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

from .adapter_steps import (
    AdapterLists,
    adapter_lists,
    adapter_time,
    adapter_times,
    adapters_touched,
)
from .state_steps import state_lists, state_passes, state_prefill_time, state_prefill_times

#: `StepCost.kv_capacity_tokens` of a model with no per-token cache (a pure SSM).
UNBOUNDED_KV_TOKENS = 10**15


@dataclass(frozen=True)
class StepCost:
    """Time of serving steps of one model replica, from genz's cost model (seconds).

    Built by `step_cost`. Tables are indexed by form (0 prefill, 1 decode). Call
    `step_times` with the aggregates of each step (numbers or equal-length arrays).
    ``kv_bytes_per_token`` is per device for one token of one sequence (all the
    device's layers), ``state_bytes_per_sequence`` the fixed state of one sequence
    (state-space and linear-attention layers); ``weights_bytes`` per device.
    ``window_tokens`` is the kept window w' of the windowed layers (0: none) and
    ``windowed`` marks their context operators (see `windowed_sums`). With offload
    (`genz.offload`), ``weights_bytes`` is the device-resident part and a step takes
    ``max(device time, host-link bytes / host_link_bytes_per_s)`` (`link_times`).
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
    context_work: NDArray[np.float64]  # (2 quantities, 2 forms, full / windowed, 4)
    runtime: str = "ideal"
    state_bytes_per_sequence: float = 0.0
    window_tokens: float = 0.0
    windowed: NDArray[np.bool_] | None = None  # (operators,): a windowed layer's operator
    window_kv_bytes_per_token: float = 0.0  # the windowed layers' share of kv_bytes_per_token
    offloaded_weights_bytes: float = 0.0  # per device, in host memory, streamed every step
    kv_offload: float = 0.0  # share of the KV cache (and states) in host memory
    host_link_bytes_per_s: float = 0.0
    #: Host work overlaps the GPU (async / overlap scheduling): a step takes the larger of
    #: the runtime's fixed cost (``fixed_step_s + fixed_sequence_s x sequences``, host
    #: time) and the rest (device time), not their sum.
    host_overlap: bool = False
    #: Prefill form of the state operators (module doc): compute, memory and overhead
    #: seconds at every token count for one sequence, shape (3, operators, max_tokens + 1),
    #: and per operator the memory seconds of one more state pass (operators,).
    state_prefill_s: NDArray[np.float64] | None = None
    state_pass_s: NDArray[np.float64] | None = None
    #: Per-device FLOP and bytes of one more state pass over the state operators (2,).
    state_pass_work: NDArray[np.float64] | None = None
    #: Several LoRA adapters resident (0: none or one, in the token tables): the adapter
    #: operators' compute, memory and overhead seconds at every token count with one
    #: adapter touched, shape (2 forms, 3, operators, max_tokens + 1), the memory seconds
    #: of one more adapter (2 forms, operators) and its per-device FLOP and bytes (2,);
    #: a step of S sequences touches `genz.adapter_steps.adapters_touched` (A, S).
    lora_adapters: float = 0.0
    #: A VLM's requests carry images (`genz.vision_steps`): the vision tower's seconds
    #: in a step where ``k`` requests start their prefill, by ``k`` (max_sequences + 1,);
    #: the serving loop adds them to that step (a step's first chunk: context = chunk).
    vision_s: NDArray[np.float64] | None = None
    #: Per-device FLOP and bytes of that tower, by ``k``, shape (2, max_sequences + 1),
    #: for the step's energy (`search.serving.records.StepLog.joined`).
    vision_work: NDArray[np.float64] | None = None
    adapter_tables: NDArray[np.float64] | None = None
    adapter_weight_s: NDArray[np.float64] | None = None
    adapter_work: NDArray[np.float64] | None = None

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
        ctx, pairs = np.asarray(prefill_context_sum, float), np.asarray(prefill_pairs_sum, float)
        dctx, seqs = np.asarray(decode_context_sum, float), np.asarray(sequences, float)
        prefill_token = self.token_time_s[0][tokens]
        if self.state_prefill_s is not None:
            prefill_token = prefill_token + self._state_times(tokens, tp, ctx, d, seqs)
        decode_token = self.token_time_s[1][tokens]
        if self.adapter_tables is not None:
            assert self.adapter_weight_s is not None
            extra = adapters_touched(self.lora_adapters, seqs) - 1.0
            tables, slopes = self.adapter_tables, self.adapter_weight_s
            prefill_token = prefill_token + adapter_times(tables, slopes, 0, tokens, extra)
            decode_token = decode_token + adapter_times(tables, slopes, 1, tokens, extra)
        total = self._combine(
            (prefill_token, decode_token),
            (self.head_time_s[0][rows], self.head_time_s[1][rows]),
            w,
            (tp, ctx, pairs),
            (d, dctx),
            seqs,
            np.maximum,
            self.windowed_sums(tp, ctx, pairs, d, dctx, seqs),
        )
        if self.host_overlap:
            total = self._overlapped(total, w, seqs, np.maximum)
        if self.host_link_bytes_per_s:
            total = np.maximum(total, self.link_times(tp, d, dctx, seqs))
        return np.where(tokens > 0, total, 0.0)

    def link_times(
        self, prefill_tokens: Any, decode_sequences: Any, decode_context_sum: Any, sequences: Any
    ) -> Any:
        """Host-link time of steps with offload, seconds (numbers or arrays; 0 without):
        the offloaded weights, plus ``kv_offload`` of the KV the step reads (its decoding
        sequences' caches, windowed layers capped) and writes (the prompt tokens' KV and
        the new chunks' states), as `genz.predict` streams them per pass."""
        if not self.host_link_bytes_per_s:
            return 0.0 * decode_context_sum
        (_, _, _), (_, capped) = self.windowed_sums(
            prefill_tokens,
            0.0 * prefill_tokens,
            0.0 * prefill_tokens,
            decode_sequences,
            decode_context_sum,
            sequences,
        )
        full = self.kv_bytes_per_token - self.window_kv_bytes_per_token
        read = full * decode_context_sum + self.window_kv_bytes_per_token * capped
        chunks = sequences - decode_sequences
        moved = read + self.kv_bytes_per_token * prefill_tokens
        moved = moved + self.state_bytes_per_sequence * (decode_sequences + chunks)
        return (self.offloaded_weights_bytes + self.kv_offload * moved) / self.host_link_bytes_per_s

    def windowed_sums(
        self,
        prefill_tokens: Any,
        prefill_context_sum: Any,
        prefill_pairs_sum: Any,
        decode_sequences: Any,
        decode_context_sum: Any,
        sequences: Any,
    ) -> tuple[tuple[Any, Any, Any], tuple[Any, Any]]:
        """The step aggregates a windowed layer sees (numbers or arrays), from the step's
        sums: prefill ``(T, keys, pairs)`` with keys ``min(C, T + n (w' - 1))`` and pairs
        the causal pairs less ``n`` times the mean chunk's excess past the window
        (`genz.windows.window_pairs`; ``n = sequences - D`` chunks of ``T / n`` tokens
        ending at ``C / n``), decode ``(D, min(C_d, D w'))``. Exact when the chunks are
        alike and every sequence is on the same side of the window (a long-context
        step: all past it); an upper bound otherwise (``min`` is concave)."""
        w = self.window_tokens
        if not w:
            return (prefill_tokens, prefill_context_sum, prefill_pairs_sum), (
                decode_sequences,
                decode_context_sum,
            )
        chunks: Any = sequences - decode_sequences
        n: Any
        if isinstance(chunks, np.ndarray):
            n = np.maximum(chunks, 1.0)
            q, c = prefill_tokens / n, prefill_context_sum / n
            past = np.clip(c - w, 0.0, q)
            keys = np.minimum(prefill_context_sum, prefill_tokens + n * (w - 1))
            minimum: Any = np.minimum
        else:
            n = max(chunks, 1)
            q, c = prefill_tokens / n, prefill_context_sum / n
            past = min(max(c - w, 0.0), q)
            keys = min(prefill_context_sum, prefill_tokens + n * (w - 1))
            minimum = min
        pairs = prefill_pairs_sum - n * (past * (c - w) - past * (past - 1) / 2)
        decode = minimum(decode_context_sum, decode_sequences * w)
        return (prefill_tokens, keys, pairs), (decode_sequences, decode)

    @property
    def affine_in_context(self) -> bool:
        """True when a step's time is the token tables plus terms affine in the context
        sums (no windowed layer, no offload, no host overlap, no state operators), so
        `decode_terms` may be inlined as ``compute + slope x sum`` and a loop may cost
        steps from the tables alone; False: call `step_time` / `decode_time` /
        `decode_times`, which cap the windowed terms, take the host-link time of offload,
        overlap host work and count the state passes of prompt chunks, and the serving
        loop adds the vision tower of a VLM's starting prefills (`vision_s`)."""
        return (
            not self.window_tokens
            and not self.host_link_bytes_per_s
            and not self.host_overlap
            and self.state_prefill_s is None
            and self.adapter_tables is None
            and self.vision_s is None
        )

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
        if prefill_tokens and self.state_prefill_s is not None:
            token = (
                token[0]
                + self._state_time(
                    tokens, prefill_tokens, prefill_context_sum, decode_sequences, sequences
                ),
                token[1],
            )
        if self.adapter_tables is not None:
            extra = adapters_touched(self.lora_adapters, sequences) - 1.0
            token = (
                token[0] + adapter_time(self._adapter_lists, 0, tokens, extra),
                token[1] + adapter_time(self._adapter_lists, 1, tokens, extra),
            )
        device = self._combine(
            token,
            head,
            w,
            (prefill_tokens, prefill_context_sum, prefill_pairs_sum),
            (decode_sequences, decode_context_sum),
            sequences,
            max,
            self.windowed_sums(
                prefill_tokens,
                prefill_context_sum,
                prefill_pairs_sum,
                decode_sequences,
                decode_context_sum,
                sequences,
            )
            if self.window_tokens
            else None,
        )
        if self.host_overlap:
            device = self._overlapped(device, w, sequences, max)
        if self.host_link_bytes_per_s:
            return max(
                float(device),
                float(
                    self.link_times(prefill_tokens, decode_sequences, decode_context_sum, sequences)
                ),
            )
        return float(device)

    def decode_times(self, sequences: int, context_sums: ArrayLike) -> NDArray[np.float64]:
        """`step_times` of decode-only steps, seconds: ``sequences`` sequences decoding
        (all emitting, no prompt chunk) at each of ``context_sums``. The same floating-point
        operations in the same order, less those on the prefill terms (exact zeros), so
        equal to `step_times` bit for bit at a fraction of its cost on short runs."""
        contexts = np.asarray(context_sums, float)
        if sequences <= 0:
            return np.zeros(contexts.shape)
        base, operators = self.decode_terms(sequences)
        if not operators and not self.host_link_bytes_per_s:
            flat = np.full(contexts.shape, base)
            return self._overlapped(flat, 0.0, sequences, np.maximum) if self.host_overlap else flat
        total: Any = base + 0.0 * contexts
        capped = np.minimum(contexts, sequences * self.window_tokens)
        for (compute, memory, slope_c, slope_m, overhead), windowed in zip(
            operators, self._windowed, strict=True
        ):
            x = capped if windowed else contexts
            total = total + np.maximum(compute + slope_c * x, memory + slope_m * x)
            total = total + overhead
        if self.host_overlap:
            total = self._overlapped(total, 0.0, sequences, np.maximum)
        if self.host_link_bytes_per_s:
            total = np.maximum(total, self.link_times(0.0, sequences, contexts, sequences))
        return total

    def decode_time(self, sequences: int, context_sum: float) -> float:
        """`step_time` of one decode-only step (`decode_times`), seconds."""
        if sequences <= 0:
            return 0.0
        total, operators = self.decode_terms(sequences)
        capped = min(context_sum, sequences * self.window_tokens)
        for (compute, memory, slope_c, slope_m, overhead), windowed in zip(
            operators, self._windowed, strict=True
        ):
            x = capped if windowed else context_sum
            total = total + max(compute + slope_c * x, memory + slope_m * x)
            total = total + overhead
        if self.host_overlap:
            total = self._overlapped(total, 0.0, sequences, max)
        if self.host_link_bytes_per_s:
            return max(total, float(self.link_times(0.0, sequences, context_sum, sequences)))
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
        ``overhead``, added in that order (a caller may inline it when
        `affine_in_context`; a windowed operator's context is ``min(sum, D w')``)."""
        known = self._decode_cache.get(sequences)
        if known is not None:
            return known
        token_lists, head_lists = self._lists
        try:
            total = token_lists[1][sequences] + head_lists[1][sequences]
        except IndexError:
            self._check(sequences, sequences)
            raise
        if self.adapter_tables is not None:
            extra = adapters_touched(self.lora_adapters, sequences) - 1.0
            total = total + adapter_time(self._adapter_lists, 1, sequences, extra)
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
        sequences: ArrayLike | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-device FLOP and main-memory bytes of each step (arguments as
        `step_times`, equal-length arrays; ``sequences`` None: one prompt chunk per
        prefilling row, ``emitting``)."""
        tp, d, rows, tokens, w = self._step_arrays(prefill_tokens, decode_sequences, emitting)
        v = 1 - w
        ctx, pairs = np.asarray(prefill_context_sum, float), np.asarray(prefill_pairs_sum, float)
        dctx = np.asarray(decode_context_sum, float)
        seqs = np.asarray(emitting if sequences is None else sequences, float)
        (_, w_ctx, w_pairs), (_, w_dctx) = self.windowed_sums(tp, ctx, pairs, d, dctx, seqs)
        extra = 0.0 * tp  # state passes beyond the tables' one per prefill-form pass
        if self.state_pass_work is not None:
            extra = np.where(tp > 0, state_passes(tp, ctx, d, seqs) - w, 0.0)
        out = []
        for q in (0, 1):
            token, head = self.token_work[q], self.head_work[q]
            total = w * (token[0][tokens] + head[0][rows]) + v * (token[1][tokens] + head[1][rows])
            if self.state_pass_work is not None:
                total = total + extra * self.state_pass_work[q]
            if self.adapter_work is not None:  # the adapters beyond the tables' one
                more = adapters_touched(self.lora_adapters, seqs) - 1.0
                total = total + more * self.adapter_work[q]
            for kind, (c, p, dc) in enumerate(((ctx, pairs, dctx), (w_ctx, w_pairs, w_dctx))):
                pre, dec = self.context_work[q][0][kind], self.context_work[q][1][kind]
                total = total + w * pre[0] + v * dec[0]
                total = total + pre[1] * tp + pre[2] * c + pre[3] * p + dec[1] * d + dec[2] * dc
            out.append(np.where(tokens > 0, total, 0.0))
        return out[0], out[1]

    #: State passes of a step's prompt chunks (`genz.state_steps.state_passes`).
    state_passes = staticmethod(state_passes)

    def _state_times(
        self, tokens: NDArray[np.int64], tp: Any, ctx: Any, d: Any, seqs: Any
    ) -> NDArray[np.float64]:
        """Prefill-form time of the state operators at each step (module doc), seconds."""
        assert self.state_prefill_s is not None and self.state_pass_s is not None
        return state_prefill_times(
            self.state_prefill_s, self.state_pass_s, tokens, state_passes(tp, ctx, d, seqs), tp
        )

    def _state_time(
        self, tokens: int, prefill_tokens: int, context_sum: float, decode: int, sequences: int
    ) -> float:
        """`_state_times` of one step with prompt tokens, in plain Python arithmetic."""
        passes = state_passes(prefill_tokens, context_sum, decode, sequences)
        return state_prefill_time(self._state_lists, tokens, passes * tokens / prefill_tokens - 1.0)

    @cached_property
    def _adapter_lists(self) -> AdapterLists:
        assert self.adapter_tables is not None and self.adapter_weight_s is not None
        return adapter_lists(self.adapter_tables, self.adapter_weight_s)

    @cached_property
    def _state_lists(self) -> list[tuple[list[float], list[float], list[float], float]]:
        assert self.state_prefill_s is not None and self.state_pass_s is not None
        return state_lists(self.state_prefill_s, self.state_pass_s)

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
    def _windowed(self) -> list[bool]:
        """Per context operator: True for a windowed layer's."""
        count = self.context_compute.shape[1]
        if self.windowed is None:
            return [False] * count
        return [bool(flag) for flag in self.windowed]

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
        windowed_x: tuple[tuple[Any, Any, Any], tuple[Any, Any]] | None = None,
    ) -> Any:
        """The step formula on numbers or arrays (see the module doc); windowed
        operators take ``windowed_x`` (`windowed_sums`) in place of the step's sums."""
        v = 1 - w
        step, per = self._fixed
        total = w * token[0] + v * token[1] + w * head[0] + v * head[1]
        total = total + w * step[0] + v * step[1] + (w * per[0] + v * per[1]) * sequences
        for (compute, memory, overhead), windowed in zip(
            self._coefficients, self._windowed, strict=True
        ):
            px, dx = windowed_x if windowed and windowed_x is not None else (prefill_x, decode_x)
            terms = []
            for pre, dec in (compute, memory):
                terms.append(
                    w * pre[0]
                    + v * dec[0]
                    + pre[1] * px[0]
                    + pre[2] * px[1]
                    + pre[3] * px[2]
                    + dec[1] * dx[0]
                    + dec[2] * dx[1]
                )
            total = total + maximum(terms[0], terms[1]) + w * overhead[0] + v * overhead[1]
        return total

    def kv_capacity_tokens(self, memory_utilization: float, activation_bytes: float) -> int:
        """Tokens of KV cache the replica holds: ``memory_utilization`` of each device's
        memory minus weights, ``activation_bytes`` of working set and a fixed state for
        each of the ``max_sequences`` sequences (state-space / linear-attention layers;
        vLLM reserves them per sequence slot), over the KV bytes of one token (0 when
        that leaves nothing; `UNBOUNDED_KV_TOKENS` for a model without a KV cache)."""
        free = memory_utilization * self.capacity_bytes - self.weights_bytes - activation_bytes
        free -= self.max_sequences * self.state_bytes_per_sequence * (1.0 - self.kv_offload)
        if free <= 0:
            return 0
        per_token = self.kv_bytes_per_token * (1.0 - self.kv_offload)  # the device's share
        if per_token <= 0:
            return UNBOUNDED_KV_TOKENS
        return min(int(free // per_token), UNBOUNDED_KV_TOKENS)

    def kv_bytes_per_sequence(self, context: ArrayLike) -> NDArray[np.float64]:
        """Per-device cache bytes of one sequence at ``context`` tokens: its state plus
        ``kv_bytes_per_token`` per token, the windowed layers' share capped at the window
        (what the replica really holds; `kv_capacity_tokens` counts every token)."""
        c = np.asarray(context, float)
        return (
            self.state_bytes_per_sequence
            + self.kv_bytes_per_token * c
            - (
                self.window_kv_bytes_per_token * np.maximum(c - self.window_tokens, 0.0)
                if self.window_tokens
                else 0.0
            )
        )
