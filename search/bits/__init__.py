"""ILP mixed-precision bit allocation (HAWQ-V3 style) coupled to genz latency and memory.

Public face of ``search.bits``: the ``codesign quantize`` command and the co-design search
import only these names.
"""

from .costs import decision_units, kv_unit, unit_costs
from .formats import Format, parse_formats
from .problem import BitAllocationProblem, BitAllocationResult, Budget
from .quantizer import BUDGET_FIELDS, QuantizationResult, QuantizeBudgets, quantize
from .sensitivity import load_hessian_traces, load_sensitivity_table, proxy_sensitivity
from .solvers import DEFAULT_MIP_GAP, METHODS, allocate_bits
from .ties import LayerClass, layer_classes, layer_ranges
from .weights import load_imatrix, quantisation_error, read_weights, weight_sensitivity

__all__ = [
    "BUDGET_FIELDS",
    "DEFAULT_MIP_GAP",
    "METHODS",
    "BitAllocationProblem",
    "BitAllocationResult",
    "Budget",
    "Format",
    "LayerClass",
    "QuantizationResult",
    "QuantizeBudgets",
    "allocate_bits",
    "decision_units",
    "kv_unit",
    "layer_classes",
    "layer_ranges",
    "load_hessian_traces",
    "load_imatrix",
    "load_sensitivity_table",
    "parse_formats",
    "proxy_sensitivity",
    "quantisation_error",
    "quantize",
    "read_weights",
    "unit_costs",
    "weight_sensitivity",
]
