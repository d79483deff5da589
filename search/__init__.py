"""Design-space search: mixed-precision bit allocation (ILP), enumeration, Pareto fronts."""

from .bits_formats import Format, parse_formats
from .bits_problem import BitAllocationProblem, BitAllocationResult, Budget
from .bits_quantize import QuantizationResult, QuantizeBudgets, quantize
from .bits_sensitivity import load_hessian_traces, load_sensitivity_table
from .bits_solvers import allocate_bits

__all__ = [
    "BitAllocationProblem",
    "BitAllocationResult",
    "Budget",
    "Format",
    "QuantizationResult",
    "QuantizeBudgets",
    "allocate_bits",
    "load_hessian_traces",
    "load_sensitivity_table",
    "parse_formats",
    "quantize",
]
