"""Hardware platforms and the per-operator roofline (knows nothing about LLMs)."""

from .collectives import (
    all_gather_time,
    all_reduce_time,
    all_to_all_time,
    link_parameters,
    point_to_point_time,
)
from .cost import Bound, OpCost, attainable_flops_per_s, classify_bound, cost, roofline_time
from .dtypes import DTYPE_BITS, bytes_per_element, dtype_bits
from .errors import InputError
from .footprint import CapacityFootprint, CapacityVerdict, check_capacity
from .operator import Gemm, Operator, OperatorKind
from .platform import (
    Efficiency,
    Interconnect,
    MemoryLevel,
    Platform,
    derive_platform,
    peak_for_bits,
)
from .presets import list_platforms, load_platform, platform_from_dict

__all__ = [
    "DTYPE_BITS",
    "Bound",
    "CapacityFootprint",
    "CapacityVerdict",
    "Efficiency",
    "Gemm",
    "InputError",
    "Interconnect",
    "MemoryLevel",
    "OpCost",
    "Operator",
    "OperatorKind",
    "Platform",
    "all_gather_time",
    "all_reduce_time",
    "all_to_all_time",
    "attainable_flops_per_s",
    "bytes_per_element",
    "check_capacity",
    "classify_bound",
    "cost",
    "derive_platform",
    "dtype_bits",
    "link_parameters",
    "list_platforms",
    "load_platform",
    "peak_for_bits",
    "platform_from_dict",
    "point_to_point_time",
    "roofline_time",
]
