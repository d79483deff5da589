"""Candidate number formats of the bit allocator: storage width and quantisation noise.

A format has a storage width in bits per weight (block scales included: MXFP4
stores one 8-bit E8M0 scale per 32 FP4 elements, 4 + 8/32 = 4.25 bits; NVFP4 one
E4M3 scale per 16, 4.5 bits) and a noise width: the number of bits of a uniform
integer grid with the same expected squared error on Gaussian weights.

Noise model (documented prior, no weights needed). A uniform ``b``-bit grid over
the range ``r = 2 c sigma`` (clipping at ``c`` standard deviations, ``c = sqrt(2 ln
g)`` the expected maximum of ``g`` Gaussian samples) has step ``r / 2^b`` and mean
squared error ``r^2 2^(-2b) / 12``. A float with ``m`` mantissa bits rounds to a
relative step of ``2^-m``: error ``~ sigma^2 2^(-2m) / 12``, equal to the uniform
grid's when ``b = m + log2(2c) ~ m + 3`` for per-channel scales (g = 4096, c = 4.1).
Block scales shrink the clipping range: a block of ``g`` elements gains
``log2(c(4096) / c(g))`` bits (0.63 for g = 32, 0.80 for g = 16). Numbers in a
candidate list (``"16,8,4"``) are uniform integer formats, except 16, which is the
16-bit float the model ships in.

How fast a format runs is not decided here: genz executes a GEMM in the narrowest
dtype the platform lists at least ``max(weight bits, activation bits)`` wide, so
with 16-bit activations every format is weight-only (dequantised to 16-bit
compute) and with 8-bit activations the 8-bit formats use the platform's 8-bit peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofline import InputError, Platform

#: Elements sharing one scale under per-channel quantisation (a typical hidden size).
PER_CHANNEL_GROUP = 4096


def clip_ratio(group_size: int) -> float:
    """``c(g) = sqrt(2 ln g)``: clipping range in standard deviations for ``g`` elements."""
    return math.sqrt(2.0 * math.log(group_size))


@dataclass(frozen=True)
class Format:
    """One candidate format.

    Parameters
    ----------
    name
        Canonical name (``'int4'``, ``'fp8'``, ``'mxfp4'``, ``'fp16'``).
    bits
        Storage bits per weight, scales included.
    noise_bits
        Width of the uniform integer grid with the same expected squared error.
    dtype
        Compute dtype name the platform must list for native low-precision compute
        (``None`` for integer widths no hardware computes in, such as int3).
    """

    name: str
    bits: float
    noise_bits: float
    dtype: str | None = None

    def __post_init__(self) -> None:
        if not 1.0 <= self.bits <= 32.0:
            raise InputError(f"format {self.name}: bits must be in [1, 32], got {self.bits!r}")
        if not 0.0 < self.noise_bits <= 32.0:
            raise InputError(f"format {self.name}: noise_bits must be in (0, 32]")

    @property
    def noise(self) -> float:
        """Relative quantisation noise ``2^(-2 noise_bits)`` (the proxy's per-weight factor)."""
        return 2.0 ** (-2.0 * self.noise_bits)


def _float_format(
    name: str, bits: float, mantissa: int, dtype: str, block: int | None = None
) -> Format:
    element_bits = math.floor(bits)
    noise_bits = min(mantissa + 3.0, element_bits)
    if block is not None:
        noise_bits += math.log2(clip_ratio(PER_CHANNEL_GROUP) / clip_ratio(block))
    return Format(name, bits, noise_bits, dtype)


#: Named formats. fp16/bf16 are the unquantised reference (noise of a 16-bit grid).
NAMED_FORMATS: dict[str, Format] = {
    "fp16": Format("fp16", 16.0, 16.0, "fp16"),
    "bf16": Format("bf16", 16.0, 16.0, "bf16"),
    "int8": Format("int8", 8.0, 8.0, "int8"),
    "fp8": _float_format("fp8", 8.0, 3, "fp8"),
    "fp6": _float_format("fp6", 6.0, 2, "fp6"),
    "int4": Format("int4", 4.0, 4.0, "int4"),
    "fp4": _float_format("fp4", 4.0, 1, "fp4"),
    "mxfp4": _float_format("mxfp4", 4.25, 1, "fp4", block=32),
    "nvfp4": _float_format("nvfp4", 4.5, 1, "fp4", block=16),
}
ALIASES = {"16": "fp16", "fp8_e4m3": "fp8", "e4m3": "fp8", "fp4_e2m1": "fp4"}
ACCEPTED = "numbers in [1, 16] (uniform integer bits; 16 means fp16), " + ", ".join(NAMED_FORMATS)


def parse_format(token: str) -> Format:
    """One format from a name (``'int4'``, ``'mxfp4'``) or a number of bits (``'6'``)."""
    text = str(token).strip().lower()
    text = ALIASES.get(text, text)
    if text in NAMED_FORMATS:
        return NAMED_FORMATS[text]
    if text.startswith("int"):
        text = text[3:]
    try:
        bits = float(text)
    except ValueError:
        raise InputError(f"unknown format {token!r}; accepted: {ACCEPTED}") from None
    if not math.isfinite(bits) or not 1.0 <= bits <= 16.0:
        raise InputError(f"format bits must be in [1, 16], got {token!r}")
    if bits == 16.0:
        return NAMED_FORMATS["fp16"]
    name = f"int{bits:g}"
    return NAMED_FORMATS.get(name, Format(name, bits, bits, None))


def parse_formats(text: str, label: str = "bits") -> tuple[Format, ...]:
    """A comma-separated candidate list (``"16,8,4"``, ``"fp8,int4,mxfp4"``), widest first.

    Duplicates (``"8,int8"``) are rejected; so is an empty list.
    """
    tokens = [token for token in str(text).split(",") if token.strip()]
    if not tokens:
        raise InputError(f"{label} needs at least one format; accepted: {ACCEPTED}")
    formats = [parse_format(token) for token in tokens]
    names = [fmt.name for fmt in formats]
    duplicate = next((name for name in names if names.count(name) > 1), None)
    if duplicate is not None:
        raise InputError(f"{label} lists format {duplicate!r} twice")
    return tuple(sorted(formats, key=lambda fmt: (-fmt.bits, -fmt.noise_bits, fmt.name)))


def check_native_compute(
    formats: tuple[Format, ...], platform: Platform, activation_bits: float
) -> None:
    """Reject a format whose width sets the compute dtype but the platform lacks that dtype.

    With activations at ``activation_bits``, genz computes a GEMM with weights of a
    format at least as wide as the activations in a dtype of the format's width;
    an fp8 GEMM on a board that lists only int8 would be costed at the int8 rate.
    """
    for fmt in formats:
        if fmt.bits >= 16 or fmt.bits < activation_bits or fmt.dtype is None:
            continue
        if fmt.dtype not in platform.peak_flops_per_s:
            listed = ", ".join(platform.peak_flops_per_s)
            raise InputError(
                f"format {fmt.name} with {activation_bits:g}-bit activations needs a "
                f"{fmt.dtype} peak on {platform.name} (it lists {listed}); "
                "use another format or 16-bit activations (weight-only)"
            )
