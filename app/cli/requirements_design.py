"""``codesign requirements --design``: the cheapest parametric accelerator for an SLO,
and (``--disaggregated``) the cheapest prefill/decode design pair with its N:M pools.

Thin: the searches are `search.sizing.cheapest_design` and `search.sizing.design_pair`
over a `search.sizing.DesignGrid`; this module parses the axes and prints.
"""

from __future__ import annotations

import argparse

from roofline import InputError
from search.sizing import (
    DEFAULT_COMPUTE_TFLOPS,
    DEFAULT_LINKS,
    DEFAULT_MEMORIES,
    DEFAULT_NODES,
    DEFAULT_SRAM_MB,
    DESIGN_OBJECTIVES,
    SIMULATED_REQUESTS,
    CheapestDesign,
    DesignChoice,
    DesignGrid,
    ServiceLevel,
    cheapest_design,
    design_pair,
    designs_from_file,
    format_seconds,
    simulated_design_pair,
)

from ..formatting import human_bytes, print_json, print_key_values, print_table
from .design_pair_output import print_pair

DESIGN_LIFETIME_YEARS = 4.0
DESIGN_ELECTRICITY_USD_PER_KWH = 0.10
#: Options of the preset searches that --design does not use: (dest, flag, default).
PRESET_ONLY = (
    ("method", "--method", "all"),
    ("objective", "--objective (use --design-objective)", "devices"),
    ("max_scale", "--max-scale", 1024.0),
    ("power_fraction", "--power-fraction", 1.0),
    ("utilization", "--utilization", 1.0),
)


def _joined(values: tuple[object, ...], separator: str = ",") -> str:
    return separator.join(
        f"{value:g}" if isinstance(value, float) else str(value) for value in values
    )


def add_design_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--design`` mode's options (the SLO flags are the command's own)."""
    group = parser.add_argument_group(
        "design space (--design: search parametric accelerators instead of --base-hw)"
    )
    group.add_argument(
        "--design",
        action="store_true",
        help="find the cheapest accelerator design meeting the SLOs (no --base-hw)",
    )
    group.add_argument(
        "--design-objective",
        choices=DESIGN_OBJECTIVES,
        default="device-cost",
        help="device-cost: least US$ of hardware (devices x modelled cost); usd-per-mtok: "
        "least US$ per million output tokens (cost over --lifetime-years + electricity)",
    )
    group.add_argument(
        "--design-compute-tflops",
        default=_joined(DEFAULT_COMPUTE_TFLOPS),
        help="dense bf16 TFLOP/s values, comma-separated",
    )
    group.add_argument(
        "--design-memory",
        default=_joined(DEFAULT_MEMORIES),
        help="technology:units[:GB per unit] values, comma-separated (HBM stacks or "
        "32-bit channels)",
    )
    group.add_argument(
        "--design-sram-mb", default=_joined(DEFAULT_SRAM_MB), help="on-die SRAM values, MB"
    )
    group.add_argument(
        "--design-nodes", default=_joined(DEFAULT_NODES), help="process nodes (n16 ... n3)"
    )
    group.add_argument(
        "--design-links",
        default=_joined(DEFAULT_LINKS, ";"),
        help="link sets separated by ';', each link:units pairs (nvlink4:18,pcie5:16;pcie5:16)",
    )
    group.add_argument(
        "--design-space",
        help="YAML/JSON with a space file's hardware.design section (or that mapping "
        "alone); replaces the --design-* axes",
    )
    group.add_argument(
        "--disaggregated",
        action="store_true",
        help="with --design: choose a prefill design, a decode design and the N:M pool "
        "ratio together (least US$ per million output tokens), beside the best colocated one; "
        "then checked, and resized if need be, on the serving simulator (--no-simulate)",
    )
    group.add_argument(
        "--no-simulate",
        action="store_true",
        help="with --disaggregated: skip checking (and resizing) the pools on the serving "
        "simulator",
    )
    group.add_argument(
        "--simulate-requests",
        type=int,
        default=SIMULATED_REQUESTS,
        help=f"with --disaggregated: Poisson requests simulated (seed 0; {SIMULATED_REQUESTS})",
    )
    group.add_argument(
        "--kv-link-gb-per-s",
        type=float,
        help="KV-transfer bandwidth per device, GB/s (default: each design's PCIe lanes)",
    )


def _refuse_preset_options(args: argparse.Namespace) -> None:
    """One line for an option --design would silently ignore (the mesh is searched, the
    design is not a scaled preset)."""
    from genz import MESH_AXES, SCALE_AXES

    for dest, flag, default in PRESET_ONLY:
        if getattr(args, dest) != default:
            raise InputError(f"{flag} applies to --base-hw searches, not to --design")
    for axis in SCALE_AXES.values():
        if getattr(args, axis.dest) != axis.default:
            raise InputError(f"{axis.flag} scales a preset; --design describes the device")
    for flag in ("compute_eff", "memory_eff"):
        if getattr(args, flag, None) is not None:
            raise InputError(f"--{flag.replace('_', '-')} applies to --base-hw, not to --design")
    for name in MESH_AXES:
        if getattr(args, name) is not None:
            raise InputError(f"--{name} is searched with --design; drop it")


def _numbers(text: str, flag: str) -> tuple[float, ...]:
    try:
        values = tuple(float(item) for item in str(text).split(",") if item.strip())
    except ValueError:
        raise InputError(f"{flag} must be comma-separated numbers, got {text!r}") from None
    if not values:
        raise InputError(f"{flag} needs at least one value")
    return values


def grid_from_args(args: argparse.Namespace) -> DesignGrid:
    """The `DesignGrid` the ``--design-*`` options describe."""
    return DesignGrid(
        compute_tflops=_numbers(args.design_compute_tflops, "--design-compute-tflops"),
        memories=tuple(item.strip() for item in args.design_memory.split(",") if item.strip()),
        sram_mb=_numbers(args.design_sram_mb, "--design-sram-mb"),
        nodes=tuple(item.strip() for item in args.design_nodes.split(",") if item.strip()),
        links=tuple(item.strip() for item in args.design_links.split(";") if item.strip()),
    )


def designs_from_args(args: argparse.Namespace) -> list:  # type: ignore[type-arg]
    """The designs of ``--design-space``, else of the ``--design-*`` axes."""
    if args.design_space is None:
        return grid_from_args(args).designs()
    axes = ("compute_tflops", "memory", "sram_mb", "nodes", "links")
    for axis in axes:
        dest = f"design_{axis}"
        if getattr(args, dest) != _default_axes()[dest]:
            raise InputError(
                f"--design-{axis.replace('_', '-')} and --design-space: give the axes in one place"
            )
    return designs_from_file(args.design_space)


def _default_axes() -> dict[str, str]:
    return {
        "design_compute_tflops": _joined(DEFAULT_COMPUTE_TFLOPS),
        "design_memory": _joined(DEFAULT_MEMORIES),
        "design_sram_mb": _joined(DEFAULT_SRAM_MB),
        "design_nodes": _joined(DEFAULT_NODES),
        "design_links": _joined(DEFAULT_LINKS, ";"),
    }


def run_design_requirements(
    args: argparse.Namespace, model: object, scenario: object, slo: ServiceLevel
) -> None:
    """Search the design space and print the answer (or the pair)."""
    if getattr(args, "hw", None):
        raise InputError("--design searches parametric designs; drop --base-hw")
    _refuse_preset_options(args)
    designs = designs_from_args(args)
    lifetime = args.lifetime_years or DESIGN_LIFETIME_YEARS
    electricity = (
        DESIGN_ELECTRICITY_USD_PER_KWH
        if args.electricity_usd_per_kwh is None
        else args.electricity_usd_per_kwh
    )
    options = {
        "max_devices": args.max_devices,
        "lifetime_years": lifetime,
        "electricity_usd_per_kwh": electricity,
    }
    if args.disaggregated:
        _run_pair(args, model, scenario, slo, designs, options)
        return
    for flag, given in (
        ("--kv-link-gb-per-s", args.kv_link_gb_per_s is not None),
        ("--no-simulate", args.no_simulate),
        ("--simulate-requests", args.simulate_requests != SIMULATED_REQUESTS),
    ):
        if given:
            raise InputError(f"{flag} applies only with --disaggregated")
    answer = cheapest_design(
        model,  # type: ignore[arg-type]
        scenario,  # type: ignore[arg-type]
        slo,
        designs,
        objective=args.design_objective,
        **options,  # type: ignore[arg-type]
    )
    if args.json:
        print_json({"model": model.name, "slo": slo.describe(), **answer.to_dict()})  # type: ignore[attr-defined]
        return
    _print_answer(answer, slo, lifetime, electricity)


def _choice_row(label: str, choice: DesignChoice) -> dict[str, object]:
    design = choice.design
    return {
        "": label,
        "design": design.name,
        "mesh": choice.mesh,
        "TTFT": format_seconds(choice.ttft_s),
        "TPOT": format_seconds(choice.tpot_s),
        "tok/s": f"{choice.throughput_tokens_per_s:.4g}",
        "US$/device": f"{choice.cost.device_cost_usd:,.0f}",
        "US$ hardware": f"{choice.hardware_cost_usd:,.0f}",
        "$/Mtok": f"{choice.usd_per_million_output_tokens:.4g}",
        "area mm2": f"{choice.cost.area_mm2:.0f}",
        "TDP W": f"{choice.cost.tdp_w:.0f}",
    }


def _print_answer(
    answer: CheapestDesign, slo: ServiceLevel, lifetime: float, electricity: float
) -> None:
    best = answer.best
    cost = best.cost
    area = cost.area
    memory = best.design.memory
    print_key_values(
        [
            ("SLO", slo.describe()),
            (
                "searched",
                f"{answer.designs} buildable designs x their meshes = {answer.candidates} "
                f"candidates; objective {answer.objective} (cost over {lifetime:g} years + "
                f"electricity at ${electricity:g}/kWh for $/Mtok)",
            ),
            ("answer", answer.message),
            (
                "design",
                f"{best.design.tensor_tflops:g} TFLOP/s bf16, {memory.units} x "
                f"{memory.technology} ({memory.bandwidth_bytes_per_s / 1e12:.3g} TB/s, "
                f"{human_bytes(memory.capacity_bytes)} decimal), {best.design.sram_mb:g} MB "
                f"SRAM, {best.design.node}, links "
                + ", ".join(f"{k} x{v}" for k, v in best.design.links.items()),
            ),
            (
                "die area",
                f"{cost.area_mm2:.0f} mm^2: tensor {area.tensor_mm2:.0f}, vector "
                f"{area.vector_mm2:.0f}, SRAM {area.sram_mm2:.0f}, memory PHY "
                f"{area.memory_phy_mm2:.0f} + controllers {area.memory_controller_mm2:.0f}, "
                f"links {area.link_mm2:.0f}, other {area.other_mm2:.0f}; yield "
                f"{cost.yield_fraction:.1%}",
            ),
            (
                "device cost (US$)",
                f"{cost.device_cost_usd:,.0f} = die {cost.die_usd:,.0f} + memory "
                f"{cost.memory_usd:,.0f} + package {cost.package_usd:,.0f} + board "
                f"{cost.board_usd:,.0f} (manufacturing; no margin or NRE)",
            ),
            ("TDP", f"{cost.tdp_w:.0f} W"),
            (
                "memory per device",
                f"{human_bytes(best.footprint_bytes)} of {human_bytes(best.capacity_bytes)} "
                "(decimal)",
            ),
            (
                "cheaper candidates rejected by",
                ", ".join(f"{name} {count}" for name, count in answer.rejected.items()),
            ),
        ]
    )
    print()
    rows = [_choice_row("best", best)]
    if answer.runner_up is not None:
        rows.append(_choice_row("runner-up", answer.runner_up))
    print_table(rows)


def _run_pair(
    args: argparse.Namespace,
    model: object,
    scenario: object,
    slo: ServiceLevel,
    designs: list,  # type: ignore[type-arg]
    options: dict[str, float],
) -> None:
    """The rate model's pair, checked and resized on the simulator unless --no-simulate."""
    common = {"kv_link_gb_per_s": args.kv_link_gb_per_s, **options}
    if args.no_simulate:
        if args.simulate_requests != SIMULATED_REQUESTS:
            raise InputError("--simulate-requests and --no-simulate: give one")
        pair = design_pair(model, scenario, slo, designs, **common)  # type: ignore[arg-type]
        simulated = None
    else:
        simulated = simulated_design_pair(
            model,  # type: ignore[arg-type]
            scenario,  # type: ignore[arg-type]
            slo,
            designs,
            requests=args.simulate_requests,
            **common,  # type: ignore[arg-type]
        )
        pair = simulated.pair
    if args.json:
        payload = {"model": model.name, "slo": slo.describe(), "pair": pair.to_dict()}  # type: ignore[attr-defined]
        payload["simulation"] = None if simulated is None else simulated.to_dict()
        print_json(payload)
        return
    print_pair(pair, simulated, slo, options["lifetime_years"], options["electricity_usd_per_kwh"])
