"""Operators as small value objects: work (FLOP) and traffic (bytes), nothing else.

Costing lives in `roofline.operator_cost`; nothing is ever written back onto an operator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from .dtypes import bytes_per_element, dtype_bits
from .errors import InputError, require_non_negative


class OperatorKind(Enum):
    """What an operator is; used for grouping and reporting only."""

    GEMM = "gemm"
    ATTENTION = "attention"
    ELEMENTWISE = "elementwise"
    NORM = "norm"
    EMBEDDING = "embedding"
    COLLECTIVE = "collective"
    OTHER = "other"


@dataclass(frozen=True)
class Operator:
    """A unit of work.

    Parameters
    ----------
    flop
        Floating-point (or integer) operations, FLOP.
    bytes_main
        Bytes read plus written on the platform's main memory.
    dtype
        Compute dtype that executes the FLOP (selects the peak rate).
    bytes_other_levels
        Bytes moved on other named memory levels (e.g. ``{'sram': 1e6}``).
    """

    name: str
    flop: float
    bytes_main: float
    dtype: str = "bf16"
    kind: OperatorKind = OperatorKind.OTHER
    bytes_other_levels: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_non_negative(f"{self.name}.flop", self.flop)
        require_non_negative(f"{self.name}.bytes_main", self.bytes_main)
        dtype_bits(self.dtype)
        for level, moved in self.bytes_other_levels.items():
            require_non_negative(f"{self.name}.bytes_other_levels[{level}]", moved)

    @property
    def operational_intensity(self) -> float:
        """FLOP per main-memory byte (inf when no bytes move)."""
        return self.flop / self.bytes_main if self.bytes_main > 0 else float("inf")


@dataclass(frozen=True)
class Gemm:
    """``C[m, n] = A[m, k] @ B[k, n]`` with separately chosen operand widths.

    ``a_bits``/``b_bits``/``c_bits`` are the stored widths of the two inputs and the
    output (weight-only quantisation: ``b_bits=4``, compute still in ``dtype``).
    Each operand is assumed to cross main memory exactly once (ideal tiling).
    """

    name: str
    m: int
    n: int
    k: int
    dtype: str = "bf16"
    a_bits: float = 16.0
    b_bits: float = 16.0
    c_bits: float = 16.0

    def __post_init__(self) -> None:
        for label in ("m", "n", "k"):
            value = getattr(self, label)
            if not isinstance(value, int) or value < 1:
                raise InputError(f"{self.name}.{label} must be an integer >= 1, got {value!r}")

    def flops(self) -> float:
        """2 m n k FLOP (one multiply and one add per MAC)."""
        return 2.0 * self.m * self.n * self.k

    def bytes_moved(self) -> float:
        """Bytes of A, B read and C written once each."""
        return (
            self.m * self.k * bytes_per_element(self.a_bits)
            + self.k * self.n * bytes_per_element(self.b_bits)
            + self.m * self.n * bytes_per_element(self.c_bits)
        )

    def to_operator(self) -> Operator:
        """The generic operator with this GEMM's FLOP and bytes."""
        return Operator(self.name, self.flops(), self.bytes_moved(), self.dtype, OperatorKind.GEMM)
