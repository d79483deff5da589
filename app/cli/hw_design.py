"""``codesign hw design``: a parametric accelerator, its platform and cost breakdown.

Thin: the design is `roofline.AcceleratorDesign`, the numbers come from
`roofline.design_cost` / `roofline.design_platform` and, with ``--model``,
`search.economics.evaluate_design` (the function a dashboard page calls too).
"""

from __future__ import annotations

import argparse
from typing import Any

from roofline import InputError

from ..formatting import human_bytes, human_rate, human_seconds, print_json, print_key_values
from .scenario_args import (
    add_architecture_arguments,
    add_decoding_arguments,
    add_scenario_arguments,
    model_from_args,
    scenario_from_args,
)

DTYPES_HELP = "dense TFLOP/s: one number (bf16) or dtype:value pairs, e.g. bf16:989,fp8:1979"


def add_design_parser(hw_sub: argparse._SubParsersAction) -> None:
    """Add ``hw design`` to the ``hw`` sub-commands."""
    design = hw_sub.add_parser(
        "design",
        help="a hypothetical accelerator: its platform, area, TDP and cost breakdown",
        description=(
            "Build a parametric accelerator and print the platform it gives with its die "
            "area, yield, TDP and manufacturing cost (constants and sources: "
            "data/hardware/design/). With --model, also its speed and $ per token."
        ),
    )
    design.add_argument("--compute-tflops", required=True, help=DTYPES_HELP)
    design.add_argument(
        "--memory",
        required=True,
        help="technology:units[:GB per unit], e.g. hbm3e:6, gddr7:16:2, ddr5:16:64",
    )
    design.add_argument("--bandwidth-gb-per-s", type=float, help="achieved total GB/s (<= max)")
    design.add_argument("--gbps-per-pin", type=float, help="per-pin data rate, Gb/s")
    design.add_argument("--sram-mb", type=float, default=50.0, help="on-die SRAM, MB (50)")
    design.add_argument("--node", default="n5", help="process node (n16, n10, n7, n6, n5/n4, n3)")
    design.add_argument("--clock-ghz", type=float, default=1.8, help="tensor clock, GHz (1.8)")
    design.add_argument("--vector-tflops", type=float, help="fp32 vector TFLOP/s (16-bit / 16)")
    design.add_argument(
        "--links", default="pcie5:16", help="link:units pairs, e.g. nvlink4:18,pcie5:16"
    )
    design.add_argument("--dies", type=int, default=1, help="compute dies per package (1)")
    design.add_argument("--name", default="design", help="name of the platform")
    design.add_argument("--model", help="also predict this model on the design")
    design.add_argument(
        "--lifetime-years", type=float, default=4.0, help="amortisation of the cost (4)"
    )
    design.add_argument(
        "--electricity-usd-per-kwh", type=float, default=0.10, help="electricity price (0.10)"
    )
    design.add_argument(
        "--out",
        help="also write the platform as a hardware YAML file (any --hw takes it: serve, "
        "disagg --prefill-hw/--decode-hw, requirements --base-hw)",
    )
    design.add_argument("--force", action="store_true", help="overwrite --out")
    design.add_argument("--json", action="store_true", help="machine-readable output")
    add_scenario_arguments(design, title=SCENARIO_TITLE)
    add_decoding_arguments(design)  # a designed device has no host link: no offload flags
    add_architecture_arguments(design)
    scenario = tuple(
        (a.option_strings[0], a.dest, a.default)
        for g in design._action_groups
        if g.title in (SCENARIO_TITLE, "decoding mode", "architecture variants")
        for a in g._group_actions
    )
    design.set_defaults(func=run_design, scenario_flags=scenario)


#: Title of the scenario option group (the options that need ``--model``).
SCENARIO_TITLE = "scenario (with --model)"


def _pairs(text: str, flag: str, number: type) -> dict[str, Any]:
    pairs: dict[str, Any] = {}
    for item in str(text).split(","):
        name, _, value = item.partition(":")
        try:
            pairs[name.strip().lower()] = number(value)
        except ValueError:
            raise InputError(f"{flag} must be name:value pairs, got {text!r}") from None
    return pairs


def compute_from_text(text: str) -> dict[str, float]:
    """``'989'`` -> ``{'bf16': 989}``; ``'bf16:989,fp8:1979'`` -> both."""
    try:
        return {"bf16": float(text)}
    except ValueError:
        return _pairs(text, "--compute-tflops", float)


def design_from_args(args: argparse.Namespace) -> Any:
    """The `roofline.AcceleratorDesign` the options describe."""
    import dataclasses

    from roofline import AcceleratorDesign, parse_memory

    memory = parse_memory(args.memory)
    memory = dataclasses.replace(
        memory, gbps_per_pin=args.gbps_per_pin, bandwidth_gb_per_s=args.bandwidth_gb_per_s
    )
    links = _pairs(args.links, "--links", int) if args.links else {}
    return AcceleratorDesign(
        compute_tflops=compute_from_text(args.compute_tflops),
        memory=memory,
        sram_mb=args.sram_mb,
        node=args.node,
        clock_ghz=args.clock_ghz,
        vector_tflops_fp32=args.vector_tflops,
        links=links,
        dies=args.dies,
        name=args.name,
    )


def write_platform_yaml(platform: Any, out: str, force: bool, cost: Any) -> None:
    """Write ``platform`` in the data/hardware schema to ``out`` (refuses to overwrite)."""
    from pathlib import Path

    import yaml

    from search.codesign import platform_to_dict

    path = Path(out)
    if path.suffix not in (".yaml", ".yml"):
        raise InputError(f"--out must end in .yaml or .yml, got {out!r}")
    if path.exists() and not force:
        raise InputError(f"--out {out} exists; add --force to overwrite it")
    source = (
        f"codesign hw design (roofline.design): modelled die area {cost.area_mm2:.0f} mm^2, "
        f"TDP {cost.tdp_w:.0f} W, manufacturing cost US${cost.device_cost_usd:,.0f}; "
        "constants in data/hardware/design/"
    )
    text = yaml.safe_dump(platform_to_dict(platform, source), sort_keys=False)
    path.write_text(text, encoding="utf-8")


def run_design(args: argparse.Namespace) -> None:
    """Print the design's platform and cost breakdown (and, with --model, its speed)."""
    from roofline import design_cost, design_platform

    from .hw import platform_summary

    if not args.model:  # the scenario flags describe a prediction, which needs a model
        for flag, dest, default in args.scenario_flags:
            if getattr(args, dest) != default:
                raise InputError(f"{flag} goes with --model (the scenario of its prediction)")
    design = design_from_args(args)
    cost = design_cost(design)
    platform = design_platform(design, cost)
    evaluation = None
    if args.model:
        from genz import load_model
        from search.economics import evaluate_design

        model = model_from_args(args, load_model(args.model))
        scenario = scenario_from_args(args, model.default_weight_bits)
        evaluation = evaluate_design(
            design,
            model,
            scenario,
            lifetime_years=args.lifetime_years,
            electricity_usd_per_kwh=args.electricity_usd_per_kwh,
        )
    if args.out:
        write_platform_yaml(platform, args.out, args.force, cost)
    if args.json:
        payload = {"platform": platform_summary(platform), "cost": cost.to_dict()}
        if evaluation is not None:
            payload["evaluation"] = evaluation.to_dict()
        print_json(payload)
        return
    level = platform.main_memory
    area = cost.area
    pairs = [
        ("design", platform.display_name),
        (
            "compute",
            ", ".join(
                f"{d} {human_rate(p, 'FLOP/s')}" for d, p in platform.peak_flops_per_s.items()
            ),
        ),
        (
            "memory",
            f"{level.name}: {human_rate(level.bandwidth_bytes_per_s, 'B/s')}, "
            f"{human_bytes(level.capacity_bytes)} (decimal)",
        ),
        ("ridge point", f"{platform.ridge_point('bf16'):.1f} FLOP/B (bf16)"),
        (
            "die area",
            f"{cost.area_mm2:.0f} mm^2 ({cost.dies} die(s) of {cost.die_area_mm2:.0f}): tensor "
            f"{area.tensor_mm2:.0f}, vector {area.vector_mm2:.0f}, SRAM {area.sram_mm2:.0f}, "
            f"memory PHY {area.memory_phy_mm2:.0f} + controllers "
            f"{area.memory_controller_mm2:.0f}, links {area.link_mm2:.0f}, other {area.other_mm2:.0f}",
        ),
        (
            "yield",
            f"{cost.yield_fraction:.1%} of {cost.dies_per_wafer:.0f} gross dies per wafer",
        ),
        (
            "cost (US$)",
            f"{cost.device_cost_usd:,.0f} = dies {cost.die_usd:,.0f} + memory "
            f"{cost.memory_usd:,.0f} + package {cost.package_usd:,.0f} + board "
            f"{cost.board_usd:,.0f} (manufacturing; no margin, NRE or software)",
        ),
        (
            "TDP",
            f"{cost.tdp_w:.0f} W = tensor {cost.tensor_power_w:.0f} + vector "
            f"{cost.vector_power_w:.0f} + DRAM {cost.memory_power_w:.0f} + static "
            f"{cost.static_power_w:.0f} (every unit at peak)",
        ),
    ]
    if evaluation is not None:
        usd = evaluation.usd_per_million_output_tokens
        pairs += [
            (
                "model / scenario",
                f"{args.model}, {evaluation.devices} device(s)"
                + ("" if evaluation.fits else "  (DOES NOT FIT in memory)"),
            ),
            (
                "TTFT / TPOT",
                f"{human_seconds(evaluation.ttft_s)} / {human_seconds(evaluation.tpot_s)}",
            ),
            ("throughput", f"{evaluation.throughput_tokens_per_s:.1f} output tok/s"),
            (
                "$ per Mtok",
                "n/a"
                if usd is None
                else f"{usd:.3f} (cost over {args.lifetime_years:g} years "
                f"+ electricity at ${args.electricity_usd_per_kwh:g}/kWh)",
            ),
            ("perf / cost", f"{evaluation.perf_per_cost:.4f} tok/s per device per US$"),
        ]
    print_key_values(pairs)
