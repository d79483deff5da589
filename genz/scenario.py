"""Serving scenarios: batch, token counts, bit widths, chunking and parallelism."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from roofline import InputError

from .axes import (
    AXES,
    BITS_AXES,
    DEFAULT_BATCH,
    DEFAULT_BITS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    MESH_AXES,
    MODE_AXES,
    WORKLOAD_AXES,
)
from .params import WEIGHT_GROUPS


@dataclass(frozen=True)
class Parallelism:
    """Device mesh of one model replica plus data-parallel replicas.

    ``tp`` shards heads and FFN columns; ``pp`` splits layers into sequential
    stages; ``ep`` shards routed experts and acts as data parallelism for the
    attention and dense parts (DeepSeek-style); ``dp`` replicates the whole mesh.
    Devices used = tp * pp * ep * dp.
    """

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1

    def __post_init__(self) -> None:
        for name in MESH_AXES:
            AXES[name].check(getattr(self, name))

    @property
    def devices_per_replica(self) -> int:
        """Devices holding one copy of the model."""
        return self.tp * self.pp * self.ep

    @property
    def devices(self) -> int:
        """All devices used."""
        return self.devices_per_replica * self.dp


@dataclass(frozen=True)
class Precision:
    """Bit widths: weights per group (and optionally per layer), activations, KV cache.

    ``weight_bits`` applies to every group not named in ``group_bits``;
    ``layer_bits`` maps a layer index to group overrides for that layer only.
    Bits are floats (Q4_K_M ~ 4.85); bytes per element are ``bits / 8``.
    """

    weight_bits: float = DEFAULT_BITS
    activation_bits: float = DEFAULT_BITS
    kv_bits: float = DEFAULT_BITS
    group_bits: Mapping[str, float] = field(default_factory=dict)
    layer_bits: Mapping[int, Mapping[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in BITS_AXES:
            AXES[name].check(getattr(self, name))
        for group, bits in self.group_bits.items():
            _check_group(group)
            _check_bits(f"group_bits[{group}]", bits)
        for layer, overrides in self.layer_bits.items():
            if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
                raise InputError(f"layer_bits keys must be layer indices >= 0, got {layer!r}")
            for group, bits in overrides.items():
                _check_group(group)
                _check_bits(f"layer_bits[{layer}][{group}]", bits)

    def bits_for(self, group: str, layer: int | None = None) -> float:
        """Weight bits of ``group`` (in ``layer`` when given)."""
        if layer is not None and group in self.layer_bits.get(layer, {}):
            return float(self.layer_bits[layer][group])
        return float(self.group_bits.get(group, self.weight_bits))


def _check_bits(label: str, bits: float) -> None:
    AXES["weight_bits"].check(bits, label)


def _check_group(group: str) -> None:
    if group not in WEIGHT_GROUPS:
        raise InputError(f"unknown weight group {group!r}; accepted: {', '.join(WEIGHT_GROUPS)}")


@dataclass(frozen=True)
class Scenario:
    """One serving point: ``batch`` concurrent requests of ``input_tokens`` prompt
    tokens each generating ``output_tokens`` tokens (the first comes from prefill).

    ``prefill_chunk`` (tokens) splits the prompt into chunks that each re-read
    the weights; None processes the prompt in one pass.

    ``parallel_samples`` (n) and ``beam_width`` (k) decode n or k sequences per request
    that share the prompt's prefill and KV cache (vLLM ``n`` / ``best_of``, beam search):
    each is a sequence of the decode batch with its own generated KV. Samples are all
    returned (they count as output tokens); beams return one sequence per request.

    ``weight_offload`` and ``kv_offload`` (fractions in [0, 1]) keep that share of the
    weights and of the KV cache in the platform's host memory, streamed over its host
    link every pass (`genz.offload`).

    ``images`` per request run through a VLM's vision tower before prefill; each adds
    its image tokens to the prompt (`genz.vision`).
    """

    batch: int = DEFAULT_BATCH
    input_tokens: int = DEFAULT_INPUT_TOKENS
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    precision: Precision = field(default_factory=Precision)
    parallelism: Parallelism = field(default_factory=Parallelism)
    prefill_chunk: int | None = None
    parallel_samples: int = 1
    beam_width: int = 1
    weight_offload: float = 0.0
    kv_offload: float = 0.0
    images: int = 0

    def __post_init__(self) -> None:
        for name in WORKLOAD_AXES:
            AXES[name].check(getattr(self, name))
        if self.prefill_chunk is not None:
            AXES["prefill_chunk"].check(self.prefill_chunk)
        for name in MODE_AXES:
            AXES[name].check(getattr(self, name))
        if self.parallel_samples > 1 and self.beam_width > 1:
            raise InputError("parallel_samples and beam_width cannot both exceed 1")

    @property
    def sequences_per_request(self) -> int:
        """Sequences each request decodes: parallel samples or beams."""
        return self.parallel_samples * self.beam_width

    @property
    def returned_sequences(self) -> int:
        """Sequences returned per request: every sample; one of the beams."""
        return self.parallel_samples

    @property
    def context_tokens(self) -> int:
        """Context length at the last generated token."""
        return self.input_tokens + self.output_tokens
