"""``codesign hw list|show|design`` and ``codesign roofline``."""

from __future__ import annotations

import argparse
import math
from typing import Any

from roofline import (
    InputError,
    Operator,
    Platform,
    cost,
    list_platforms,
    load_platform,
    require_non_negative,
)

from ..formatting import (
    human_bytes,
    human_rate,
    human_seconds,
    print_json,
    print_key_values,
    print_table,
)
from .commands import add_command
from .hw_design import add_design_parser
from .platform_args import add_platform_arguments, add_scale_arguments, platform_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the hardware and roofline sub-commands."""
    hw = add_command(subparsers, "hw")
    hw_sub = hw.add_subparsers(dest="hw_command", required=True)
    listing = hw_sub.add_parser("list", help="list the shipped presets")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(func=run_list)
    show = hw_sub.add_parser("show", help="show one preset (with optional what-if scaling)")
    show.add_argument("name", help="preset name or YAML file")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    add_scale_arguments(show)
    show.set_defaults(func=run_show)
    add_design_parser(hw_sub)

    roof = add_command(subparsers, "roofline")
    add_platform_arguments(roof)
    roof.add_argument("--flop", type=float, required=True, help="operations, FLOP")
    roof.add_argument("--bytes", type=float, required=True, help="main-memory traffic, bytes")
    roof.add_argument("--dtype", default="bf16", help="compute dtype (default bf16)")
    roof.add_argument("--json", action="store_true", help="machine-readable output")
    roof.set_defaults(func=run_roofline)


def run_list(args: argparse.Namespace) -> None:
    """Print one row per preset."""
    rows = []
    for name in list_platforms():
        platform = load_platform(name)
        rows.append(
            {
                "name": name,
                "device": platform.display_name,
                "bf16/fp16 TFLOP/s": _peak_or_blank(platform, "bf16", 1e12),
                "mem BW GB/s": platform.main_memory.bandwidth_bytes_per_s / 1e9,
                "capacity GB": platform.main_memory.capacity_bytes / 1e9,
            }
        )
    if args.json:
        print_json(rows)
    else:
        print_table(rows)
        print("(GB and GB/s are decimal: 1 GB = 1e9 bytes)")


def _peak_or_blank(platform: Platform, dtype: str, scale: float) -> float | None:
    try:
        return platform.peak(dtype) / scale
    except ValueError:
        return None


def platform_summary(platform: Platform) -> dict[str, Any]:
    """A JSON-ready description of a platform in SI units."""
    link = platform.interconnect
    return {
        "name": platform.name,
        "display_name": platform.display_name,
        "kind": platform.kind,
        "peak_flops_per_s": dict(platform.peak_flops_per_s),
        "memory": [
            {
                "name": level.name,
                "bandwidth_bytes_per_s": level.bandwidth_bytes_per_s,
                "capacity_bytes": level.capacity_bytes,
            }
            for level in platform.memory
        ],
        "interconnect": None
        if link is None
        else {
            "link_bandwidth_bytes_per_s": link.link_bandwidth_bytes_per_s,
            "link_latency_s": link.link_latency_s,
            "devices_per_node": link.devices_per_node,
            "scaleout_bandwidth_bytes_per_s": link.scaleout_bandwidth_bytes_per_s,
            "scaleout_latency_s": link.scaleout_latency_s,
        },
        "efficiency": {
            "compute": platform.efficiency.compute,
            "memory": platform.efficiency.memory,
            "interconnect": platform.efficiency.interconnect,
        },
        "kernel_overhead_s": platform.kernel_overhead_s,
        "power_w": platform.power_w,
        "power_model": None
        if platform.power_model is None
        else {
            "idle_w": platform.power_model.idle_w,
            "j_per_flop": platform.power_model.j_per_flop,
            "j_per_byte": platform.power_model.j_per_byte,
            "source": platform.power_model.source,
        },
        "price_usd": platform.price_usd,
        "price_usd_per_hour": platform.price_usd_per_hour,
        "ridge_point_flop_per_byte": {
            dtype: platform.ridge_point(dtype) for dtype in platform.peak_flops_per_s
        },
        "source": platform.source,
    }


def run_show(args: argparse.Namespace) -> None:
    """Print one preset, optionally scaled."""
    args.hw = args.name
    platform = platform_from_args(args)
    if args.json:
        print_json(platform_summary(platform))
        return
    pairs = [("name", platform.name), ("device", platform.display_name), ("kind", platform.kind)]
    for dtype, peak in platform.peak_flops_per_s.items():
        ridge = platform.ridge_point(dtype)
        pairs.append((f"peak {dtype}", f"{human_rate(peak, 'FLOP/s')} (ridge {ridge:.1f} FLOP/B)"))
    for level in platform.memory:
        pairs.append(
            (
                f"memory {level.name}",
                f"{human_rate(level.bandwidth_bytes_per_s, 'B/s')}, "
                f"{human_bytes(level.capacity_bytes)} (decimal)",
            )
        )
    link = platform.interconnect
    if link is not None:
        pairs.append(
            (
                "interconnect",
                f"{human_rate(link.link_bandwidth_bytes_per_s, 'B/s')} per direction, "
                f"{human_seconds(link.link_latency_s)} latency, {link.devices_per_node} devices/node",
            )
        )
    eff = platform.efficiency
    pairs.append(
        (
            "efficiency",
            f"compute {eff.compute}, memory {eff.memory}, interconnect {eff.interconnect}",
        )
    )
    pairs.append(("kernel overhead", human_seconds(platform.kernel_overhead_s)))
    if platform.power_w is not None:
        pairs.append(("power", f"{platform.power_w:g} W"))
    if platform.power_model is not None:
        power = platform.power_model
        pairs.append(
            (
                "power model",
                f"idle {power.idle_w:g} W + {power.j_per_flop * 1e12:.4g} pJ/FLOP + "
                f"{power.j_per_byte * 1e12:.4g} pJ/byte, capped at power",
            )
        )
    pairs.append(("source", platform.source))
    print_key_values(pairs)


def run_roofline(args: argparse.Namespace) -> None:
    """Time one operator of the given FLOP and bytes."""
    platform = platform_from_args(args)
    require_non_negative("--flop", args.flop)
    require_non_negative("--bytes", args.bytes)
    if args.flop == 0 and args.bytes == 0:
        raise InputError(
            "--flop and --bytes are both 0: nothing to time (operational intensity 0/0 is "
            "undefined); give at least one > 0"
        )
    op_cost = cost(Operator("operator", args.flop, args.bytes, args.dtype), platform)
    ridge = platform.ridge_point(args.dtype)
    payload = {"platform": platform.name, "dtype": args.dtype, **op_cost.to_dict()}
    payload["ridge_point_flop_per_byte"] = ridge
    if args.json:
        print_json(payload)
        return
    print_key_values(
        [
            ("platform", platform.display_name),
            ("dtype", args.dtype),
            ("operational intensity", _intensity_text(op_cost.operational_intensity)),
            ("ridge point", f"{ridge:.4g} FLOP/B (peak / bandwidth, no derating)"),
            ("compute time", human_seconds(op_cost.compute_time_s)),
            ("memory time", human_seconds(op_cost.memory_time_s)),
            ("overhead", human_seconds(op_cost.overhead_s)),
            ("time", human_seconds(op_cost.time_s)),
            ("attainable", human_rate(op_cost.attainable_flops_per_s, "FLOP/s")),
            ("bound", op_cost.bound.value),
        ]
    )


def _intensity_text(flop_per_byte: float) -> str:
    """FLOP per byte, or why there is none (work but no traffic)."""
    if math.isinf(flop_per_byte):
        return "infinite (no bytes moved)"
    return f"{flop_per_byte:.4g} FLOP/B"
