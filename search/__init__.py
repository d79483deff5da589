"""Design-space search: mixed-precision bit allocation (ILP), enumeration, Pareto fronts."""

from .bits_formats import Format, parse_formats
from .bits_problem import BitAllocationProblem, BitAllocationResult, Budget
from .bits_quantize import QuantizationResult, QuantizeBudgets, quantize
from .bits_sensitivity import load_hessian_traces, load_sensitivity_table
from .bits_solvers import allocate_bits
from .codesign import CodesignResult, search_designs
from .codesign_objectives import OBJECTIVES, Constraints
from .pareto import pareto_mask
from .recommend import write_recommendations
from .space import DesignSpace, load_space, space_from_dict

__all__ = [
    "OBJECTIVES",
    "BitAllocationProblem",
    "BitAllocationResult",
    "Budget",
    "CodesignResult",
    "Constraints",
    "DesignSpace",
    "Format",
    "QuantizationResult",
    "QuantizeBudgets",
    "allocate_bits",
    "load_hessian_traces",
    "load_sensitivity_table",
    "load_space",
    "pareto_mask",
    "parse_formats",
    "quantize",
    "search_designs",
    "space_from_dict",
    "write_recommendations",
]
