"""Hardware platforms and the per-operator roofline (knows nothing about LLMs).

The public face of the bottom layer: other layers import only names listed in ``__all__``.
It also holds the shared plumbing every layer uses: `InputError` and the ``require_*``
checks, the safe reader for user files (`read_user_text`, `load_user_document`) and
`data_dir`, the one place that locates the shipped data.

The numpy-backed modules (collectives, operator costs, platforms and presets) load on
first use of one of their names (see `lazy_exports`), so ``import roofline`` stays light.
"""

from typing import TYPE_CHECKING

from .bounds import (
    CONFIG_BOUNDS,
    FLAG_BOUNDS,
    FLAG_BOUNDS_BY_COMMAND,
    HARDWARE_BOUNDS,
    HARDWARE_KINDS,
    MAX_LAYERS,
    MAX_SEED,
    ValueBound,
    bounds_rows,
    check_flag,
    flag_bound,
)
from .dtypes import DTYPE_BITS, bytes_per_element, dtype_bits
from .errors import (
    InputError,
    require_fraction,
    require_non_negative,
    require_positive,
    unknown_name,
)
from .footprint import CapacityFootprint, CapacityVerdict, check_capacity
from .lazy import lazy_exports
from .operator import Gemm, Operator, OperatorKind
from .paths import data_dir
from .userfiles import (
    MAX_NESTING_DEPTH,
    csv_failure,
    decode_user_bytes,
    is_preset_file,
    load_user_document,
    load_user_upload,
    names_a_path,
    parse_document,
    read_user_text,
)

if TYPE_CHECKING:
    from .collectives import (
        all_gather_time,
        all_reduce_time,
        all_to_all_time,
        link_parameters,
        point_to_point_time,
    )
    from .design import AcceleratorDesign, MemorySpec, parse_memory
    from .design_data import (
        DesignConstants,
        LinkTechnology,
        MemoryTechnology,
        ProcessNode,
        design_constants,
        link_technologies,
        link_technology,
        memory_technologies,
        memory_technology,
        process_node,
        process_nodes,
    )
    from .operator_cost import (
        BOUND_ORDER,
        TIME_BOUNDS,
        Bound,
        OpCost,
        attainable_flops_per_s,
        bound_codes,
        classify_bound,
        compute_time_s,
        cost,
        memory_time_s,
        operator_time_s,
        roofline_time,
    )
    from .platform import (
        Efficiency,
        HostMemory,
        Interconnect,
        MemoryLevel,
        Platform,
        PowerModel,
        activity_power_w,
        derive_platform,
        peak_for_bits,
    )
    from .presets import list_platforms, load_platform, platform_from_dict
    from .silicon import (
        AreaBreakdown,
        DesignCost,
        design_area,
        design_cost,
        design_platform,
        design_power,
        die_yield,
        dies_per_wafer,
    )

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "BOUND_ORDER",
    "CONFIG_BOUNDS",
    "DTYPE_BITS",
    "FLAG_BOUNDS",
    "FLAG_BOUNDS_BY_COMMAND",
    "HARDWARE_BOUNDS",
    "HARDWARE_KINDS",
    "MAX_LAYERS",
    "MAX_NESTING_DEPTH",
    "MAX_SEED",
    "TIME_BOUNDS",
    "AcceleratorDesign",
    "AreaBreakdown",
    "Bound",
    "CapacityFootprint",
    "CapacityVerdict",
    "DesignConstants",
    "DesignCost",
    "Efficiency",
    "Gemm",
    "HostMemory",
    "InputError",
    "Interconnect",
    "LinkTechnology",
    "MemoryLevel",
    "MemorySpec",
    "MemoryTechnology",
    "OpCost",
    "Operator",
    "OperatorKind",
    "Platform",
    "PowerModel",
    "ProcessNode",
    "ValueBound",
    "activity_power_w",
    "all_gather_time",
    "all_reduce_time",
    "all_to_all_time",
    "attainable_flops_per_s",
    "bound_codes",
    "bounds_rows",
    "bytes_per_element",
    "check_capacity",
    "check_flag",
    "classify_bound",
    "compute_time_s",
    "cost",
    "csv_failure",
    "data_dir",
    "decode_user_bytes",
    "derive_platform",
    "design_area",
    "design_constants",
    "design_cost",
    "design_platform",
    "design_power",
    "die_yield",
    "dies_per_wafer",
    "dtype_bits",
    "flag_bound",
    "is_preset_file",
    "lazy_exports",
    "link_parameters",
    "link_technologies",
    "link_technology",
    "list_platforms",
    "load_platform",
    "load_user_document",
    "load_user_upload",
    "memory_technologies",
    "memory_technology",
    "memory_time_s",
    "names_a_path",
    "operator_time_s",
    "parse_document",
    "parse_memory",
    "peak_for_bits",
    "platform_from_dict",
    "point_to_point_time",
    "process_node",
    "process_nodes",
    "read_user_text",
    "require_fraction",
    "require_non_negative",
    "require_positive",
    "roofline_time",
    "unknown_name",
]
