"""``codesign requirements`` (least platform for an SLO) and ``codesign oicf`` (OI/CF report)."""

from __future__ import annotations

import argparse
import dataclasses

from genz import MESH_AXES, ModelConfig, Scenario, model_from_spec, scale_model
from roofline import InputError
from search.economics import CostModel
from search.sizing import AXES, METHODS, Requirement, ServiceLevel, find_requirement

from ..formatting import print_json, print_key_values, print_table
from .commands import add_command
from .oicf import register_oicf
from .platform_args import add_scale_arguments, platform_from_args
from .requirements_design import add_design_arguments, run_design_requirements
from .requirements_output import print_economics, requirement_row, workload_text
from .scenario_args import (
    add_architecture_arguments,
    add_decoding_arguments,
    add_offload_arguments,
    add_scenario_arguments,
    model_from_args,
    scenario_from_args,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``requirements`` and ``oicf``."""
    parser = add_command(subparsers, "requirements")
    parser.add_argument(
        "--model", required=True, help="model preset or config.json; name+gqa / name+mla twins"
    )
    parser.add_argument(
        "--base-hw", dest="hw", help="base hardware preset or YAML (or --design: no preset)"
    )
    add_scale_arguments(parser)
    add_scenario_arguments(parser, searched_mesh=True)
    parser.add_argument("--concurrency", dest="batch", type=int, help="same as --batch")
    add_decoding_arguments(parser)
    add_offload_arguments(parser)
    add_architecture_arguments(parser)
    slo = parser.add_argument_group("service-level objectives")
    slo.add_argument("--max-ttft-s", type=float, help="time to first token ceiling, seconds")
    slo.add_argument("--max-tpot-ms", type=float, help="time per output token ceiling, ms")
    slo.add_argument("--min-throughput", type=float, help="output tokens/s floor (all replicas)")
    search = parser.add_argument_group("search")
    search.add_argument("--method", choices=("all", *METHODS), default="all")
    search.add_argument(
        "--objective",
        choices=("devices", "cost", "energy"),
        default="devices",
        help="how the devices search picks among meshes that meet the SLO",
    )
    search.add_argument("--max-devices", type=int, default=256, help="devices search cap")
    search.add_argument("--max-scale", type=float, default=1024.0, help="scale search range")
    forward = parser.add_argument_group("project forward (a model that does not exist yet)")
    forward.add_argument("--params-scale", type=float, default=1.0, help="x total parameters")
    forward.add_argument("--experts-scale", type=float, default=1.0, help="x routed experts")
    forward.add_argument("--context-scale", type=float, default=1.0, help="x prompt tokens")
    add_cost_arguments(parser)
    add_design_arguments(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run_requirements)
    register_oicf(subparsers)


def add_cost_arguments(parser: argparse.ArgumentParser) -> None:
    """Energy and cost assumptions (see search.economics.economics)."""
    group = parser.add_argument_group("energy and cost")
    group.add_argument(
        "--power-fraction",
        type=float,
        default=1.0,
        help="of TDP drawn (0, 1]; used only for hardware without a power_model",
    )
    group.add_argument("--utilization", type=float, default=1.0, help="paid hours serving (0, 1]")
    group.add_argument("--lifetime-years", type=float, help="amortise price_usd over this")
    group.add_argument("--electricity-usd-per-kwh", type=float, help="US$/kWh (0; --design: 0.10)")


def _model(args: argparse.Namespace) -> ModelConfig:
    model = model_from_args(args, model_from_spec(args.model))
    if args.params_scale != 1.0 or args.experts_scale != 1.0:
        model = scale_model(model, args.params_scale, args.experts_scale)
    return model


def _scenario(args: argparse.Namespace, model: ModelConfig) -> tuple[Scenario, bool]:
    """The workload, and whether the user fixed the mesh."""
    for flag, value in (
        ("--batch/--concurrency", args.batch),
        *((f"--{flag}", getattr(args, flag)) for flag in MESH_AXES),
    ):
        if value is not None and value < 1:
            raise InputError(f"{flag} must be an integer >= 1, got {value}")
    mesh_given = any(getattr(args, flag) is not None for flag in MESH_AXES)
    scenario = scenario_from_args(args, model.default_weight_bits)
    if args.context_scale != 1.0:
        if not args.context_scale > 0:
            raise InputError(f"--context-scale must be > 0, got {args.context_scale!r}")
        tokens = max(1, round(scenario.input_tokens * args.context_scale))
        scenario = dataclasses.replace(scenario, input_tokens=tokens)
    return scenario, mesh_given


def run_requirements(args: argparse.Namespace) -> None:
    """Search and print the requirements."""
    model = _model(args)
    scenario, mesh_given = _scenario(args, model)
    for flag, value in (
        ("--max-ttft-s", args.max_ttft_s),
        ("--max-tpot-ms", args.max_tpot_ms),
        ("--min-throughput", args.min_throughput),
    ):
        if value is not None and not 0 < value < float("inf"):
            raise InputError(f"{flag} must be a finite number > 0, got {value!r}")
    slo = ServiceLevel(
        max_ttft_s=args.max_ttft_s,
        max_tpot_s=None if args.max_tpot_ms is None else args.max_tpot_ms / 1e3,
        min_throughput_tokens_per_s=args.min_throughput,
    )
    if args.design:
        run_design_requirements(args, model, scenario, slo)
        return
    if args.disaggregated:
        raise InputError("--disaggregated applies only with --design")
    if not args.hw:
        raise InputError("requirements needs --base-hw (a preset or YAML) or --design")
    base = platform_from_args(args)
    cost_model = CostModel(
        power_fraction=args.power_fraction,
        utilization=args.utilization,
        lifetime_years=args.lifetime_years,
        electricity_usd_per_kwh=args.electricity_usd_per_kwh or 0.0,
    )
    options = {
        "cost_model": cost_model,
        "objective": args.objective,
        "max_devices": args.max_devices,
        "max_scale": args.max_scale,
    }
    results: list[Requirement] = []
    if args.method in ("all", "devices"):
        results.append(find_requirement(model, base, scenario, slo, "devices", **options))
        if not mesh_given:
            scenario = dataclasses.replace(scenario, parallelism=results[0].scenario.parallelism)
    axes = list(AXES) if args.method == "all" else [m for m in AXES if m == args.method]
    if args.method == "all" and scenario.parallelism.devices_per_replica == 1:
        axes.remove("link")  # one device per replica: no collectives to speed up
    for method in axes:
        for others in ("base", "unlimited"):
            results.append(
                find_requirement(model, base, scenario, slo, method, others=others, **options)
            )
    if args.json:
        print_json(
            {
                "model": model.name,
                "base_platform": base.name,
                "slo": dataclasses.asdict(slo),
                "requirements": [result.to_dict() for result in results],
            }
        )
        return
    print_key_values(
        [
            ("model / base", f"{model.name} on {base.name} ({base.display_name})"),
            ("workload", workload_text(args, model, scenario)),
            ("SLO", slo.describe()),
        ]
    )
    print()
    print_table([requirement_row(result) for result in results])
    print()
    for result in results:
        if result.method in ("devices", "joint") or not result.success:
            print(f"- {result.message}")
    print_economics(results[0])


__all__ = ["register"]
