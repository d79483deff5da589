"""Serving page: the engine release line and the cited GEMM rates (``codesign serve
--engine-version`` / ``--device-gemm-rates``), applied by `app.serving_stack` exactly
as serve applies them."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

import streamlit as st

from app.dashboard.state import Selection, build_platform
from app.serving_stack import (
    StackChoice,
    adapted_runtime,
    chunk_seconds,
    line_label,
    release_text,
    shipped_lines,
    stack_choice,
    stack_rows,
)
from genz import RuntimeProfile, load_runtime

NONE_LABEL = "None (the profile's own costs)"
NO_PROFILE_REASON = (
    "needs a calibrated runtime profile (sidebar): it scales the profile's compute "
    "efficiency, which physics (ideal) does not have"
)


@dataclass(frozen=True)
class StackFlags:
    """``--engine-version`` text (None: not given) and ``--device-gemm-rates``."""

    engine_version: str | None = None
    gemm_rates: bool = False

    def flags(self) -> list[str]:
        """The serve flags these stand for."""
        parts = [] if self.engine_version is None else ["--engine-version", self.engine_version]
        return parts + (["--device-gemm-rates"] if self.gemm_rates else [])


#: Neither flag: the page as before.
NO_STACK = StackFlags()


def stack_controls(selection: Selection) -> StackFlags:
    """The "Engine release" selectbox (None and every line of the shipped cost table)
    and the "Cited GEMM rates" checkbox (disabled, with the reason, under ``ideal``)."""
    lines = {line_label(stack): stack for stack in shipped_lines()}
    row = st.columns(2)
    label = row[0].selectbox(
        "Engine release",
        [NONE_LABEL, *lines],
        key="serving_engine_release",
        help="serve --engine-version: a line newer than the runtime profile's drops its "
        "per-sequence cost; the line's fitted request and per-chunk costs are charged "
        "(data/runtimes/serving_costs/families.yaml)",
    )
    ideal = selection.runtime == "ideal"
    gemm = row[1].checkbox(
        "Cited GEMM rates",
        key="serving_gemm_rates",
        disabled=ideal,
        help=f"serve --device-gemm-rates: {NO_PROFILE_REASON}"
        if ideal
        else "serve --device-gemm-rates: the profile's compute efficiency scaled by the "
        "device's cited achievable-GEMM fraction over its fitted devices' "
        "(data/hardware/microbenchmarks.csv)",
    )
    if ideal:
        row[1].caption(f"Cited GEMM rates: off, {NO_PROFILE_REASON}.")
    engine = None if label == NONE_LABEL else release_text(lines[label])
    return StackFlags(engine, bool(gemm) and not ideal)


def stack_args(selection: Selection, policy: str, stack: StackFlags) -> argparse.Namespace:
    """The serve arguments `app.serving_stack` reads, as the page's serve call gives them."""
    return argparse.Namespace(
        engine_version=stack.engine_version,
        device_gemm_rates=stack.gemm_rates,
        runtime=selection.runtime,
        abits=selection.activation_bits,
        policy=policy,
        request_overhead_ms=None,
        chunk_overhead_ms=None,
    )


@dataclass(frozen=True)
class Applied:
    """What a replica on one preset is charged: the (adapted) runtime profile, the
    front-end cost per request (s; None: the profile's) and per chunk (s)."""

    runtime: RuntimeProfile
    request_s: float | None
    chunk_s: float
    choice: StackChoice | None


def applied(selection: Selection, hw: str, policy: str, stack: StackFlags) -> Applied:
    """`stack_choice` and `adapted_runtime` on preset ``hw`` (with the selection's scale
    factors), as serve's replica builder applies them."""
    args = stack_args(selection, policy, stack)
    profile = load_runtime(selection.runtime)
    platform = build_platform(dataclasses.replace(selection, hw=hw))
    choice = stack_choice(args, profile, platform)
    runtime = adapted_runtime(choice, profile, platform)
    request = None if choice is None else choice.request_s
    return Applied(runtime, request, chunk_seconds(args, choice), choice)


def applied_lines(
    selection: Selection, policy: str, stack: StackFlags, presets: list[str]
) -> list[str]:
    """The lines serve prints for these flags (``presets``: the hardware in use)."""
    choices = {hw: applied(selection, hw, policy, stack).choice for hw in dict.fromkeys(presets)}
    args = stack_args(selection, policy, stack)
    return [f"{name}: {value}" for name, value in stack_rows(args, choices)]
