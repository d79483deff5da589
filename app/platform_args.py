"""The ``--hw`` option and what-if scale options shared by every command."""

from __future__ import annotations

import argparse

from roofline import Platform, derive_platform, load_platform


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


def platform_from_args(args: argparse.Namespace) -> Platform:
    """Load ``--hw`` and apply the scale factors."""
    return derive_platform(
        load_platform(args.hw),
        compute_scale=args.compute_scale,
        memory_bandwidth_scale=args.bw_scale,
        memory_capacity_scale=args.capacity_scale,
        link_bandwidth_scale=args.link_bw_scale,
    )
