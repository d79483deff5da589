"""The ``--hw`` option and what-if scale options shared by every command.

Values are checked here, before `roofline.derive_platform`, so an error names the flag
the user typed (``--bw-scale must be a number in [0.001, 1000], got -1.0``); the scale
factors' defaults, ranges and help come from `genz.SCALE_AXES`.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from genz import SCALE_AXES

if TYPE_CHECKING:
    from roofline import Platform

#: CLI flag -> (`roofline.Efficiency` field, what it is a fraction of).
EFFICIENCY_FLAGS = {
    "--compute-eff": ("compute", "peak FLOP/s"),
    "--memory-eff": ("memory", "memory bandwidth"),
}


def add_platform_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """Add ``--hw`` (preset name or YAML path) and the resource scale factors."""
    parser.add_argument("--hw", required=required, help="hardware preset name or YAML file")
    add_scale_arguments(parser)


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the what-if resource scale factors (each multiplies the preset's value)."""
    group = parser.add_argument_group("what-if scaling of the platform")
    for axis in SCALE_AXES.values():
        group.add_argument(axis.flag, type=float, default=axis.default, help=axis.help)
    for flag, (_, what) in EFFICIENCY_FLAGS.items():
        group.add_argument(
            flag,
            type=float,
            help=f"achievable fraction of {what} in (0, 1] (default: the preset's)",
        )


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def platform_from_args(args: argparse.Namespace) -> Platform:
    """Load ``--hw`` and apply the scale factors and efficiency overrides.

    The efficiency overrides calibrate a preset to a serving runtime (e.g. the
    bandwidth fraction your kernels reach); they replace the preset's factors.
    """
    from roofline import derive_platform, load_platform, require_fraction

    for axis in SCALE_AXES.values():
        axis.check(getattr(args, axis.dest), axis.flag)
    efficiency = {
        field: require_fraction(flag, getattr(args, _dest(flag)))
        for flag, (field, _) in EFFICIENCY_FLAGS.items()
        if getattr(args, _dest(flag)) is not None
    }
    base = load_platform(args.hw)
    overrides: dict[str, Any] = {}
    if efficiency:  # replacing a field makes a variant (named "<preset>-custom")
        overrides["efficiency"] = dataclasses.replace(base.efficiency, **efficiency)
    return derive_platform(
        base,
        compute_scale=args.compute_scale,
        memory_bandwidth_scale=args.bw_scale,
        memory_capacity_scale=args.capacity_scale,
        link_bandwidth_scale=args.link_bw_scale,
        **overrides,
    )
