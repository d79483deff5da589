"""``codesign predict --scenarios runs.csv``: one prediction per row, CSV or JSON."""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any

from calibration import load_scenarios, output_columns, predict_scenarios, source_summary
from genz import load_runtime
from roofline import InputError

from ..formatting import print_json


def add_scenarios_argument(parser: argparse.ArgumentParser) -> None:
    """``--scenarios FILE`` (the other scenario options are then ignored)."""
    parser.add_argument(
        "--scenarios",
        help="CSV of scenarios (model, hw, runtime, batch, input_tokens, output_tokens, tp, "
        "pp, ep, prefill_chunk, weight_bits, activation_bits, kv_bits, parallel_samples, "
        "beam_width, images, weight_offload, kv_offload, sliding_window, attention_layers, "
        "lora_rank, lora_adapters, lora_targets (qkv+o); "
        "or a measurement file "
        "of codesign calibrate, whose measured times and rates are scored): one prediction per row in "
        "row order, as CSV (or --json); bad rows reported by line; --runtime replaces every "
        "row's runtime",
    )


def run_scenarios(args: argparse.Namespace) -> int:
    """Predict every row; bad rows get an ``error`` and a line on stderr.

    Returns the exit code: 0 when every row was predicted, 1 when some failed (the
    count is the last line on stderr), 2 when all did (or the file has no row).
    """
    if args.runtime:  # a bad flag is the command's error, not every row's
        load_runtime(args.runtime)
    rows, errors, header = load_scenarios(args.scenarios, runtime=args.runtime)
    if not rows and not errors:
        raise InputError(f"{args.scenarios}: no rows after the header; nothing to predict")
    results: list[dict[str, Any]] = predict_scenarios(rows)
    results += [{"line": line, "error": reason} for line, reason in errors.items()]
    results.sort(key=lambda result: result["line"])
    for result in results:
        if "error" in result:
            print(
                f"codesign: {args.scenarios}:{result['line']}: {result['error']}", file=sys.stderr
            )
    _source_table(args, results)
    if args.json:
        print_json(results)
    else:
        columns = output_columns(header)
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(
            ["" if (value := result.get(key)) is None else value for key in columns]
            for result in results
        )
    return batch_exit_code(args.scenarios, len(results), failed=sum("error" in r for r in results))


def _source_table(args: argparse.Namespace, results: list[dict[str, Any]]) -> None:
    """For a measurement file: the per-source error of the rows' runtimes beside physics
    alone (`calibration.source_summary`), on stderr (stdout stays the rows' CSV or
    JSON); nothing when no row is scored."""
    if not any(key.endswith("_error_pct") for result in results for key in result):
        return
    rows, errors, _ = load_scenarios(args.scenarios, runtime="ideal")
    ideal = predict_scenarios(rows)
    ideal += [{"line": line, "error": reason} for line, reason in errors.items()]
    ideal.sort(key=lambda result: result["line"])
    table = source_summary(results, ideal)
    print("per source: the rows' runtime beside physics alone (ideal), error %", file=sys.stderr)
    for entry in table:
        print(
            f"  {entry['source'][:48]:48s} {entry['metric']:11s} {entry['rows']:5d} rows  "
            f"runtime {entry['mape_pct']:6.1f} (bias {entry['bias_pct']:+6.1f})  "
            f"ideal {entry['ideal_mape_pct']:6.1f} (bias {entry['ideal_bias_pct']:+6.1f})",
            file=sys.stderr,
        )


def batch_exit_code(source: str, total: int, failed: int) -> int:
    """0 when no row failed; else a last stderr line with the count and 1 (some) or 2 (all)."""
    if not failed:
        return 0
    every = failed == total
    what = f"all {total} rows failed" if every else f"{failed} of {total} rows failed"
    print(f"codesign: error: {source}: {what}; see the lines above", file=sys.stderr)
    return 2 if every else 1
