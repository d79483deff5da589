"""One bounded quantity: type, unit, range; its check and the message a user reads.

`roofline.bounds` holds the tables of them (flags, file fields); this module holds the
type and the builders the tables use, so that each quantity is defined once and every
flag or field that carries it is the same bound under another name (`ValueBound.named`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .errors import InputError


@dataclass(frozen=True)
class ValueBound:
    """The accepted values of one quantity.

    Attributes
    ----------
    name
        The flag (``'--max-seqs'``) or file field (``'num_hidden_layers'``).
    integer
        Whole numbers only.
    unit
        What one unit is (``'tokens'``, ``'s'``, ``'ms'``); empty when dimensionless.
    low, high
        The range's ends, in ``unit``.
    low_open, high_open
        True when the end itself is excluded (``(0, 1]`` has ``low_open``).
    help
        What the quantity is, one line.
    """

    name: str
    integer: bool
    unit: str
    low: float
    high: float
    low_open: bool = False
    high_open: bool = False
    help: str = ""

    @property
    def interval(self) -> str:
        """The range in interval notation, ``'(0, 1]'``, ``'[1, 1024]'``."""
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"{left}{_show(self.low, self.integer)}, {_show(self.high, self.integer)}{right}"

    @property
    def zero_allowed(self) -> bool:
        """True when 0 lies in the range."""
        return self.contains(0)

    @property
    def requirement(self) -> str:
        """What a valid value is: ``'an integer in [1, 65536]'``, ``'a number of s in (0, 1e+07]'``."""
        if self.integer:
            return f"an integer in {self.interval}"
        if not self.unit:  # a fraction or factor
            return f"in {self.interval}"
        of_unit = f" of {self.unit}" if self.unit else ""
        return f"a number{of_unit} in {self.interval}"

    def contains(self, value: float) -> bool:
        """True when ``value`` lies in the range (type not checked)."""
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return bool(above and below)

    def check(self, value: object, label: str | None = None) -> float:
        """``value`` if of this type and in range, else `InputError` naming ``label``.

        ``label`` defaults to `name`; pass ``'file.json: key'`` to name the file too.
        Integral floats (``1e3`` read from JSON or YAML) count as integers.
        """
        valid = False
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
            whole = isinstance(value, int) or (math.isfinite(number) and number.is_integer())
            valid = math.isfinite(number) and (whole or not self.integer) and self.contains(number)
        if not valid:
            raise InputError(f"{label or self.name} must be {self.requirement}, got {value!r}")
        return value  # type: ignore[return-value]

    def named(self, name: str, text: str = "") -> ValueBound:
        """This quantity as the flag or field ``name`` with meaning ``text``."""
        return dataclasses.replace(self, name=name, help=text)


def _show(value: float, integer: bool) -> str:
    return f"{int(value)}" if integer and float(value).is_integer() else f"{value:g}"


def integer(low: float, high: float, unit: str = "") -> ValueBound:
    """A quantity of whole numbers in the closed range ``[low, high]`` of ``unit``
    (unnamed: give it its flag or field with `ValueBound.named`)."""
    return ValueBound("", True, unit, low, high)


def number(
    low: float,
    high: float,
    unit: str = "",
    *,
    low_open: bool = True,
    high_open: bool = False,
) -> ValueBound:
    """A quantity of real numbers from ``low`` (excluded by default: most quantities are
    positive) to ``high`` (included by default), in ``unit``."""
    return ValueBound("", False, unit, low, high, low_open, high_open)


def table(*bounds: ValueBound) -> dict[str, ValueBound]:
    """The bounds keyed by `ValueBound.name`; a name given twice is a bug, refused."""
    found: dict[str, ValueBound] = {}
    for bound in bounds:
        if bound.name in found:
            raise ValueError(f"bound {bound.name!r} defined twice")
        found[bound.name] = bound
    return found
