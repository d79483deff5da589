"""Dashboard number inputs and sliders whose ranges come from the table of bounds.

Each widget is tied to the entry of `roofline.bounds` (a CLI flag or a hardware-file
field) that carries the same quantity. The widget's limits are that entry's range; a
slider, or an input whose page keeps a run short (serving replicas), may offer a
narrower span, which must lie inside the range (`widget_limits` refuses one that does
not). A value the entry refuses, such as 0 of ``(0, 1e+10]`` (a widget cannot exclude an
open end), stops the page with the CLI's own one-line message for that value. The
widget's help names the flag and its range, so that the page and ``codesign ... --help``
say the same thing.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from roofline import InputError, ValueBound


def widget_limits(
    bound: ValueBound, low: float | None = None, high: float | None = None
) -> tuple[float, float]:
    """``(min, max)`` a widget offers for ``bound``: its own ends, or the narrower
    ``low`` / ``high`` given (ValueError when they leave the range: a bug, not input).
    Integers for an integer quantity, floats otherwise (Streamlit wants one type)."""
    lowest = bound.low if low is None else low
    highest = bound.high if high is None else high
    if lowest < bound.low or highest > bound.high or lowest > highest:
        raise ValueError(
            f"{bound.name}: widget span [{lowest:g}, {highest:g}] is not inside {bound.interval}"
        )
    if bound.integer:
        return int(lowest), int(highest)
    return float(lowest), float(highest)


def bound_message(bound: ValueBound, value: object) -> str | None:
    """The CLI's one-line message for ``value`` (``'--slo-tpot-p99-ms must be a number
    of ms in (0, 1e+10], got 0.0'``), or None when the entry accepts it."""
    try:
        bound.check(value)
    except InputError as error:
        return str(error)
    return None


def widget_help(bound: ValueBound, command: str = "") -> str:
    """``'codesign serve --rate: a number of requests/s in (0, 1e+07]'``."""
    where = f"codesign {command} {bound.name}" if command else bound.name
    return f"{where}: {bound.requirement}"


def _checked(container: Any, bound: ValueBound, value: Any) -> Any:
    message = bound_message(bound, value)
    if message is not None:
        container.error(message)
        st.stop()
    return value


def bounded_number(
    container: Any,
    bound: ValueBound,
    label: str,
    *,
    command: str = "",
    low: float | None = None,
    high: float | None = None,
    **widget: Any,
) -> Any:
    """``container.number_input(label, ...)`` limited to ``bound`` (or the narrower span
    ``low`` / ``high`` inside it); ``widget`` passes ``value``, ``step``, ``key``... on.
    Returns the value, or stops the page with the CLI's message when the entry refuses it."""
    lowest, highest = widget_limits(bound, low, high)
    if "step" in widget and widget["step"] is not None:
        widget["step"] = type(lowest)(widget["step"])
    if widget.get("value") is not None:
        widget["value"] = type(lowest)(widget["value"])
    widget.setdefault("help", widget_help(bound, command))
    value = container.number_input(label, min_value=lowest, max_value=highest, **widget)
    return _checked(container, bound, value)


def bounded_slider(
    container: Any,
    bound: ValueBound,
    label: str,
    *,
    low: float,
    high: float,
    command: str = "",
    **widget: Any,
) -> Any:
    """``container.slider(label, low, high, ...)``; ``low`` / ``high`` must lie inside
    ``bound``. Returns the value, or stops the page with the CLI's message."""
    lowest, highest = widget_limits(bound, low, high)
    widget.setdefault("help", widget_help(bound, command))
    value = container.slider(label, min_value=lowest, max_value=highest, **widget)
    return _checked(container, bound, value)
