"""The state operators of a serving step (`genz.serving_steps`): the scans of
state-space and linear-attention layers, whose prefill bytes count a fixed state per
prompt chunk. Pure functions on numbers or arrays; seconds."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Per state operator: prefill-form compute, memory and overhead tables (seconds at
#: every token count) and the memory seconds of one more state pass.
StateLists = list[tuple[list[float], list[float], list[float], float]]


def state_passes(
    prefill_tokens: Any, prefill_context_sum: Any, decode_sequences: Any, sequences: Any
) -> Any:
    """State passes of a step's prompt chunks (numbers or arrays): each of the ``n =
    sequences - D`` chunks (at least 1 when there are prompt tokens) writes its
    sequence's state and, when the chunks continue their sequences (context sum above
    the prompt tokens: chunks taken alike), reads it too."""
    if isinstance(prefill_tokens, np.ndarray):
        chunks = np.maximum(np.asarray(sequences, float) - decode_sequences, 1.0)
        return chunks * (1.0 + (prefill_context_sum > prefill_tokens))
    chunks = max(sequences - decode_sequences, 1)
    return chunks * (2.0 if prefill_context_sum > prefill_tokens else 1.0)


def state_prefill_times(
    tables: NDArray[np.float64],
    pass_s: NDArray[np.float64],
    tokens: NDArray[np.int64],
    passes: Any,
    prefill_tokens: Any,
) -> NDArray[np.float64]:
    """Prefill-form time of the state operators at each step: per operator
    ``max(compute[T], memory[T] + (passes T / T_prefill - 1) x pass_s) + overhead[T]``
    (the tables count one pass at every T), summed; 0 extra passes without prompt
    tokens (the prefill form then has no weight)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        extra = np.where(prefill_tokens > 0, passes * tokens / prefill_tokens - 1.0, 0.0)
    compute, memory, overhead = (table[:, tokens] for table in tables)
    slopes = pass_s[:, None] if np.ndim(tokens) else pass_s
    return np.sum(np.maximum(compute, memory + slopes * extra) + overhead, axis=0)


def state_prefill_time(lists: StateLists, tokens: int, extra: float) -> float:
    """`state_prefill_times` of one step, ``extra`` passes beyond the tables' one, in
    plain Python arithmetic (the simulator's hot path)."""
    total = 0.0
    for compute, memory, overhead, slope in lists:
        total += max(compute[tokens], memory[tokens] + slope * extra) + overhead[tokens]
    return total


def state_lists(tables: NDArray[np.float64], pass_s: NDArray[np.float64]) -> StateLists:
    """`StateLists` of the tables (built once per step cost)."""
    compute, memory, overhead = (table.tolist() for table in tables)
    return list(zip(compute, memory, overhead, pass_s.tolist(), strict=True))
