"""Operator value objects of a pass (`OpTerms`, `PassOps`), the pass's shape
(`PassShape`) and the builders shared by every block: GEMM, batched LoRA, elementwise,
collectives. FLOP and bytes per device; conventions in `genz.graph`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, cast

import numpy as np
from numpy.typing import NDArray

from roofline import OperatorKind

if TYPE_CHECKING:
    from .model import ModelConfig

Array = NDArray[np.float64]

#: Where an operator sits: every layer's attention, the dense-FFN layers, the MoE
#: layers, or once per model (embedding, LM head, pipeline hand-offs).
BLOCKS = ("attention", "dense_ffn", "moe_ffn", "model")


class OpTerms(NamedTuple):
    """One operator of a pass, over a vector of scenarios (an immutable value object;
    a named tuple because passes build thousands of them per second).

    ``layers`` is how many times a pass runs it: the layers of the replica that
    contain it (1 for per-model ops; a fraction for the LM head of chunked prefill).
    ``collective`` names the collective ('all_reduce', 'all_to_all', 'p2p') whose
    ``message_bytes`` cross ``group`` devices, for interconnect operators.
    ``kv_bytes`` is the part of ``bytes`` that reads or writes the KV cache (attention,
    MLA's latent up-projection; 0 elsewhere), which a runtime's KV-cache format may
    stream at its own rate (`genz.runtime_cost.kv_format_memory_s`).
    """

    name: str
    kind: OperatorKind
    group: str
    layers: Array | float
    flop: Array
    bytes: Array
    compute_bits: Array
    collective: str | None = None
    message_bytes: Array | None = None
    group_size: Array | None = None
    kv_bytes: Array | float = 0.0


@dataclass(frozen=True)
class PassOps:
    """The operators of one forward pass and the `BLOCKS` name of each, in order."""

    ops: tuple[OpTerms, ...]
    blocks: tuple[str, ...]

    def __add__(self, other: PassOps) -> PassOps:
        """Both passes' operators, this one's first (to cost them in one call)."""
        return PassOps(self.ops + other.ops, self.blocks + other.blocks)


def elementwise_max(a: Array | float, b: Array | float) -> Array:
    """Elementwise maximum; for two floats (one scenario) plain ``max``, which costs
    no numpy call (the result then is a float, as the inputs)."""
    if isinstance(a, float) and isinstance(b, float):
        return cast(Array, max(float(a), float(b)))
    return np.maximum(a, b)


@dataclass(frozen=True)
class PassShape:
    """What one forward pass processes, broadcastable numpy arrays (see module doc)."""

    batch: Array
    query_tokens: Array
    context: Array
    weight_bits: Mapping[str, Array]
    activation_bits: Array
    kv_bits: Array
    tp: Array
    ep: Array
    pp: Array
    prefill: bool
    head_share: Array | float = 1.0
    routing_independence: Array | float = 1.0
    window_pairs: Array | float | None = None
    window_keys: Array | float | None = None


def gemm_terms(
    name: str,
    group: str,
    layers: Array | float,
    tokens: Array,
    k: Array | float,
    n: Array | float,
    shape: PassShape,
) -> OpTerms:
    w_bits = shape.weight_bits[group]
    a_bytes = shape.activation_bits / 8
    flop = 2.0 * tokens * k * n
    moved = k * n * w_bits / 8 + tokens * (k + n) * a_bytes
    return OpTerms(
        name,
        OperatorKind.GEMM,
        group,
        layers,
        flop,
        moved,
        elementwise_max(w_bits, shape.activation_bits),
    )


def lora_terms(
    name: str,
    group: str,
    layers: Array | float,
    tokens: Array,
    widths: Array | float,
    model: ModelConfig,
    shape: PassShape,
) -> OpTerms:
    """Batched LoRA (Punica BGMV / S-LoRA) on projections whose input plus output widths
    per device sum to ``widths``: FLOP ``2 T r widths``; bytes: the adapters the batch
    touches, ``A (1 - (1 - 1/A)^B)`` of A (requests spread uniformly), ``r widths`` weights
    each, plus the tokens' input, output and rank-r intermediate."""
    r, adapters = float(model.lora_rank), float(model.lora_adapters)
    w_bits = shape.weight_bits[group]
    touched = adapters * (1.0 - (1.0 - 1.0 / adapters) ** shape.batch)
    moved = (
        touched * r * widths * w_bits / 8 + tokens * (widths + 2 * r) * shape.activation_bits / 8
    )
    return OpTerms(
        name,
        OperatorKind.GEMM,
        group,
        layers,
        2.0 * tokens * r * widths,
        moved,
        elementwise_max(w_bits, shape.activation_bits),
    )


def elementwise_terms(
    name: str,
    kind: OperatorKind,
    layers: Array | float,
    elements: Array,
    flop_per: float,
    shape: PassShape,
) -> OpTerms:
    moved = 2.0 * elements * shape.activation_bits / 8
    return OpTerms(
        name, kind, "activations", layers, flop_per * elements, moved, shape.activation_bits
    )


def collective_terms(
    name: str, kind: str, layers: float, message: Array, group: Array, shape: PassShape
) -> OpTerms:
    """A collective of ``message`` bytes per device over ``group`` devices (no FLOP, no
    main-memory traffic: its time comes from the interconnect model)."""
    zero = 0.0 * message
    return OpTerms(
        name,
        OperatorKind.COLLECTIVE,
        "collective",
        layers,
        zero,
        zero,
        shape.activation_bits,
        collective=kind,
        message_bytes=message,
        group_size=group,
    )


def all_reduce_terms(
    name: str, layers: float, tokens: Array, model: ModelConfig, shape: PassShape
) -> OpTerms:
    message = tokens * model.hidden_size * shape.activation_bits / 8
    return collective_terms(name, "all_reduce", layers, message, shape.tp, shape)
