"""``codesign predict`` and ``codesign models``: one model, platform and scenario."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from genz import (
    ModelConfig,
    Precision,
    Prediction,
    RuntimeProfile,
    Scenario,
    list_models,
    load_model,
    parameter_count,
    predict,
    predict_partial_offload,
    summarise_weight_bits,
)
from roofline import InputError, Platform, load_platform
from search.economics import CostModel

from ..formatting import (
    human_bytes,
    human_seconds,
    print_json,
    print_key_values,
    print_table,
    text_table,
)
from .commands import add_command
from .flag_checks import warn_context
from .platform_args import add_platform_arguments, platform_from_args
from .runtime_output import (
    add_runtime_argument,
    domain_reasons,
    intervals,
    print_intervals,
    runtime_from_args,
)
from .scenario_args import (
    add_architecture_arguments,
    add_decoding_arguments,
    add_lora_arguments,
    add_offload_arguments,
    add_scenario_arguments,
    lora_model_from_args,
    model_from_args,
    scenario_from_args,
)
from .scenarios_output import add_scenarios_argument, run_scenarios

#: Options that apply with ``--scenarios`` (every other one is refused there: each row
#: is its own scenario, and a flag would otherwise be silently ignored).
SCENARIOS_OPTIONS = frozenset({"help", "scenarios", "runtime", "json", "csv"})


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``predict`` and ``models``."""
    models = add_command(subparsers, "models")
    models.add_argument("--json", action="store_true", help="machine-readable output")
    models.set_defaults(func=run_models)

    parser = add_command(subparsers, "predict")
    parser.add_argument("--model", help="model preset name or path to a config.json (required)")
    add_platform_arguments(parser, required=False)
    add_scenario_arguments(parser)
    add_decoding_arguments(parser)
    add_offload_arguments(parser)
    add_architecture_arguments(parser)
    ngl = parser.add_argument_group("llama.cpp partial offload (-ngl: layers on the host CPU)")
    ngl.add_argument(
        "--gpu-layers", type=int, default=None, help="layers on the device; the rest on --host-hw"
    )
    ngl.add_argument("--host-hw", help="host CPU preset or YAML that computes the other layers")
    add_lora_arguments(parser)
    add_runtime_argument(parser)
    add_scenarios_argument(parser)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="summary and operators as JSON")
    output.add_argument("--csv", action="store_true", help="per-operator breakdown as CSV")
    parser.add_argument(
        "--ops", action="store_true", help="print every operator, not the top 6 per phase"
    )
    options = tuple(
        (action.option_strings[0], action.dest, action.default)
        for action in parser._actions
        if action.option_strings and action.dest not in SCENARIOS_OPTIONS
    )
    parser.set_defaults(func=run_predict, scenario_options=options)


def run_models(args: argparse.Namespace) -> None:
    """Print one row per model preset."""
    rows = []
    for name in list_models():
        model = load_model(name)
        count = parameter_count(model)
        rows.append(
            {
                "name": name,
                "attention": model.attention_type,
                "moe": f"{model.num_experts}x top-{model.experts_per_token}"
                if model.is_moe
                else "-",
                "layers": model.num_layers,
                "hidden": model.hidden_size,
                "params (B)": round(count.total / 1e9, 3),
                "active (B)": round(count.active / 1e9, 3),
            }
        )
    if args.json:
        print_json(rows)
    else:
        print_table(rows)


def run_predict(args: argparse.Namespace) -> int:
    """Predict and print one scenario (or every row of ``--scenarios``); the exit code."""
    if args.scenarios:  # batch prediction: app/cli/scenarios_output.py
        for flag, dest, default in args.scenario_options:
            if getattr(args, dest) != default:
                raise InputError(
                    f"{flag} does not apply with --scenarios (each row is its own scenario; "
                    "give it as the file's column where the schema has one)"
                )
        return run_scenarios(args)
    for flag, value in (("--model", args.model), ("--hw", args.hw)):
        if value is None:
            raise InputError(f"{flag} is required (or give --scenarios FILE)")
    model = load_model(args.model)
    model = model_from_args(args, model)
    model = lora_model_from_args(args, model)
    platform = platform_from_args(args)
    scenario = scenario_from_args(args, model.default_weight_bits)
    runtime = runtime_from_args(args)
    if args.gpu_layers is not None or args.host_hw is not None:
        return run_partial_offload(args, model, platform, scenario, runtime)
    prediction = predict(model, platform, scenario, runtime=runtime)
    warn_context(model, scenario.input_tokens + scenario.output_tokens)
    # A named runtime (ideal included: physics' own error) prints its 80 % intervals.
    named = args.runtime is not None
    reasons = domain_reasons(runtime, model, platform, scenario) if named else []
    if args.json:
        summary = prediction.to_dict()
        summary["energy"] = energy_summary(prediction, platform)
        if named:  # runtime profile: its name, 80% intervals and domain
            found = intervals(prediction, runtime, platform, outside=bool(reasons))
            summary["runtime"] = runtime.name
            summary["intervals"] = {key: value.to_dict() for key, value in found.items()}
            summary["outside_domain"] = reasons
        print_json({"summary": summary, "operators": prediction.operator_rows()})
    elif args.csv:
        prediction.to_frame().to_csv(sys.stdout, index=False)
    else:
        print_prediction(prediction, model, all_ops=args.ops, platform=platform)
        if named:
            print_intervals(prediction, runtime, platform, reasons)
    return 0


def run_partial_offload(
    args: argparse.Namespace,
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    runtime: RuntimeProfile | None,
) -> int:
    """``--gpu-layers N --host-hw CPU``: `genz.predict_partial_offload` printed."""
    if args.gpu_layers is None or args.host_hw is None:
        raise InputError("--gpu-layers and --host-hw go together (llama.cpp -ngl offload)")
    host = load_platform(args.host_hw)
    result = predict_partial_offload(
        model, platform, host, scenario, args.gpu_layers, runtime=runtime, host_runtime=runtime
    )
    if args.json:
        print_json({"summary": result.to_dict()})
        return 0
    print_key_values(
        [
            (
                "model / platform",
                f"{model.name}: {result.gpu_layers} layers on {platform.name}, "
                f"{result.cpu_layers} on {host.name}",
            ),
            (
                "TTFT",
                f"{result.ttft_s * 1e3:.4g} ms (device {result.device_prefill_s * 1e3:.4g} "
                f"+ host {result.host_prefill_s * 1e3:.4g})",
            ),
            (
                "TPOT",
                f"{result.tpot_s * 1e3:.4g} ms (device {result.device_decode_s * 1e3:.4g} "
                f"+ host {result.host_decode_s * 1e3:.4g}); {result.decode_tokens_per_s:.4g} tok/s",
            ),
            ("end-to-end", f"{result.e2e_s * 1e3:.4g} ms"),
            (
                "device memory",
                f"{human_bytes(result.device_bytes)} "
                f"({'fits' if result.device_fits else 'does NOT fit'})",
            ),
            (
                "host memory",
                f"{human_bytes(result.host_bytes)} "
                f"({'fits' if result.host_fits else 'does NOT fit'})",
            ),
            (
                "hand-off",
                "charged over the host link"
                if result.handoff_charged
                else "not charged (no layer split, or no host link on the device)",
            ),
        ]
    )
    return 0


def precision_label(model: ModelConfig, precision: Precision) -> str:
    """``'w16a16kv16'``, or for per-group/per-layer weights the real mix:
    ``'mixed w4-8 (mean 5.12 bits) a16 kv8'`` (mean weighted by parameters)."""
    weights = summarise_weight_bits(model, precision)
    a, kv = precision.activation_bits, precision.kv_bits
    if weights.uniform:
        return f"w{weights.minimum:g}a{a:g}kv{kv:g}"
    return (
        f"mixed w{weights.minimum:g}-{weights.maximum:g} (mean {weights.mean:.3g} bits) "
        f"a{a:g} kv{kv:g}"
    )


def images_text(model: ModelConfig, scenario: Scenario) -> str:
    """``' (2 image(s), 1152 image tokens)'`` for a VLM scenario with images, else ''."""
    if not scenario.images or model.vision is None:
        return ""
    tokens = scenario.images * model.vision.tokens_per_image
    return f" ({scenario.images} image(s), {tokens} image tokens)"


def mode_text(scenario: Scenario) -> str:
    """``', 4 samples per request, KV 50% on host'``: the decoding mode and offload shares
    that differ from the defaults, '' when none does."""
    s = scenario
    return (
        (f", {s.parallel_samples} samples per request" if s.parallel_samples > 1 else "")
        + (f", beam width {s.beam_width}" if s.beam_width > 1 else "")
        + (f", weights {s.weight_offload:.0%} on host" if s.weight_offload else "")
        + (f", KV {s.kv_offload:.0%} on host" if s.kv_offload else "")
    )


def energy_summary(prediction: Prediction, platform: Platform) -> dict[str, object] | None:
    """Per-device power of each phase (W), J per token (prefill per prompt token, decode
    per generated token, whole request per generated token) and the power model used
    (`search.economics.economics`, at TDP where the platform has no power model); None without power."""
    figures = CostModel().evaluate(prediction, platform)
    if figures.j_per_output_token is None:
        return None
    return {
        "power_basis": figures.power_basis,
        "prefill_power_w": figures.prefill_power_w,
        "decode_power_w": figures.decode_power_w,
        "prefill_j_per_token": figures.prefill_j_per_token,
        "decode_j_per_token": figures.decode_j_per_token,
        "j_per_output_token": figures.j_per_output_token,
    }


def energy_line(prediction: Prediction, platform: Platform) -> str | None:
    """The ``energy`` line of the text summary, or None when the platform lists no power."""
    energy = energy_summary(prediction, platform)
    if energy is None:
        return None
    return (
        f"{energy['j_per_output_token']:.3g} J per output token (prefill "
        f"{energy['prefill_power_w']:.0f} W, decode {energy['decode_power_w']:.0f} W per "
        f"device; {energy['power_basis']})"
    )


def print_prediction(
    prediction: Prediction,
    model: ModelConfig,
    all_ops: bool = False,
    platform: Platform | None = None,
) -> None:
    """Human-readable summary and the heaviest operators of each phase (with
    ``platform``, also the energy per token)."""
    s = prediction.scenario
    mesh = s.parallelism
    fp = prediction.footprint
    verdict = prediction.capacity
    pairs = [
        (
            "model / platform",
            f"{prediction.model} on {prediction.platform} x {mesh.devices} device(s)",
        ),
        (
            "scenario",
            f"batch {s.batch}, {s.input_tokens} in{images_text(model, s)} / {s.output_tokens} "
            f"out, {precision_label(model, s.precision)}, "
            f"tp{mesh.tp} pp{mesh.pp} ep{mesh.ep} dp{mesh.dp}{mode_text(s)}",
        ),
        (
            "TTFT",
            f"{human_seconds(prediction.ttft_s)}  (prefill {prediction.prefill.bound.value}-bound)",
        ),
        (
            "TPOT",
            f"{human_seconds(prediction.tpot_s)}  (decode {prediction.decode.bound.value}-bound)",
        ),
        ("end-to-end", human_seconds(prediction.e2e_s)),
        (
            "throughput",
            f"{prediction.throughput_tokens_per_s:.4g} output tok/s total, "
            f"{prediction.throughput_tokens_per_s_per_device:.4g} per device, "
            f"{prediction.request_tokens_per_s:.4g} per request",
        ),
        (
            "OI prefill / decode",
            f"{prediction.prefill.operational_intensity:.4g} / {prediction.decode.operational_intensity:.4g} FLOP/B",
        ),
        (
            "memory per device",
            f"weights {human_bytes(fp.weights_bytes)} + KV {human_bytes(fp.kv_cache_bytes)} + "
            f"activations {human_bytes(fp.activation_bytes)} = {human_bytes(fp.total_bytes)} "
            f"of {human_bytes(verdict.capacity_bytes)} (decimal, {verdict.utilization:.0%})",
        ),
    ]
    if not prediction.fits:
        pairs.append(("capacity wall", "DOES NOT FIT: " + "; or ".join(prediction.suggestions)))
    energy = None if platform is None else energy_line(prediction, platform)
    if energy is not None:
        pairs.append(("energy", energy))
    print_key_values(pairs)
    rows = heaviest_operator_rows(prediction, all_ops)
    if not rows:
        return
    print()
    print("heaviest operators per phase (decode: one step at the mean context; MB decimal):")
    print(text_table(rows, OPERATOR_COLUMNS))


#: Columns of the operator table and the decimals each is rounded to.
OPERATOR_DECIMALS = {"GFLOP": 3, "MB": 2, "operational_intensity": 2, "time_ms": 4, "share": 3}
OPERATOR_COLUMNS = (
    "phase",
    "name",
    "GFLOP",
    "MB",
    "operational_intensity",
    "time_ms",
    "share",
    "bound",
)
OPERATORS_PER_PHASE = 6


def heaviest_operator_rows(
    prediction: Prediction, all_ops: bool = False
) -> list[dict[str, object]]:
    """Operator rows for the text table: prefill first, slowest first within a phase,
    the top `OPERATORS_PER_PHASE` of each (all with ``all_ops``); FLOP in GFLOP, bytes
    in MB (decimal), time in ms, ``share`` of the phase's summed operator time."""
    operators = prediction.operators()
    phase_time: dict[str, float] = {}
    for op in operators:
        phase_time[op.phase] = phase_time.get(op.phase, 0.0) + op.time_s
    ordered = sorted(operators, key=lambda op: (op.phase, op.time_s), reverse=True)
    shown: list[dict[str, object]] = []
    per_phase: dict[str, int] = {}
    for op in ordered:
        per_phase[op.phase] = per_phase.get(op.phase, 0) + 1
        if not all_ops and per_phase[op.phase] > OPERATORS_PER_PHASE:
            continue
        values = {
            "GFLOP": op.flop / 1e9,
            "MB": op.bytes / 1e6,
            "operational_intensity": op.operational_intensity,
            "time_ms": op.time_s * 1e3,
            "share": op.time_s / phase_time[op.phase],
        }
        rounded = {k: float(np.round(v, OPERATOR_DECIMALS[k])) for k, v in values.items()}
        shown.append({"phase": op.phase, "name": op.name, **rounded, "bound": op.bound.value})
    return shown
