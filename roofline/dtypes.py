"""Numeric formats: their width in bits and the compute dtype that executes them.

Bits are floats (llama.cpp's Q4_K_M is ~4.85 bits per weight); bytes per element
are ``bits / 8`` and never rounded, so int4 takes exactly half the bytes of int8.
"""

from .errors import InputError

#: Width in bits of every format a platform may list a peak rate for.
DTYPE_BITS: dict[str, float] = {
    "fp32": 32.0,
    "tf32": 32.0,
    "bf16": 16.0,
    "fp16": 16.0,
    "fp8": 8.0,
    "int8": 8.0,
    "fp6": 6.0,
    "fp4": 4.0,
    "int4": 4.0,
}


def bytes_per_element(bits: float) -> float:
    """Bytes taken by one element of ``bits`` bits (float; 4 bits -> 0.5 bytes)."""
    if not bits > 0:
        raise InputError(f"bits must be > 0, got {bits!r}")
    return float(bits) / 8.0


def dtype_bits(dtype: str) -> float:
    """Width in bits of a named dtype (``'bf16'`` -> 16)."""
    try:
        return DTYPE_BITS[dtype]
    except KeyError:
        names = ", ".join(DTYPE_BITS)
        raise InputError(f"unknown dtype {dtype!r}; accepted: {names}") from None
