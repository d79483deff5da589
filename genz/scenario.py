"""Serving scenarios: batch, token counts, bit widths, chunking and parallelism."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from roofline import InputError

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
        for label in ("tp", "pp", "ep", "dp"):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
                raise InputError(f"{label} must be an integer in [1, 4096], got {value!r}")

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

    weight_bits: float = 16.0
    activation_bits: float = 16.0
    kv_bits: float = 16.0
    group_bits: Mapping[str, float] = field(default_factory=dict)
    layer_bits: Mapping[int, Mapping[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for label in ("weight_bits", "activation_bits", "kv_bits"):
            _check_bits(label, getattr(self, label))
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
    if isinstance(bits, bool) or not isinstance(bits, int | float) or not 1 <= bits <= 32:
        raise InputError(f"{label} must be a number of bits in [1, 32], got {bits!r}")


def _check_group(group: str) -> None:
    if group not in WEIGHT_GROUPS:
        raise InputError(f"unknown weight group {group!r}; accepted: {', '.join(WEIGHT_GROUPS)}")


@dataclass(frozen=True)
class Scenario:
    """One serving point: ``batch`` concurrent requests of ``input_tokens`` prompt
    tokens each generating ``output_tokens`` tokens (the first comes from prefill).

    ``prefill_chunk`` (tokens) splits the prompt into chunks that each re-read
    the weights; None processes the prompt in one pass.
    """

    batch: int = 1
    input_tokens: int = 1024
    output_tokens: int = 128
    precision: Precision = field(default_factory=Precision)
    parallelism: Parallelism = field(default_factory=Parallelism)
    prefill_chunk: int | None = None

    def __post_init__(self) -> None:
        _check_count("batch", self.batch, 1, 1_000_000)
        _check_count("input_tokens", self.input_tokens, 1, 100_000_000)
        _check_count("output_tokens", self.output_tokens, 1, 100_000_000)
        if self.prefill_chunk is not None:
            _check_count("prefill_chunk", self.prefill_chunk, 1, 100_000_000)

    @property
    def context_tokens(self) -> int:
        """Context length at the last generated token."""
        return self.input_tokens + self.output_tokens


def _check_count(label: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"{label} must be an integer in [{low}, {high}], got {value!r}")
