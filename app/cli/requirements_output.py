"""Text output of ``codesign requirements`` (preset base): the header's workload line, the
table of requirements and the energy and cost of the first answer."""

from __future__ import annotations

import argparse

from genz import ModelConfig, Parallelism, Scenario
from search.economics import Economics
from search.sizing import Requirement, format_seconds

from ..formatting import human_bytes, print_key_values
from .predict import precision_label


def workload_text(args: argparse.Namespace, model: ModelConfig, scenario: Scenario) -> str:
    """``'chat: 1024 in / 256 out, concurrency 1 per replica, bf16 ...'`` for the header."""
    label = f"{args.use_case}: " if args.use_case else ""
    return (
        f"{label}{scenario.input_tokens} in / {scenario.output_tokens} out, "
        f"concurrency {scenario.batch} per replica, {precision_label(model, scenario.precision)}"
    )


def requirement_row(result: Requirement) -> dict[str, object]:
    """One table row of a requirement: answer, mesh, latencies, binding SLO, J and US$."""
    mesh: Parallelism = result.scenario.parallelism
    figures = result.economics
    hypothetical = result.others == "unlimited"  # no power or price for unlimited resources
    return {
        "method": result.method,
        "others": others_text(result),
        "requirement": requirement_text(result),
        "mesh": f"tp{mesh.tp} pp{mesh.pp} ep{mesh.ep} dp{mesh.dp}",
        "TTFT": format_seconds(result.prediction.ttft_s),
        "TPOT": format_seconds(result.prediction.tpot_s),
        "tok/s": f"{result.prediction.throughput_tokens_per_s:.4g}",
        "binds": f"{result.binding_slo} ({result.binding_bound.value})",
        "J/tok decode": "-" if hypothetical else _maybe(figures.decode_j_per_token),
        "$/Mtok out": "-" if hypothetical else _maybe(figures.usd_per_million_output_tokens),
    }


def others_text(result: Requirement) -> str:
    """``'base'``, or which resources were unlimited (``'unlimited compute, capacity, link'``)."""
    if result.unlimited_resources:
        return f"unlimited {', '.join(result.unlimited_resources)}"
    return result.others


def requirement_text(result: Requirement) -> str:
    """The answer of one method in its own units (devices, TB/s, bytes, TFLOP/s, GB/s)."""
    if result.method == "devices":
        count = f"{result.devices} x {result.platform.name}"
        return count if result.success else f"not met; closest {count}"
    if result.at_search_floor:
        return f"not binding (met at the {result.scale:.4g}x search floor)"
    prefix = "" if result.success else "not met at "
    scale = f"{prefix}{result.scale:.4g}x"
    if not result.success:
        return scale
    platform = result.platform
    if result.method == "bandwidth":
        rate = platform.main_memory.bandwidth_bytes_per_s
        return f"{scale} = {rate / 1e12:.3g} TB/s"
    if result.method == "capacity":
        return f"{scale} = {human_bytes(platform.main_memory.capacity_bytes)}"
    if result.method == "compute":
        precision = result.scenario.precision
        dtype = platform.compute_dtype_for_bits(
            max(precision.weight_bits, precision.activation_bits)
        )
        return f"{scale} = {platform.peak(dtype) / 1e12:.4g} TFLOP/s {dtype}"
    if result.method == "link" and platform.interconnect is not None:
        rate = platform.interconnect.link_bandwidth_bytes_per_s
        return f"{scale} = {rate / 1e9:.4g} GB/s link"
    return f"{scale} bw+compute+capacity"


def _maybe(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def print_economics(result: Requirement) -> None:
    """Energy and cost per token of ``result`` (nothing without power or price data)."""
    figures: Economics = result.economics
    if figures.power_w_per_device is None and figures.usd_per_device_hour is None:
        return
    print()
    which = "answer" if result.success else "closest mesh (SLO not met)"
    print(
        f"energy and cost of the {result.method} {which}: {result.devices} x "
        f"{result.platform.name}, power: {figures.power_basis}, {figures.price_basis}"
    )
    print_key_values(
        [
            (
                "J per token",
                f"prefill {_maybe(figures.prefill_j_per_token)}, "
                f"decode {_maybe(figures.decode_j_per_token)}, "
                f"per output token (whole request) {_maybe(figures.j_per_output_token)}",
            ),
            (
                "US$ per million tokens",
                f"prefill {_maybe(figures.prefill_usd_per_million_tokens)}, "
                f"decode {_maybe(figures.decode_usd_per_million_tokens)}, "
                f"per output token (whole request) {_maybe(figures.usd_per_million_output_tokens)}",
            ),
            ("output tokens per US$", _maybe(figures.output_tokens_per_usd)),
        ]
    )
