"""The LoRA adapter operators of a serving step (`genz.serving_steps`): batched
multi-LoRA (Punica BGMV / S-LoRA, `genz.op_terms.lora_terms`) reads the weights of every
adapter the step's sequences use. With ``A`` adapters resident and requests spread
uniformly over them, a step of ``S`` sequences touches ``A (1 - (1 - 1/A)^S)`` adapters
(as `genz.predict` counts them for a batch of ``S``), whatever its token count.

The tables hold each adapter operator's compute, memory and overhead seconds at every
token count ``T`` with one adapter touched, per form (0 prefill, 1 decode); a step pays,
per form, ``max(compute[T], memory[T] + (touched(S) - 1) x weight_s) + overhead[T]`` per
operator, ``weight_s`` being the memory seconds of one more adapter's weights. Pure
functions on numbers or arrays; seconds."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Per form, per adapter operator: compute, memory and overhead tables (seconds at every
#: token count) and the memory seconds of one more adapter's weights.
AdapterLists = list[list[tuple[list[float], list[float], list[float], float]]]


def adapters_touched(adapters: float, sequences: Any) -> Any:
    """Expected distinct adapters among ``sequences`` requests drawn uniformly from
    ``adapters`` (numbers or arrays; 0 sequences touch none)."""
    return adapters * (1.0 - (1.0 - 1.0 / adapters) ** sequences)


def adapter_times(
    tables: NDArray[np.float64],
    weight_s: NDArray[np.float64],
    form: int,
    tokens: NDArray[np.int64],
    extra: Any,
) -> NDArray[np.float64]:
    """Time of the adapter operators in ``form`` at each step of ``tokens`` tokens and
    ``extra`` adapters beyond the tables' one, summed over the operators, seconds."""
    compute, memory, overhead = (table[:, tokens] for table in tables[form])
    slopes = weight_s[form][:, None] if np.ndim(tokens) else weight_s[form]
    return np.sum(np.maximum(compute, memory + slopes * extra) + overhead, axis=0)


def adapter_time(lists: AdapterLists, form: int, tokens: int, extra: float) -> float:
    """`adapter_times` of one step in plain Python arithmetic (the simulator's hot path)."""
    total = 0.0
    for compute, memory, overhead, slope in lists[form]:
        total += max(compute[tokens], memory[tokens] + slope * extra) + overhead[tokens]
    return total


def adapter_lists(tables: NDArray[np.float64], weight_s: NDArray[np.float64]) -> AdapterLists:
    """`AdapterLists` of the tables (built once per step cost)."""
    out: AdapterLists = []
    for form in (0, 1):
        compute, memory, overhead = (table.tolist() for table in tables[form])
        out.append(list(zip(compute, memory, overhead, weight_s[form].tolist(), strict=True)))
    return out


def adapter_operators(
    probe: Any, adapters: float, token: NDArray[np.bool_]
) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
    """Mask of the adapter operators among the token operators, per form (0 prefill, 1
    decode) the memory seconds of one more adapter's weights per adapter operator
    (forms x operators), and the per-device FLOP and bytes of one more adapter over all
    of them (2,); checked to be linear in the adapters touched.

    ``probe(one_adapter, form, batch, query, context)`` gives genz's `_PassTimes` of
    the model (``one_adapter``: its single-adapter twin, whose steps touch one adapter
    whatever their sequences) at one probe shape (`genz.step_probes`)."""
    shapes = {"prefill": ((2.0, 32.0, 32.0), (4.0, 16.0, 16.0)), "decode": ((2.0, 1.0, 10.0),)}
    shapes["decode"] += ((4.0, 1.0, 10.0),)
    two, four = adapters_touched(adapters, 2.0) - 1.0, adapters_touched(adapters, 4.0) - 1.0
    mask: NDArray[np.bool_] | None = None
    weight_s = []
    work = np.zeros(2)
    for form, (pair, quad) in shapes.items():
        real, base = probe(False, form, *pair), probe(True, form, *pair)
        if mask is None:
            mask = token & ~np.isclose(real.memory_s[:, 0], base.memory_s[:, 0], rtol=1e-12)
            work = np.array(
                [
                    float(np.sum((real.flop - base.flop)[mask, 0])) / two,
                    float(np.sum((real.bytes - base.bytes)[mask, 0])) / two,
                ]
            )
        per = (real.memory_s - base.memory_s)[mask, 0] / two
        more = (probe(False, form, *quad).memory_s - probe(True, form, *quad).memory_s)[mask, 0]
        if not np.allclose(more, four * per, rtol=1e-9, atol=0.0):
            raise RuntimeError("an adapter operator's memory is not linear in the adapters touched")
        weight_s.append(per)
    assert mask is not None
    return mask, np.stack(weight_s), work
