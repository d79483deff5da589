"""How a runtime stores weight formats and streams KV-cache formats (profile schema).

`WeightFormat` (stored bits, memory-efficiency scale of dequantising kernels) and
`KVFormat` (a KV cache whose dtype a device may have no arithmetic for), with their
loaders; part of `genz.runtime`'s schema.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from roofline import DTYPE_BITS, InputError

from .runtime_values import VALUE_KEYS, as_mapping, check_known, checked_value

FORMAT_KEYS = (
    "nominal_bits",
    "stored_bits",
    "embedding_bits",
    "lm_head_bits",
    "memory_efficiency_scale",
    "compute_efficiency_scale",
)
KV_FORMAT_KEYS = ("nominal_bits", "native_dtype", "emulated_memory_efficiency_scale")
#: Dtypes that stand in for each other when a platform lists one (`Platform.peak`).
_TWIN_DTYPES = {"bf16": "fp16", "fp16": "bf16"}


@dataclass(frozen=True)
class WeightFormat:
    """How a runtime stores one weight format.

    ``nominal_bits`` is the width users name (4 for Q4_K_M) and selects the format;
    ``stored_bits`` the mean bits per layer weight actually stored (scales and
    higher-precision tensors included); ``embedding_bits`` / ``lm_head_bits`` those
    of the model-level tensors; ``memory_efficiency_scale`` multiplies the phase's
    memory efficiency (dequantising kernels stream weights slower than 16-bit ones),
    the product capped at 1 (`genz.runtime_cost.scaled_terms`);
    ``compute_efficiency_scale`` likewise multiplies the phase's compute efficiency (a
    GEMM that dequantises packed weights runs below the 16-bit rate), capped at 1.
    """

    name: str
    nominal_bits: float
    stored_bits: float
    embedding_bits: float
    lm_head_bits: float
    memory_efficiency_scale: float = 1.0
    compute_efficiency_scale: float = 1.0


@dataclass(frozen=True)
class KVFormat:
    """How a runtime streams one KV-cache format.

    ``nominal_bits`` is the scenario's ``kv_bits`` that selects the format (8 for an FP8
    cache); ``native_dtype`` the dtype whose arithmetic its attention kernels use to
    convert cached elements (``fp8``). On a platform that lists no peak for that dtype
    (`emulated_on`) the kernels convert every cached element in software, and the KV
    cache's bytes (`genz.graph.OpTerms.kv_bytes`) stream at the phase's memory
    efficiency times ``emulated_memory_efficiency_scale`` (<= 1; 1: no slowdown);
    elsewhere, and for every other ``kv_bits``, nothing changes
    (`genz.runtime_cost.kv_format_memory_s`).
    """

    name: str
    nominal_bits: float
    native_dtype: str
    emulated_memory_efficiency_scale: float = 1.0

    def emulated_on(self, dtypes: Collection[str]) -> bool:
        """True when a platform listing peaks for ``dtypes`` has no ``native_dtype``
        arithmetic (bf16 and fp16 stand in for each other, as in `Platform.peak`)."""
        twin = _TWIN_DTYPES.get(self.native_dtype)
        return self.native_dtype not in dtypes and (twin is None or twin not in dtypes)


def weight_format_from_dict(name: str, entry: Any, label: str) -> WeightFormat:
    check_known(as_mapping(entry, label), frozenset(FORMAT_KEYS), label)
    missing = [key for key in FORMAT_KEYS[:4] if key not in entry]
    if missing:
        raise InputError(f"{label}: missing {missing[0]!r}")
    values = {
        key: checked_value(entry[key], key, f"{label}.{key}") for key in FORMAT_KEYS if key in entry
    }
    return WeightFormat(name=name, **values)


def kv_formats_from_dict(entry: Any, label: str) -> tuple[KVFormat, ...]:
    """The ``kv_formats`` mapping of a profile or formats file (name -> entry), each
    entry checked by `kv_format_from_dict`; two formats may not share nominal_bits."""
    formats = tuple(
        kv_format_from_dict(str(name), values, f"{label}.{name}")
        for name, values in as_mapping(entry, label).items()
    )
    nominal = [fmt.nominal_bits for fmt in formats]
    if len(set(nominal)) < len(nominal):
        raise InputError(f"{label}: two formats share nominal_bits")
    return formats


def class_kv_scales(entry: Any, formats: tuple[KVFormat, ...], label: str) -> dict[str, float]:
    """A device class's override of KV formats' emulated scales (format name ->
    ``{emulated_memory_efficiency_scale: V}``); each format must be a top-level one."""
    names = {fmt.name for fmt in formats}
    scales = {}
    for name, values in as_mapping(entry, label).items():
        where = f"{label}.{name}"
        if str(name) not in names:
            raise InputError(
                f"{where}: not a format of kv_formats; accepted: {', '.join(sorted(names))}"
            )
        key = KV_FORMAT_KEYS[2]
        check_known(as_mapping(values, where), frozenset({key}), where)
        if key not in values:
            raise InputError(f"{where}: missing {key!r}")
        scales[str(name)] = checked_value(values[key], key, f"{where}.{key}")
    return scales


def kv_format_from_dict(name: str, entry: Any, label: str) -> KVFormat:
    """One KV-cache format: ``nominal_bits`` and the optional scale are values with
    provenance; ``native_dtype`` is ``{value: <dtype name>, source: ...}``."""
    check_known(as_mapping(entry, label), frozenset(KV_FORMAT_KEYS), label)
    missing = [key for key in KV_FORMAT_KEYS[:2] if key not in entry]
    if missing:
        raise InputError(f"{label}: missing {missing[0]!r}")
    dtype_label = f"{label}.native_dtype"
    dtype_entry = as_mapping(entry["native_dtype"], dtype_label)
    check_known(dtype_entry, VALUE_KEYS - {"interval_95"}, dtype_label)
    if not ("source" in dtype_entry or "calibrated_from" in dtype_entry):
        raise InputError(f"{dtype_label}: needs 'source' or 'calibrated_from'")
    dtype = dtype_entry.get("value")
    if dtype not in DTYPE_BITS:
        raise InputError(
            f"{dtype_label}: value must be a dtype name ({', '.join(sorted(DTYPE_BITS))}), "
            f"got {dtype!r}"
        )
    values = {
        key: checked_value(entry[key], key, f"{label}.{key}")
        for key in (KV_FORMAT_KEYS[0], KV_FORMAT_KEYS[2])
        if key in entry
    }
    return KVFormat(name=name, native_dtype=str(dtype), **values)
