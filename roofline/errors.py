"""The one error type that front ends turn into a one-line message (exit code 2)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


class InputError(ValueError):
    """Bad user input: an unknown name, a value outside its range, a malformed file.

    The message is a single line that names the offending field and the accepted
    range or names, so the CLI and dashboard can show it verbatim.
    """


def require_positive(field: str, value: float) -> float:
    """Return ``value`` as float if it is finite and > 0, else raise `InputError`."""
    number = _as_float(field, value)
    if not number > 0 or number == float("inf"):
        raise InputError(f"{field} must be a finite number > 0, got {value!r}")
    return number


def require_non_negative(field: str, value: float) -> float:
    """Return ``value`` as float if it is finite and >= 0, else raise `InputError`."""
    number = _as_float(field, value)
    if not number >= 0 or number == float("inf"):
        raise InputError(f"{field} must be a finite number >= 0, got {value!r}")
    return number


def require_fraction(field: str, value: float) -> float:
    """Return ``value`` as float if it lies in (0, 1], else raise `InputError`."""
    number = _as_float(field, value)
    if not 0 < number <= 1:
        raise InputError(f"{field} must be in (0, 1], got {value!r}")
    return number


def _as_float(field: str, value: object) -> float:
    if isinstance(value, bool):
        raise InputError(f"{field} must be a number, got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{field} must be a number, got {value!r}") from None


#: Characters of an unknown name echoed in its error (a pasted paragraph stays one
#: readable line).
MAX_ECHOED_NAME = 80


def unknown_name(
    kind: str, name: str, accepted: Sequence[str], alternative: str = ""
) -> InputError:
    """The error for a name not in ``accepted``, with the closest names as a hint.

    ``unknown_name("hardware", "h100-sx", names)`` reads ``unknown hardware 'h100-sx' (did
    you mean 'h100-sxm'?); accepted: ...``; ``alternative`` is appended to the list (e.g.
    ``"or a path to a config.json"``). Matching ignores case.
    """
    lowered = {option.lower(): option for option in accepted}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=2, cutoff=0.6)
    hint = ""
    if close:
        hint = " (did you mean " + " or ".join(repr(lowered[c]) for c in close) + "?)"
    listing = ", ".join(accepted) + (f", {alternative}" if alternative else "")
    shown = name if len(name) <= MAX_ECHOED_NAME else name[:MAX_ECHOED_NAME] + "..."
    return InputError(f"unknown {kind} {shown!r}{hint}; accepted: {listing}")
