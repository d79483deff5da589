"""Read, write and summarise bit allocations (YAML or JSON) as `Precision` objects.

Format (every key optional)::

    weight_bits: 16          # default for every weight group
    activation_bits: 16
    kv_bits: 16
    group_bits: {ffn_down: 8, lm_head: 8}
    layer_bits: {0: {attn_qkv: 8}, 31: {ffn_up_gate: 4}}
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline import InputError, load_user_document

from .layer_bits import GROUP_BLOCK, effective_group_bits, layer_bit_patterns
from .model import ModelConfig
from .params import parameter_count
from .scenario import Precision

MAX_FILE_BYTES = 1_000_000
ALLOWED_KEYS = {"weight_bits", "activation_bits", "kv_bits", "group_bits", "layer_bits"}


def precision_from_dict(document: Any, origin: str = "<bits>") -> Precision:
    """Build a `Precision` from a mapping in the file format above."""
    if not isinstance(document, dict):
        raise InputError(f"{origin}: expected a mapping at top level")
    unknown = sorted(str(key) for key in set(document) - ALLOWED_KEYS)
    if unknown:
        raise InputError(
            f"{origin}: unknown key {unknown[0]!r}; accepted: {', '.join(sorted(ALLOWED_KEYS))}"
        )
    layer_bits = {}
    if not isinstance(document.get("layer_bits") or {}, dict):
        raise InputError(f"{origin}: layer_bits must map layer indices to {{group: bits}}")
    for layer, groups in (document.get("layer_bits") or {}).items():
        try:
            index = int(layer)
        except (TypeError, ValueError):
            raise InputError(
                f"{origin}: layer_bits keys must be layer indices, got {layer!r}"
            ) from None
        if not isinstance(groups, dict):
            raise InputError(f"{origin}: layer_bits[{layer}] must map weight groups to bits")
        layer_bits[index] = dict(groups)
    group_bits = document.get("group_bits") or {}
    if not isinstance(group_bits, dict):
        raise InputError(f"{origin}: group_bits must map weight groups to bits")
    try:
        return Precision(
            weight_bits=document.get("weight_bits", 16.0),
            activation_bits=document.get("activation_bits", 16.0),
            kv_bits=document.get("kv_bits", 16.0),
            group_bits=dict(group_bits),
            layer_bits=layer_bits,
        )
    except InputError as error:  # name the file (issue #25)
        raise InputError(f"{origin}: {error}") from None


def load_precision(path: str | Path) -> Precision:
    """Read a bits file (``.yaml``, ``.yml`` or ``.json``)."""
    document = load_user_document(path, kind="bits file", max_bytes=MAX_FILE_BYTES)
    return precision_from_dict(document, origin=str(path))


def precision_to_dict(precision: Precision) -> dict[str, Any]:
    """The file form of a `Precision` (inverse of `precision_from_dict`)."""
    return {
        "weight_bits": precision.weight_bits,
        "activation_bits": precision.activation_bits,
        "kv_bits": precision.kv_bits,
        "group_bits": dict(precision.group_bits),
        "layer_bits": {int(layer): dict(groups) for layer, groups in precision.layer_bits.items()},
    }


@dataclass(frozen=True)
class WeightBitsSummary:
    """The weight bit widths a `Precision` really uses on one model.

    ``minimum`` and ``maximum`` over the weight groups that hold parameters (per
    layer where ``layer_bits`` says so); ``mean`` weighted by parameters, so
    ``mean * parameters / 8`` is the weight bytes.
    """

    minimum: float
    maximum: float
    mean: float

    @property
    def uniform(self) -> bool:
        """Every weight has the same width."""
        return self.minimum == self.maximum


def summarise_weight_bits(model: ModelConfig, precision: Precision) -> WeightBitsSummary:
    """Summarise the weight widths of ``precision`` over ``model``'s parameters."""
    groups = parameter_count(model).by_group
    patterns = layer_bit_patterns(model, precision)
    used = [
        bits[group]
        for bits, shares in patterns
        for group, count in groups.items()
        if count > 0 and shares[GROUP_BLOCK[group]] > 0
    ]
    effective = effective_group_bits(patterns)
    total = sum(groups.values())
    mean = sum(count * effective[group] for group, count in groups.items()) / total
    return WeightBitsSummary(minimum=min(used), maximum=max(used), mean=mean)
