"""``--engine-version`` and ``--device-gemm-rates`` (``codesign serve``, the dashboard's
Serving page): the serving-stack rules of `calibration.serving_costs` on a simulated
replica. Shared by both front ends so that each applies them the same way; the
functions read the flags from an `argparse.Namespace` (the dashboard builds one).

- ``--engine-version TEXT`` names the engine and release line (`calibration.stack_of`
  reads it, e.g. ``"vLLM 0.10"``). On a line later than the one the ``--runtime``
  profile was fitted on (`calibration.newer`) the profile's per-sequence host cost is
  dropped (device terms kept). Every run is then charged the line's per-output-chunk
  cost and, when requests go through a served front end (`calibration.served`: not a
  static batch, not an in-process harness), its per-request cost, both from the
  shipped table fitted on every published serving row
  (``data/runtimes/serving_costs/families.yaml``, `calibration.load_serving_costs`).
  ``--request-overhead-ms`` and ``--chunk-overhead-ms`` still win.
- ``--device-gemm-rates`` scales the profile's compute efficiency by the device's cited
  achievable-GEMM fraction over its fitted devices' (`calibration.gemm_scale`).

Neither flag given: nothing changes.
"""

from __future__ import annotations

import argparse
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibration import (
    FAMILIES,
    FamilyCosts,
    Stack,
    adapt_profile,
    gemm_scale,
    load_serving_costs,
    newer,
    profile_stack,
    served,
    serving_costs_path,
    stack_of,
)
from genz import RuntimeProfile
from roofline import InputError, Platform, data_dir

#: How each engine of `FAMILIES` is written in the accepted list.
ENGINE_NAMES = {
    "tensorrt-llm": "TensorRT-LLM",
    "vllm": "vLLM",
    "sglang": "SGLang",
    "lmdeploy": "LMDeploy",
    "mlc": "MLC",
}


def accepted_lines() -> str:
    """Each engine with its release lines (oldest first), as the error for unknown
    text lists them."""
    lines: dict[str, dict[str, float]] = {}
    for _, engine, family, order, _ in FAMILIES:
        lines.setdefault(ENGINE_NAMES.get(engine, engine), {}).setdefault(family, order)
    return "; ".join(
        f"{engine} {' / '.join(sorted(families, key=families.__getitem__))}"
        for engine, families in lines.items()
    )


def engine_stack(text: str) -> Stack:
    """The engine and release line of ``--engine-version`` (`calibration.stack_of`,
    else the same patterns ignoring case); `InputError` listing the lines otherwise."""
    if text.strip():
        try:
            return stack_of(text)
        except InputError:
            for pattern, engine, family, order, _ in FAMILIES:
                if re.search(pattern, text, re.IGNORECASE):
                    return Stack(engine, family, order)
    raise InputError(
        f"--engine-version {text!r}: no engine release line matches; accepted: "
        f"{accepted_lines()} (e.g. 'vLLM 0.10')"
    )


def check_stack_flags(args: argparse.Namespace) -> None:
    """Refuse unknown ``--engine-version`` text, and ``--device-gemm-rates`` without a
    calibrated profile, before anything is simulated (one-line `InputError`)."""
    if args.engine_version is not None:
        engine_stack(args.engine_version)
    if args.device_gemm_rates and args.runtime in (None, "ideal"):
        raise InputError(_NO_PROFILE)


_NO_PROFILE = (
    "--device-gemm-rates scales a calibrated --runtime profile's compute efficiency; "
    "give one (e.g. --runtime vllm)"
)


@functools.cache
def _table(path: Path) -> dict[Stack, FamilyCosts]:
    """The cost table at ``path``, read once per process."""
    return load_serving_costs(path)


def shipped_lines() -> list[Stack]:
    """The release lines of the shipped cost table, in its order."""
    return list(_table(serving_costs_path()))


def line_label(stack: Stack) -> str:
    """A line as people write it, e.g. ``vLLM V1 (0.7+)``."""
    return f"{ENGINE_NAMES.get(stack.engine, stack.engine)} {stack.family}"


def release_text(stack: Stack) -> str:
    """``--engine-version`` text naming ``stack``: its `line_label`, or with a family's
    ``x`` as ``0`` (``TensorRT-LLM 1.x`` -> ``1.0``), whichever `engine_stack` reads
    back as ``stack``; `InputError` when neither does."""
    label = line_label(stack)
    for text in (label, label.replace(".x", ".0")):
        try:
            if engine_stack(text) == stack:
                return text
        except InputError:
            continue
    raise InputError(f"--engine-version: no text names the line {stack} (calibration.FAMILIES)")


@dataclass(frozen=True)
class StackChoice:
    """What ``--engine-version`` and ``--device-gemm-rates`` apply on one platform.

    ``stack``: the named line (None: no ``--engine-version``); ``fitted``: the line the
    profile was fitted on (None: unknown or physics); ``dropped_sequence_s``: the
    profile's decode per-sequence cost not charged, s (None: kept); ``request_s``,
    ``chunk_s``: the table's costs charged, s (None: not from the table);
    ``costs``: the table entry; ``gemm_scale``: the compute-efficiency factor (None:
    not asked for)."""

    stack: Stack | None
    fitted: Stack | None
    dropped_sequence_s: float | None
    request_s: float | None
    chunk_s: float | None
    costs: FamilyCosts | None
    gemm_scale: float | None


def stack_choice(
    args: argparse.Namespace, runtime: RuntimeProfile, platform: Platform
) -> StackChoice | None:
    """The rules the flags ask for on ``platform`` with the loaded ``--runtime``
    profile; None when neither flag is given."""
    if args.engine_version is None and not args.device_gemm_rates:
        return None
    scale = None
    if args.device_gemm_rates:
        if runtime.is_ideal:
            raise InputError(_NO_PROFILE)
        scale = gemm_scale(runtime, platform.name, args.abits)
    fitted = None if runtime.is_ideal else profile_stack(runtime)
    if args.engine_version is None:
        return StackChoice(None, fitted, None, None, None, None, scale)
    stack = engine_stack(args.engine_version)
    table = _table(serving_costs_path())
    if stack not in table:
        raise InputError(
            f"--engine-version: {serving_costs_path()} has no entry for {stack}; re-derive it "
            "(its calibrated_from command)"
        )
    costs = table[stack]
    dropped = None
    if not runtime.is_ideal and newer(runtime, stack):
        decode = runtime.on_platform(platform).phase("decode", platform)
        dropped = decode.sequence_overhead_s or 0.0
    scenario = "static" if args.policy == "static" else "rate"
    request = costs.request_s if served(args.engine_version, scenario) else None
    return StackChoice(stack, fitted, dropped, request, costs.chunk_s, costs, scale)


def adapted_runtime(
    choice: StackChoice | None, runtime: RuntimeProfile, platform: Platform
) -> RuntimeProfile:
    """``runtime`` with the choice's GEMM scale and dropped per-sequence cost on
    ``platform`` (`calibration.adapt_profile`); itself when nothing applies."""
    if choice is None or runtime.is_ideal:
        return runtime
    scale = 1.0 if choice.gemm_scale is None else choice.gemm_scale
    sequence = None if choice.dropped_sequence_s is None else 0.0
    return adapt_profile(runtime, platform, scale, sequence)


def chunk_seconds(args: argparse.Namespace, choice: StackChoice | None) -> float:
    """Host time per streamed chunk per sequence-step, s: ``--chunk-overhead-ms``, else
    the ``--engine-version`` line's fitted one, else 0."""
    if args.chunk_overhead_ms is not None:
        return float(args.chunk_overhead_ms) / 1e3
    if choice is not None and choice.chunk_s is not None:
        return choice.chunk_s
    return 0.0


def _table_name() -> str:
    """The table as the text output names it: ``data/...`` for the data folder's."""
    path = serving_costs_path()
    if data_dir().name in ("data", "codesign_data"):
        return f"data/{path.relative_to(data_dir()).as_posix()}"
    return str(path)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def stack_rows(
    args: argparse.Namespace, choices: dict[str, StackChoice | None]
) -> list[tuple[str, str]]:
    """The lines saying what was applied (``choices``: per hardware preset in use)."""
    first = next(iter(choices.values()))
    if first is None:
        return []
    rows = []
    if first.stack is not None and first.costs is not None:
        fitted = str(first.fitted) if first.fitted is not None else "no known line"
        if args.runtime in (None, "ideal"):
            rule = "no --runtime profile: physics plus these costs"
        elif first.dropped_sequence_s is not None:
            rule = (
                f"newer than the profile's {fitted}: its per-sequence cost "
                f"({_ms(first.dropped_sequence_s)}) dropped"
            )
        else:
            rule = f"profile fitted on {fitted}: its costs kept"
        request = (
            "--request-overhead-ms wins"
            if args.request_overhead_ms is not None
            else "not charged: no served front end"
            if first.request_s is None
            else _ms(first.request_s)
        )
        chunk = (
            "--chunk-overhead-ms wins"
            if args.chunk_overhead_ms is not None
            else f"{_ms(first.costs.chunk_s)} per sequence-step"
        )
        rows.append(
            (
                "engine version",
                f"{first.stack} ({rule}); request {request}, chunk {chunk} "
                f"[{first.costs.basis}; {first.costs.ttft_rows} TTFT / "
                f"{first.costs.tpot_rows} TPOT numbers; {_table_name()}]",
            )
        )
    scales = [
        f"x{choice.gemm_scale:.3f} on {hw}"
        for hw, choice in choices.items()
        if choice is not None and choice.gemm_scale is not None
    ]
    if scales:
        rows.append(
            (
                "device GEMM rate",
                f"compute efficiency {', '.join(scales)} (cited achievable-GEMM fraction "
                "over the profile's fitted devices'; data/hardware/microbenchmarks.csv)",
            )
        )
    return rows


def stack_json(args: argparse.Namespace, choices: dict[str, StackChoice | None]) -> dict[str, Any]:
    """The ``stack_costs`` field of ``--json`` (empty when neither flag is given): the
    line, the profile's, the per-sequence cost dropped, the table's fitted costs and the
    chunk cost charged (the request cost charged is the top-level ``request_overhead_s``)."""
    first = next(iter(choices.values()))
    if first is None:
        return {}
    costs = first.costs
    field: dict[str, Any] = {
        "engine": None if first.stack is None else first.stack.engine,
        "version_family": None if first.stack is None else first.stack.family,
        "profile_family": None if first.fitted is None else str(first.fitted),
        "sequence_overhead_dropped_s": first.dropped_sequence_s,
        "fitted_request_overhead_s": None if costs is None else costs.request_s,
        "request_charged": first.request_s is not None and args.request_overhead_ms is None,
        "fitted_chunk_overhead_s": None if costs is None else costs.chunk_s,
        "chunk_overhead_s": chunk_seconds(args, first),
        "basis": None if costs is None else costs.basis,
        "table": None if costs is None else str(serving_costs_path()),
        "gemm_scale": {
            hw: choice.gemm_scale
            for hw, choice in choices.items()
            if choice is not None and choice.gemm_scale is not None
        },
    }
    return {"stack_costs": field}
