"""``codesign predict`` and ``codesign models``: one model, platform and scenario."""

from __future__ import annotations

import argparse
import sys

from genz import (
    ModelConfig,
    Precision,
    Prediction,
    list_models,
    load_model,
    parameter_count,
    predict,
    summarise_weight_bits,
)

from .commands import add_command
from .formatting import human_bytes, human_seconds, print_json, print_key_values, print_table
from .platform_args import add_platform_arguments, platform_from_args
from .scenario_args import add_scenario_arguments, scenario_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``predict`` and ``models``."""
    models = add_command(subparsers, "models")
    models.add_argument("--json", action="store_true", help="machine-readable output")
    models.set_defaults(func=run_models)

    parser = add_command(subparsers, "predict")
    parser.add_argument("--model", required=True, help="model preset name or path to a config.json")
    add_platform_arguments(parser)
    add_scenario_arguments(parser)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="summary and operators as JSON")
    output.add_argument("--csv", action="store_true", help="per-operator breakdown as CSV")
    parser.add_argument(
        "--ops", action="store_true", help="print every operator, not the top 6 per phase"
    )
    parser.set_defaults(func=run_predict)


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


def run_predict(args: argparse.Namespace) -> None:
    """Predict and print one scenario."""
    model = load_model(args.model)
    platform = platform_from_args(args)
    scenario = scenario_from_args(args, model.default_weight_bits)
    prediction = predict(model, platform, scenario)
    if args.json:
        frame = prediction.to_frame()
        print_json({"summary": prediction.to_dict(), "operators": frame.to_dict(orient="records")})
    elif args.csv:
        prediction.to_frame().to_csv(sys.stdout, index=False)
    else:
        print_prediction(prediction, model, all_ops=args.ops)


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


def print_prediction(prediction: Prediction, model: ModelConfig, all_ops: bool = False) -> None:
    """Human-readable summary and the heaviest operators of each phase."""
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
            f"batch {s.batch}, {s.input_tokens} in / {s.output_tokens} out, "
            f"{precision_label(model, s.precision)}, "
            f"tp{mesh.tp} pp{mesh.pp} ep{mesh.ep} dp{mesh.dp}",
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
    print_key_values(pairs)
    frame = prediction.to_frame()
    if frame.empty:
        return
    frame["time_ms"] = frame["time_s"] * 1e3
    frame["share"] = frame["time_s"] / frame.groupby("phase")["time_s"].transform("sum")
    frame["GFLOP"] = frame["flop"] / 1e9
    frame["MB"] = frame["bytes"] / 1e6
    columns = ["phase", "name", "GFLOP", "MB", "operational_intensity", "time_ms", "share", "bound"]
    frame = frame.sort_values(["phase", "time_s"], ascending=[False, False])
    if not all_ops:
        frame = frame.groupby("phase", sort=False).head(6)
    print()
    print("heaviest operators per phase (decode: one step at the mean context; MB decimal):")
    print_table(
        frame[columns].round(
            {"GFLOP": 3, "MB": 2, "operational_intensity": 2, "time_ms": 4, "share": 3}
        )
    )
