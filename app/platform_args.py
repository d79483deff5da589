"""The ``--hw`` option and what-if scale options shared by every command."""

from __future__ import annotations

import argparse

from roofline import Efficiency, Platform, derive_platform, load_platform


def add_platform_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """Add ``--hw`` (preset name or YAML path) and the resource scale factors."""
    parser.add_argument("--hw", required=required, help="hardware preset name or YAML file")
    add_scale_arguments(parser)


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the what-if resource scale factors (each multiplies the preset's value)."""
    group = parser.add_argument_group("what-if scaling of the platform")
    group.add_argument("--compute-scale", type=float, default=1.0, help="multiply every peak")
    group.add_argument("--bw-scale", type=float, default=1.0, help="multiply memory bandwidth")
    group.add_argument("--capacity-scale", type=float, default=1.0, help="multiply capacity")
    group.add_argument("--link-bw-scale", type=float, default=1.0, help="multiply link bandwidth")
    group.add_argument(
        "--compute-eff",
        type=float,
        help="achievable fraction of peak FLOP/s in (0, 1] (default: the preset's)",
    )
    group.add_argument(
        "--memory-eff",
        type=float,
        help="achievable fraction of memory bandwidth in (0, 1] (default: the preset's)",
    )


def platform_from_args(args: argparse.Namespace) -> Platform:
    """Load ``--hw`` and apply the scale factors and efficiency overrides.

    The efficiency overrides calibrate a preset to a serving runtime (e.g. the
    bandwidth fraction your kernels reach); they replace the preset's factors.
    """
    base = load_platform(args.hw)
    overrides = {}
    if args.compute_eff is not None or args.memory_eff is not None:
        efficiency = base.efficiency
        overrides["efficiency"] = Efficiency(
            compute=efficiency.compute if args.compute_eff is None else args.compute_eff,
            memory=efficiency.memory if args.memory_eff is None else args.memory_eff,
            interconnect=efficiency.interconnect,
        )
    return derive_platform(
        base,
        compute_scale=args.compute_scale,
        memory_bandwidth_scale=args.bw_scale,
        memory_capacity_scale=args.capacity_scale,
        link_bandwidth_scale=args.link_bw_scale,
        **overrides,
    )
