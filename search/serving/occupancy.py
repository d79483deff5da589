"""KV occupancy of the serving loop: what a request reserves of the paged KV budget,
with sliding-window layers and with several sequences per request (parallel samples,
beams).

Units. The budget is counted in *units*: ``unit`` units are the KV of one token on every
attention layer of the device (a full-attention-token equivalent, the token of
``kv_capacity_tokens``). A model without windowed layers has ``unit = 1`` (units are
tokens, as the loop always counted). With windowed layers the attention layers split
into ``full`` and ``windowed`` shares of ``unit`` (the reduced fraction of
``StepCost.window_kv_bytes_per_token`` over ``kv_bytes_per_token``: Gemma-2's 21 of 42
layers give 1 and 1 of 2, Mistral's all-windowed 0 and 1 of 1), so every count stays an
integer.

One sequence at context ``c`` reserves ``full x (c + s) + windowed x min(c + s, W)``
units, ``s = block_tokens - 1`` (its last block counted full, as for every sequence).
``W`` is the most a windowed layer holds in blocks: vLLM's sliding-window manager
(vllm-project/vllm ``vllm/v1/core/single_type_kv_cache_manager.py``,
``SlidingWindowManager.get_num_skipped_tokens``: ``max(0, computed - window + 1)`` tokens
are skipped and the blocks made only of them freed; the hybrid KV cache manager design,
https://docs.vllm.ai/en/latest/design/hybrid_kv_cache_manager/, read 2026-12-04: "sliding
window layers: reserve slots only for the most recent sliding_window_size tokens")
keeps at most ``ceil((w + b - 2) / b)`` blocks of ``b`` tokens, ``W`` that many times
``b``, with ``w`` the kept window (window plus sink tokens). A windowed layer's share stops
growing once ``c + s`` reaches ``W``. A step's prompt chunk past the window is not
reserved (vLLM allocates it for the step and frees it at the next; at most one chunk with
chunked prefill).

Sequences per request ``n`` (``--samples`` or ``--beams``): the request is one group of
``n`` sequences in lockstep (one prefill, the same output length). They share the whole
blocks of the prompt the request owns (``S = floor(own prompt / b) x b`` tokens), stored
once; each has its own copy of the prompt's last partial block (copy-on-write) and of
its generated tokens. On full layers the group holds ``n (c + s) - (n - 1) S``; on windowed
layers ``n min(c + s, W) - (n - 1) clip(S + K - c, 0, S)`` with ``K = W - s``: the shared
blocks are held once while in the window and slide out one token a step from ``c = K``
on, each sequence's window filling with its own tokens instead (so the group grows by
``n``, then ``n - 1``, then 0 tokens a step on those layers), as `genz.memory` counts
``n kept - (n - 1) shared``.
"""

from __future__ import annotations

import heapq
from fractions import Fraction

from genz import StepCost

#: Largest denominator of the windowed share of the KV bytes (layers per device).
MAX_LAYERS = 4096


class Occupancy:
    """Units a group of ``sequences`` reserves (module doc), and the growth of the
    decoding set's reservation step by step (``rate``, ``grow``) as windowed layers fill."""

    def __init__(self, cost: StepCost, block_tokens: int, sequences: int = 1) -> None:
        windowed = Fraction(0)
        if cost.window_tokens and cost.kv_bytes_per_token > 0:
            share = cost.window_kv_bytes_per_token / cost.kv_bytes_per_token
            windowed = Fraction(share).limit_denominator(MAX_LAYERS)
        self.unit = windowed.denominator
        self.windowed = windowed.numerator
        self.full = self.unit - self.windowed
        self.sequences = sequences
        self.block_tokens = block_tokens
        slack = block_tokens - 1
        kept = int(cost.window_tokens)
        held = (kept + 2 * block_tokens - 3) // block_tokens * block_tokens  # W
        self.cap = held - slack if self.windowed else 0  # c at which windowed layers stop
        self.slack = sequences * slack * self.unit  # a group's last blocks, units
        self.bytes_per_unit = cost.kv_bytes_per_token / self.unit
        self.windowed_rate = 0  # units the decoding groups' windowed layers add a step
        self.rates: dict[int, int] = {}  # group -> its share of that
        # (step, group, its join count, units a step less from then on)
        self.events: list[tuple[int, int, int, int]] = []
        self.joins: dict[int, int] = {}  # group -> times it joined (older events: stale)

    @property
    def plain(self) -> bool:
        """No windowed layer and one sequence per request: units are tokens and every
        count is the loop's own."""
        return self.unit == 1 and self.windowed == 0 and self.sequences == 1

    def units(self, context: int) -> int:
        """Units of one sequence at ``context`` tokens, its last block's slack left out."""
        if self.windowed:
            return self.full * context + self.windowed * min(context, self.cap)
        return self.full * context

    def group(self, own: int, shared_tokens: int, context: int) -> int:
        """Units of a group at ``context`` whose sequences each own ``own`` units and
        share the ``shared_tokens`` whole prompt blocks (module doc), slack left out."""
        n = self.sequences
        if n == 1:
            return own
        shared = self.full * shared_tokens
        if self.windowed:
            in_window = min(max(shared_tokens + self.cap - context, 0), shared_tokens)
            shared += self.windowed * in_window
        return n * own - (n - 1) * shared

    def shared(self, own_prompt: int) -> int:
        """Tokens of the whole blocks of a prompt of ``own_prompt`` tokens (a group's
        shared part; the last partial block is copied per sequence)."""
        return own_prompt // self.block_tokens * self.block_tokens

    # -- the decoding set's growth --------------------------------------------------

    def _windowed_steps(self, context: int, shared_tokens: int) -> list[tuple[int, int]]:
        """A group's windowed growth from ``context`` on: ``(tokens from now, units a
        step)`` for each phase (module doc: ``n``, then ``n - 1`` while shared blocks
        slide out, then none)."""
        n, cap = self.sequences, self.cap
        shared = shared_tokens if n > 1 else 0
        phases = []
        if context < cap:
            phases.append((cap - context, n * self.windowed))
        if shared and context < cap + shared:
            phases.append((cap + shared - max(context, cap), (n - 1) * self.windowed))
        return phases

    def step_units(self, context: int, shared_tokens: int) -> int:
        """Units a group at ``context`` adds in one decode step."""
        phases = self._windowed_steps(context, shared_tokens) if self.windowed else []
        return self.sequences * self.full + (phases[0][1] if phases else 0)

    def join(self, i: int, step: int, context: int, shared_tokens: int) -> None:
        """Group ``i`` joins the decoding set at ``step`` with ``context`` tokens."""
        if not self.windowed:
            return
        phases = self._windowed_steps(context, shared_tokens)
        if not phases:
            return
        join = self.joins[i] = self.joins.get(i, 0) + 1
        at = step
        for index, (length, units) in enumerate(phases):
            at += length
            after = phases[index + 1][1] if index + 1 < len(phases) else 0
            heapq.heappush(self.events, (at, i, join, units - after))
        self.rates[i] = phases[0][1]
        self.windowed_rate += phases[0][1]

    def drop(self, i: int) -> None:
        """Group ``i`` leaves the decoding set (its pending events go stale)."""
        self.windowed_rate -= self.rates.pop(i, 0)

    def rate(self, sequences: int) -> int:
        """Units the decoding set of ``sequences`` adds in its next step."""
        return self.full * sequences + self.windowed_rate

    def grow(self, step: int, steps: int, sequences: int) -> int:
        """Units the decoding set (``sequences``, at ``step``) adds over ``steps`` steps;
        groups whose windowed layers fill up on the way grow less from there."""
        added = self.full * sequences * steps
        if not self.windowed:
            return added
        end, events, rates = step + steps, self.events, self.rates
        added += self.windowed_rate * steps
        while events and events[0][0] <= end:
            at, i, join, less = heapq.heappop(events)
            rate = rates.get(i)
            if rate is None or join != self.joins[i]:  # stale: the group left or re-joined
                continue
            rates[i] = rate - less
            if not rates[i]:
                del rates[i]
            self.windowed_rate -= less
            added -= less * (end - at)
        return added
