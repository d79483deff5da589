"""``codesign quantize``: mixed-precision bit allocation within memory and latency budgets."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from genz import MESH_AXES, load_model, precision_to_dict
from roofline import InputError
from search.bits import (
    BUDGET_FIELDS,
    DEFAULT_MIP_GAP,
    METHODS,
    LayerClass,
    QuantizationResult,
    QuantizeBudgets,
    layer_classes,
    load_hessian_traces,
    load_imatrix,
    load_sensitivity_table,
    parse_formats,
    quantize,
    weight_sensitivity,
)

from ..formatting import human_bytes, human_seconds, print_json, print_key_values, print_table
from .commands import add_command
from .platform_args import add_platform_arguments, platform_from_args
from .runtime_output import add_runtime_argument, runtime_from_args
from .scenario_args import add_scenario_arguments, scenario_from_args

#: CLI flag -> (QuantizeBudgets field, factor to SI).
BUDGET_FLAGS = {
    "max_memory_gb": ("max_memory_bytes", 1e9),
    "max_weights_gb": ("max_weights_bytes", 1e9),
    "max_kv_gb": ("max_kv_cache_bytes", 1e9),
    "max_tpot_ms": ("max_tpot_s", 1e-3),
    "max_ttft_ms": ("max_ttft_s", 1e-3),
    "max_decode_gbops": ("max_decode_bops", 1e9),
}
BUDGET_HELP = {
    "max_memory_gb": "weights + KV cache + activations per device, GB (decimal)",
    "max_weights_gb": "weights per device, GB (decimal)",
    "max_kv_gb": "KV cache per device, GB (decimal)",
    "max_tpot_ms": "decode time per output token, ms",
    "max_ttft_ms": "prefill time (time to first token), ms",
    "max_decode_gbops": "bit-operations of one decode step per device, 1e9 (MACs x w bits x a bits)",
}
OUTPUT_SUFFIXES = (".yaml", ".yml", ".json")
#: Scenario options of ``quantize`` (KV-cache bits are chosen, from ``--kv-bits``).
QUANTIZE_SCENARIO_AXES = (
    "batch",
    "input_tokens",
    "output_tokens",
    "prefill_chunk",
    "activation_bits",
    "weight_bits",
    *MESH_AXES,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``quantize``."""
    parser = add_command(subparsers, "quantize")
    parser.add_argument("--model", required=True, help="model preset name or path to a config.json")
    add_platform_arguments(parser)
    parser.add_argument(
        "--bits", default="16,8,4", help="candidate weight formats, e.g. 16,8,4 or fp8,int4,mxfp4"
    )
    parser.add_argument("--kv-bits", default="16", help="candidate KV-cache formats (default 16)")
    parser.add_argument(
        "--quantize-embedding", action="store_true", help="also choose the embedding's format"
    )
    budgets = parser.add_argument_group("budgets (any subset)")
    for dest, text in BUDGET_HELP.items():
        budgets.add_argument("--" + dest.replace("_", "-"), dest=dest, type=float, help=text)
    sens = parser.add_argument_group("sensitivity (default: weight-free proxy)")
    source = sens.add_mutually_exclusive_group()
    source.add_argument("--sensitivity", help="CSV: layer, group, bits, sensitivity")
    source.add_argument("--hessian-trace", help="CSV: layer, group, trace[, range] (HAWQ-V3)")
    source.add_argument(
        "--weights",
        help="model.safetensors or model.gguf: each weight group's quantisation error per "
        "format with the format's block structure (needs the 'weights' extra)",
    )
    sens.add_argument(
        "--imatrix",
        help="with --weights: llama.cpp importance matrix (imatrix.dat or .gguf) weighting "
        "each input column's error by its mean squared activation",
    )
    sens.add_argument(
        "--edge-layer-weight",
        type=float,
        default=1.0,
        help="proxy weight of the first and last eighth of the layers (default 1)",
    )
    add_scenario_arguments(
        parser,
        axes=QUANTIZE_SCENARIO_AXES,
        bits_file=False,
        title="serving scenario",
        help_overrides={"weight_bits": "bits of router and norms (and embedding unless chosen)"},
    )
    parser.add_argument("--method", choices=METHODS, default="ilp", help="solver (default ilp)")
    parser.add_argument(
        "--time-limit-s", type=float, default=60.0, help="solver time limit (default 60)"
    )
    parser.add_argument(
        "--mip-gap",
        type=float,
        default=DEFAULT_MIP_GAP,
        help=f"ILP relative optimality tolerance (default {DEFAULT_MIP_GAP:g}; 0 = prove optimal)",
    )
    add_runtime_argument(parser)
    output = parser.add_argument_group("output")
    output.add_argument("--out", help="write the allocation as a bits file (.yaml, .yml or .json)")
    output.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run_quantize)


def run_quantize(args: argparse.Namespace) -> None:
    """Solve, print the allocation and write the bits file."""
    if args.out and Path(args.out).suffix.lower() not in OUTPUT_SUFFIXES:
        raise InputError(f"--out must end in {', '.join(OUTPUT_SUFFIXES)}, got {args.out!r}")
    model = load_model(args.model)
    platform = platform_from_args(args)
    runtime = runtime_from_args(args)
    budgets = QuantizeBudgets(
        **{
            field: getattr(args, flag) * factor
            for flag, (field, factor) in BUDGET_FLAGS.items()
            if getattr(args, flag) is not None
        }
    )
    sensitivity: Any = "proxy"
    if args.sensitivity:
        sensitivity = load_sensitivity_table(args.sensitivity)
    elif args.hessian_trace:
        sensitivity = load_hessian_traces(args.hessian_trace)
    elif args.weights:
        importance = load_imatrix(args.imatrix) if args.imatrix else None
        sensitivity = weight_sensitivity(args.weights, parse_formats(args.bits), importance)
    if args.imatrix and not args.weights:
        raise InputError("--imatrix needs --weights (the importances weight the weights' error)")
    result = quantize(
        model,
        platform,
        scenario_from_args(args, model.default_weight_bits),
        args.bits,
        budgets,
        kv_formats=args.kv_bits,
        sensitivity=sensitivity,
        include_embedding=args.quantize_embedding,
        edge_layer_weight=args.edge_layer_weight,
        method=args.method,
        time_limit_s=args.time_limit_s,
        mip_gap=args.mip_gap,
        runtime=runtime,
    )
    if not result.success:
        raise InputError(result.result.message)
    if args.out:
        write_bits_file(result, Path(args.out))
    if args.json:
        classes = [c.to_dict() for c in layer_classes(result)]
        print_json({**result.to_dict(), "interchangeable_layers": classes})
    else:
        print_result(result, args)


def write_bits_file(result: QuantizationResult, path: Path) -> None:
    """Write ``result.precision`` in the `genz.bits_file` format (YAML or JSON by suffix)."""
    assert result.precision is not None
    document = precision_to_dict(result.precision)
    if path.suffix.lower() == ".json":
        text = json.dumps(document, indent=2) + "\n"
    else:
        text = yaml.safe_dump(document, sort_keys=False)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot write {path}: {error.strerror}") from None


def _show(quantity: str, value: float) -> str:
    if quantity.endswith("_bytes"):
        return human_bytes(value)
    if quantity.endswith("_s"):
        return human_seconds(value)
    return f"{value / 1e9:.4g} GBOP"


def print_result(result: QuantizationResult, args: argparse.Namespace) -> None:
    """Summary, totals against budgets, and the allocation with layers of equal formats merged."""
    solved = result.result
    gap = (
        "" if solved.gap is None else f"; LP-relaxation gap {solved.gap:.2%} (bounds the true gap)"
    )
    print_key_values(
        [
            ("model / platform", f"{result.model} on {result.platform}"),
            ("status", f"{solved.status} ({solved.method}) in {result.solve_time_s:.3g} s{gap}"),
            ("objective", f"{result.objective:.6g} (total sensitivity; lower is better)"),
            ("KV cache", result.kv_format.name),
            ("runtime", f"{result.runtime} (latency costs and the prediction below)"),
        ]
    )
    limits = {b.quantity: b for b in solved.budgets}
    totals = [
        {
            "quantity": quantity,
            "total": _show(quantity, solved.totals[quantity]),
            "limit": _show(quantity, limits[quantity].limit) if quantity in limits else "-",
            "binding": "yes" if quantity in solved.binding else "",
        }
        for quantity, *_ in BUDGET_FIELDS.values()
    ]
    print("\nper-device totals (GB decimal):")
    print_table(totals)
    classes = layer_classes(result)
    if all(len(c.layers) == 1 for c in classes):
        print("\nallocation (consecutive layers with identical formats merged):")
        print_table(allocation_table(result))
    else:
        print(
            "\nallocation, as counts per class of interchangeable layers (same sensitivity and "
            "costs in every group):"
        )
        print_table(class_table(classes))
        print(
            "which layers of a class got which format is a tie-break (the bits file records "
            "one); per-layer choices need per-layer sensitivities: --weights model.safetensors"
            "|model.gguf [--imatrix] or a per-layer --sensitivity table"
        )
    model_level = [row for row in result.rows() if row["layer"] is None]
    print("model-level: " + ", ".join(f"{row['group']} {row['format']}" for row in model_level))
    prediction = result.prediction
    assert prediction is not None
    print(
        f"\ngenz predict of this allocation: TTFT {human_seconds(prediction.ttft_s)}, "
        f"TPOT {human_seconds(prediction.tpot_s)}, "
        f"memory {human_bytes(prediction.footprint.total_bytes)} (decimal)"
    )
    if args.out:
        print(
            f"wrote {args.out}; check: codesign predict --model {args.model} --hw {args.hw} "
            f"--bits-file {args.out} --runtime {args.runtime or 'ideal'}"
        )


def class_table(classes: Sequence[LayerClass]) -> list[dict[str, str]]:
    """One row per class: its layers, their number and, per group, ``'24 int8, 8 int4'``."""
    groups = list(dict.fromkeys(g for c in classes for g in c.counts))
    return [
        {
            "layers": c.label,
            "count": str(len(c.layers)),
            **{
                g: ", ".join(
                    f"{n} {name}"
                    for name, n in sorted(c.counts.get(g, {}).items(), key=lambda kv: -kv[1])
                )
                or "-"
                for g in groups
            },
        }
        for c in classes
    ]


def allocation_table(result: QuantizationResult) -> list[dict[str, str]]:
    """One row per run of consecutive layers with the same formats (per-layer units)."""
    per_layer: dict[int, dict[str, str]] = {}
    for row in result.rows():
        if row["layer"] is not None:
            per_layer.setdefault(row["layer"], {})[row["group"]] = row["format"]
    groups = list(dict.fromkeys(g for formats in per_layer.values() for g in formats))
    rows: list[dict[str, str]] = []
    start: int | None = None
    previous: int | None = None
    for layer in sorted(per_layer):
        if (
            previous is not None
            and per_layer[layer] == per_layer[previous]
            and layer == previous + 1
        ):
            previous = layer
            continue
        if start is not None and previous is not None:
            rows.append(_layer_row(start, previous, per_layer[start], groups))
        start = previous = layer
    if start is not None and previous is not None:
        rows.append(_layer_row(start, previous, per_layer[start], groups))
    return rows


def _layer_row(start: int, end: int, formats: dict[str, str], groups: list[str]) -> dict[str, str]:
    label = str(start) if start == end else f"{start}-{end}"
    return {"layers": label, **{g: formats.get(g, "-") for g in groups}}
