"""``codesign requirements`` (least platform for an SLO) and ``codesign oicf`` (OI/CF report)."""

from __future__ import annotations

import argparse
import dataclasses

from genz import (
    MESH_AXES,
    ModelConfig,
    Parallelism,
    Scenario,
    load_use_cases,
    model_from_spec,
    scale_model,
    use_case,
)
from roofline import InputError
from search.economics import CostModel, Economics
from search.sizing import (
    AXES,
    DEFAULT_BITS,
    DEFAULT_MODELS,
    METHODS,
    OicfReport,
    Requirement,
    ServiceLevel,
    find_requirement,
    format_seconds,
    oicf_report,
)

from ..formatting import human_bytes, print_json, print_key_values, print_table
from .commands import add_command
from .platform_args import add_scale_arguments, platform_from_args
from .predict import precision_label
from .requirements_design import add_design_arguments, run_design_requirements
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

    oicf = add_command(subparsers, "oicf")
    oicf.add_argument("--hw", required=True, help="hardware preset or YAML (ridge, capacity)")
    add_scale_arguments(oicf)
    oicf.add_argument(
        "--models", default=",".join(DEFAULT_MODELS), help="comma-separated model specs"
    )
    oicf.add_argument("--use-cases", help="comma-separated use cases (default: all)")
    oicf.add_argument(
        "--bits",
        default=",".join(f"{w:g}/{kv:g}" for w, kv in DEFAULT_BITS),
        help="comma-separated weight/KV bit pairs (default 16/16,8/8,4/4)",
    )
    oicf.add_argument("--batch", type=int, default=1, help="batch of the OI columns (default 1)")
    oicf.add_argument("--devices", type=int, help="devices sharing the CF (default: one node)")
    oicf.add_argument("--decode-batch", type=int, default=32, help="disaggregated decode batch")
    oicf.add_argument("--max-ttft-s", type=float, default=2.0, help="disaggregated prefill SLO")
    oicf.add_argument("--max-tpot-ms", type=float, default=50.0, help="disaggregated decode SLO")
    oicf.add_argument("--json", action="store_true", help="machine-readable output")
    oicf.set_defaults(func=run_oicf)


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
            ("workload", _workload_text(args, model, scenario)),
            ("SLO", slo.describe()),
        ]
    )
    print()
    print_table([_row(result) for result in results])
    print()
    for result in results:
        if result.method in ("devices", "joint") or not result.success:
            print(f"- {result.message}")
    _print_economics(results[0])


def _workload_text(args: argparse.Namespace, model: ModelConfig, scenario: Scenario) -> str:
    label = f"{args.use_case}: " if args.use_case else ""
    return (
        f"{label}{scenario.input_tokens} in / {scenario.output_tokens} out, "
        f"concurrency {scenario.batch} per replica, {precision_label(model, scenario.precision)}"
    )


def _row(result: Requirement) -> dict[str, object]:
    mesh: Parallelism = result.scenario.parallelism
    figures = result.economics
    hypothetical = result.others == "unlimited"  # no power or price for unlimited resources
    return {
        "method": result.method,
        "others": _others_text(result),
        "requirement": _requirement_text(result),
        "mesh": f"tp{mesh.tp} pp{mesh.pp} ep{mesh.ep} dp{mesh.dp}",
        "TTFT": format_seconds(result.prediction.ttft_s),
        "TPOT": format_seconds(result.prediction.tpot_s),
        "tok/s": f"{result.prediction.throughput_tokens_per_s:.4g}",
        "binds": f"{result.binding_slo} ({result.binding_bound.value})",
        "J/tok decode": "-" if hypothetical else _maybe(figures.decode_j_per_token),
        "$/Mtok out": "-" if hypothetical else _maybe(figures.usd_per_million_output_tokens),
    }


def _others_text(result: Requirement) -> str:
    """``'base'``, or which resources were unlimited (``'unlimited compute, capacity, link'``)."""
    if result.unlimited_resources:
        return f"unlimited {', '.join(result.unlimited_resources)}"
    return result.others


def _requirement_text(result: Requirement) -> str:
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


def _print_economics(result: Requirement) -> None:
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


def _bits(text: str) -> tuple[tuple[float, float], ...]:
    pairs = []
    for item in text.split(","):
        weight, _, kv = item.partition("/")
        try:
            pairs.append((float(weight), float(kv or weight)))
        except ValueError:
            raise InputError(
                f"--bits must look like 16/16,8/8,4/4 (weight/KV bits), got {item!r}"
            ) from None
    return tuple(pairs)


def run_oicf(args: argparse.Namespace) -> None:
    """Print the OI/CF table and the disaggregated view."""
    platform = platform_from_args(args)
    models = [model_from_spec(spec.strip()) for spec in args.models.split(",") if spec.strip()]
    names = args.use_cases.split(",") if args.use_cases else list(load_use_cases())
    cases = [use_case(name.strip()) for name in names]
    devices = args.devices
    if devices is None:
        link = platform.interconnect
        devices = 1 if link is None else link.devices_per_node
    for label, value in (("--max-ttft-s", args.max_ttft_s), ("--max-tpot-ms", args.max_tpot_ms)):
        if not value > 0:
            raise InputError(f"{label} must be > 0, got {value!r}")
    report = oicf_report(
        models,
        cases,
        platform,
        bits=_bits(args.bits),
        batch=args.batch,
        devices=devices,
        decode_batch=args.decode_batch,
        slo=ServiceLevel(max_ttft_s=args.max_ttft_s, max_tpot_s=args.max_tpot_ms / 1e3),
    )
    if args.json:
        print_json(report.to_dict())
        return
    _print_oicf(report)


def _print_oicf(report: OicfReport) -> None:
    first = report.rows[0]
    print(
        f"OI (FLOP/byte) and CF per replica on {report.platform}: ridge "
        f"{first.ridge_flop_per_byte:.4g} FLOP/B (derated), wall = {report.devices} x "
        f"{human_bytes(first.capacity_bytes / report.devices)} (decimal); batch {first.batch}"
    )
    rows = []
    for row in report.rows:
        if row.max_batch == 0:
            note = "WALL: weights do not fit"
        elif row.past_capacity_wall:
            note = f"WALL at batch {row.max_batch + 1}"
        elif row.memory_bound_up_to_wall:
            note = "decode memory-bound up to the wall"
        else:
            note = f"decode compute-bound from batch {row.compute_bound_batch}"
        rows.append(
            {
                "use case": row.use_case,
                "model": row.model,
                "w/kv": f"{row.weight_bits:g}/{row.kv_bits:g}",
                "OI prefill": f"{row.prefill_oi:.4g}",
                "OI decode": f"{row.decode_oi:.3g}",
                "KV/req GB": f"{row.kv_bytes_per_request / 1e9:.3g}",
                "CF decode GB": f"{row.decode_cf_bytes / 1e9:.4g}",
                "max batch": row.max_batch,
                "OI@max": "-"
                if row.decode_oi_at_max_batch is None
                else f"{row.decode_oi_at_max_batch:.3g}",
                "note": note,
            }
        )
    print_table(rows)
    print()
    slo = report.slo
    need = report.disaggregated[0]
    print(
        f"disaggregated serving: least peak rates and memory for TTFT <= {slo.max_ttft_s:g} s "
        f"(one request) and TPOT <= {slo.max_tpot_s * 1e3:g} ms at decode batch "  # type: ignore[operator]
        f"{need.decode_batch} (roofline at the platform's efficiencies, decimal units; "
        "ridge P/D: the ridge that balances compute and bandwidth for each phase)"
    )
    print_table(
        [
            {
                "use case": need.use_case,
                "model": need.model,
                "w/kv": f"{need.weight_bits:g}/{need.kv_bits:g}",
                "prefill TFLOP/s": f"{need.prefill_flops_per_s / 1e12:.4g}",
                "prefill TB/s": f"{need.prefill_bytes_per_s / 1e12:.3g}",
                "prefill GB": f"{need.prefill_capacity_bytes / 1e9:.4g}",
                "decode TB/s": f"{need.decode_bytes_per_s / 1e12:.3g}",
                "decode TFLOP/s": f"{need.decode_flops_per_s / 1e12:.4g}",
                "decode GB": f"{need.decode_capacity_bytes / 1e9:.4g}",
                "ridge P/D": f"{need.prefill_oi:.4g}/{need.decode_oi:.3g}",
            }
            for need in report.disaggregated
        ]
    )


__all__ = ["register"]
