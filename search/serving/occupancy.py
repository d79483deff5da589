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
its generated tokens. The group reserves ``n x one sequence - (n - 1) x full x S``: the
windowed layers' blocks are counted per sequence (an upper bound: the prompt's blocks
still inside the window are shared until they slide out).
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
        self.under = 0  # decoding groups whose windowed layers still grow
        self.crossings: list[tuple[int, int]] = []  # (step the group stops growing, id)
        self.stops: dict[int, int] = {}  # id -> that step

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

    def group(self, own: int, shared_tokens: int) -> int:
        """Units of a group whose sequences each own ``own`` units and share the
        ``shared_tokens`` whole prompt blocks (module doc), slack left out."""
        n = self.sequences
        if n == 1:
            return own
        return n * own - (n - 1) * self.full * shared_tokens

    def shared(self, own_prompt: int) -> int:
        """Tokens of the whole blocks of a prompt of ``own_prompt`` tokens (a group's
        shared part; the last partial block is copied per sequence)."""
        return own_prompt // self.block_tokens * self.block_tokens

    # -- the decoding set's growth --------------------------------------------------

    def join(self, i: int, step: int, context: int) -> None:
        """Group ``i`` joins the decoding set at ``step`` with ``context`` tokens."""
        if self.windowed and context < self.cap:
            stop = step + self.cap - context
            self.under += 1
            self.stops[i] = stop
            heapq.heappush(self.crossings, (stop, i))

    def drop(self, i: int) -> None:
        """Group ``i`` leaves the decoding set."""
        if self.stops.pop(i, None) is not None:  # still growing (`grow` pops the rest)
            self.under -= 1

    def step_units(self, context: int) -> int:
        """Units a group at ``context`` adds in one decode step."""
        return self.sequences * (self.full + (self.windowed if context < self.cap else 0))

    def rate(self, sequences: int) -> int:
        """Units the decoding set of ``sequences`` adds in its next step."""
        return self.full * sequences + self.windowed * self.sequences * self.under

    def grow(self, step: int, steps: int, sequences: int) -> int:
        """Units the decoding set (``sequences``, at ``step``) adds over ``steps`` steps;
        groups whose windowed layers fill up on the way stop growing there."""
        added = self.full * sequences * steps
        if not self.windowed:
            return added
        end, crossings, stops = step + steps, self.crossings, self.stops
        per_group = self.windowed * self.sequences
        added += per_group * self.under * steps
        while crossings and crossings[0][0] <= end:
            stop, i = heapq.heappop(crossings)
            if stops.get(i) != stop:  # stale: the group left or re-joined
                continue
            del stops[i]
            self.under -= 1
            added -= per_group * (end - stop)
        return added
