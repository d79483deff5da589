"""Speculative decoding inside the serving simulator: a draft proposes ``k`` tokens per
sequence, the target verifies them in one pass of ``k + 1`` query tokens per sequence,
and the accepted tokens (with the target's own next token) stream to the client
together (Leviathan et al. 2023; vLLM's and SGLang's draft-model, MTP/EAGLE and n-gram
speculation).

One *iteration* of the decoding set of ``D`` sequences with context sum ``C`` (tokens
in the KV cache before it) costs, in seconds:

- the draft: ``k`` decode steps of the draft model, step ``j`` at context sum
  ``C + D j`` (`genz.StepCost.decode_time` of the draft's step cost; zero for n-gram /
  prompt-lookup drafting, which runs no model);
- the verify pass: one decode-form pass of the target over ``D (k + 1)`` query tokens,
  every one through the LM head, token ``j`` of a sequence attending its context plus
  ``j`` (context sum ``(k + 1) C + D (k + 1)(k + 2) / 2``), the runtime's per-sequence
  cost counted for the ``D`` sequences: `genz.StepCost.step_time` with no prompt
  chunk, the same costing `genz.speculative_decoding` applies at one context.

With an i.i.d. per-token acceptance rate ``a`` an iteration yields on average
``E = (1 - a^(k+1)) / (1 - a)`` tokens per sequence (``k + 1`` at ``a = 1``). The
simulator is deterministic: every sequence of iteration ``n`` (of its replica)
receives ``floor((n + 1) E) - floor(n E)`` tokens, so the count over iterations has
mean ``E`` and lies between 1 and ``k + 1``; per-sequence variation of the accepted
length is not modelled. A sequence whose last token falls inside an iteration leaves at
its end (tokens past its end are discarded, as engines do past a stop). The verify pass
writes ``k + 1`` KV slots per sequence: an iteration runs only with that room free
(vLLM's lookahead slots), and keeps the accepted tokens' KV.

The draft's weights and KV cache (one entry per token for each of its layers) share the
device with the target's (`kv_capacity_tokens`). Energy (`records.StepLog`) counts the
verify pass's FLOP and bytes, not the draft's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from genz import StepCost
from roofline import InputError

#: Most draft tokens per iteration (genz.speculative_decoding's range).
MAX_DRAFT_TOKENS = 64


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding of a replica (module doc).

    Parameters
    ----------
    draft_tokens
        Tokens the draft proposes per sequence per iteration, ``k`` in [1, 64] (vLLM
        ``num_speculative_tokens``).
    acceptance_rate
        Per-token probability that the target accepts a draft token, in [0, 1].
    draft
        ``"ngram"`` (prompt lookup: no draft model runs), ``"mtp"`` (the target's
        multi-token-prediction module, `genz.mtp_draft`) or a draft model's name
        (preset or config.json path).
    """

    draft_tokens: int
    acceptance_rate: float
    draft: str = "ngram"

    def __post_init__(self) -> None:
        k = self.draft_tokens
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_DRAFT_TOKENS:
            raise InputError(
                f"draft_tokens must be an integer in [1, {MAX_DRAFT_TOKENS}], got {k!r}"
            )
        a = self.acceptance_rate
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 <= a <= 1:
            raise InputError(f"acceptance_rate must be a number in [0, 1], got {a!r}")
        if not isinstance(self.draft, str) or not self.draft.strip():
            raise InputError("draft must be 'ngram', 'mtp' or a draft model's name")

    @property
    def expected_tokens(self) -> float:
        """Mean tokens per sequence per iteration, ``(1 - a^(k+1)) / (1 - a)``."""
        a, k = float(self.acceptance_rate), self.draft_tokens
        return float(k + 1) if a == 1 else (1 - a ** (k + 1)) / (1 - a)


class SpeculativeDecoder:
    """The cost and yield of speculative iterations on one replica (module doc):
    ``speculation`` with the draft's step cost (None: n-gram drafting, free)."""

    def __init__(self, speculation: Speculation, draft_cost: StepCost | None) -> None:
        self.speculation, self.draft_cost = speculation, draft_cost
        self.k = speculation.draft_tokens
        self.expected = speculation.expected_tokens

    def tokens(self, iteration: int) -> int:
        """Tokens each sequence receives in ``iteration`` (0-based, per replica)."""
        if self.expected == self.k + 1:
            return self.k + 1
        return math.floor((iteration + 1) * self.expected) - math.floor(iteration * self.expected)

    def verify_terms(self, sequences: int, context_sum: int) -> tuple[int, float, int]:
        """The verify pass as a decode-form step: (query tokens, their context sum
        after, rows through the LM head)."""
        q = self.k + 1
        return sequences * q, float(q * context_sum + sequences * q * (q + 1) / 2), sequences * q

    def iteration_s(self, target: StepCost, sequences: int, context_sum: int) -> float:
        """Seconds of one iteration of ``sequences`` at ``context_sum`` (module doc)."""
        tokens, contexts, rows = self.verify_terms(sequences, context_sum)
        seconds = target.step_time(0, 0.0, 0.0, tokens, contexts, rows, sequences)
        if self.draft_cost is not None:
            for j in range(1, self.k + 1):
                seconds += self.draft_cost.decode_time(
                    sequences, float(context_sum + sequences * j)
                )
        return seconds


def kv_capacity_tokens(
    target: StepCost,
    draft: StepCost | None,
    memory_utilization: float,
    activation_bytes: float,
) -> int:
    """KV tokens a replica holds with the draft resident beside the target: the share
    of memory left after both models' weights and ``activation_bytes``, over the KV
    bytes of one token in both (`genz.StepCost.kv_capacity_tokens` with no draft)."""
    if draft is None:
        return target.kv_capacity_tokens(memory_utilization, activation_bytes)
    free = (
        memory_utilization * target.capacity_bytes
        - target.weights_bytes
        - draft.weights_bytes
        - activation_bytes
    )
    return max(int(free // (target.kv_bytes_per_token + draft.kv_bytes_per_token)), 0)
