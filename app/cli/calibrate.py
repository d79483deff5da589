"""``codesign calibrate``: fit a runtime profile to measured runs and write it as YAML."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from calibration import (
    MEASUREMENT_RUNTIMES,
    Calibration,
    calibrate_runtime,
    held_out_rows,
    load_formats,
    load_kv_formats,
    load_tagged_measurements,
    write_held_out,
    write_profile,
)
from roofline import InputError, list_platforms, unknown_name

from ..formatting import print_json, print_table
from .commands import add_command

METRIC_LABELS = {
    "batch_latency_s": "batch latency",
    "ttft_s": "TTFT",
    "itl_s": "inter-token latency",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``calibrate``."""
    parser = add_command(subparsers, "calibrate")
    parser.add_argument(
        "--measurements",
        required=True,
        nargs="+",
        help="CSV file(s), calibration.measurements schema",
    )
    parser.add_argument(
        "--runtime", required=True, help="runtime whose rows are fitted (vllm, ...)"
    )
    parser.add_argument(
        "--hw", help="comma-separated hardware presets to use (default: every row's)"
    )
    parser.add_argument(
        "--formats",
        help="YAML of the runtime's weight formats (stored bits) and/or KV-cache formats",
    )
    parser.add_argument(
        "--inherit",
        help="comma-separated efficiencies not to fit (compute_efficiency, memory_efficiency): "
        "each platform preset's own value applies, for rows that cannot identify them "
        "(e.g. decode-only rows say nothing about compute)",
    )
    parser.add_argument("--description", default="", help="one line stored in the profile")
    parser.add_argument("--out", required=True, help="profile to write (.yaml)")
    parser.add_argument(
        "--per-hardware",
        action="store_true",
        help="also print the out-of-sample batch-latency error per hardware (the "
        "dashboard's Accuracy table)",
    )
    parser.add_argument(
        "--held-out",
        metavar="FILE",
        help="also write every scored row's measured and out-of-sample predicted batch "
        "latency (s) as CSV (the dashboard's Accuracy scatter; data/runtimes/held_out/)",
    )
    parser.add_argument(
        "--json", action="store_true", help="the fit's summary as JSON (the profile is written too)"
    )
    parser.set_defaults(func=run_calibrate)


def command_line(args: argparse.Namespace) -> str:
    """The canonical command that reproduces this calibration (stored in the profile)."""
    parts = ["codesign", "calibrate", "--measurements", *args.measurements]
    parts += ["--runtime", args.runtime]
    for flag, value in (
        ("--hw", args.hw),
        ("--formats", args.formats),
        ("--inherit", args.inherit),
    ):
        if value:
            parts += [flag, value]
    if args.description:
        parts += ["--description", args.description]
    return shlex.join([*parts, "--out", args.out])


def _summary(label: str, errors: np.ndarray) -> dict[str, object]:
    absolute = np.abs(errors)
    return {
        "error of": label,
        "rows": errors.size,
        "MAPE %": round(float(absolute.mean()), 1),
        "median %": round(float(np.median(absolute)), 1),
        "p90 %": round(float(np.quantile(absolute, 0.9)), 1),
        "bias %": round(float(errors.mean()), 1),
    }


def print_per_hardware(result: Calibration) -> None:
    """Out-of-sample batch-latency error per hardware (rows scored as the dashboard's
    Accuracy page scores them: measured and predicted both finite)."""
    measured = result.data.measured["batch_latency_s"]
    predicted = result.cv.predicted["batch_latency_s"]
    scored = np.isfinite(measured) & np.isfinite(predicted)
    errors = 100 * (predicted[scored] - measured[scored]) / measured[scored]
    hardware = np.array(result.data.hw)[scored]
    print(f"\nout-of-sample batch-latency error per hardware, % ({result.cv.method}):")
    print_table(
        [
            {"hardware": name, **_summary(name, errors[hardware == name])}
            for name in sorted(set(hardware.tolist()))
        ]
    )


def run_calibrate(args: argparse.Namespace) -> int:
    """Fit, report and write the profile; the exit code.

    0 when every row of the runtime was fitted; 1 when some were excluded (the profile is
    fitted on the rest and written; the last stderr line counts the excluded rows by
    reason); a bad input, or every row excluded, is an `InputError` (exit 2).
    """
    if args.runtime not in MEASUREMENT_RUNTIMES:
        raise unknown_name("runtime", args.runtime, MEASUREMENT_RUNTIMES)
    formats, sources = load_formats(args.formats) if args.formats else ((), {})
    kv_formats, kv_sources = load_kv_formats(args.formats) if args.formats else ((), {})
    hardware = tuple(name.strip() for name in args.hw.split(",")) if args.hw else ()
    for name in hardware:  # an unknown preset is named, not reported as "no rows"
        if name not in list_platforms():
            raise unknown_name("hardware", name, list_platforms())
    inherit = tuple(name.strip() for name in args.inherit.split(",")) if args.inherit else ()
    rows = [row for path in args.measurements for row in load_tagged_measurements(path)]
    if not rows:  # header-only files: say so, not "no row of runtime X (file has: )"
        raise InputError(
            f"{', '.join(args.measurements)}: no rows after the header; nothing to fit"
        )
    result = calibrate_runtime(
        rows,
        args.runtime,
        hardware=hardware,
        command=command_line(args),
        formats=formats,
        format_sources=sources,
        description=args.description,
        inherit=inherit,
        kv_formats=kv_formats,
        kv_format_sources=kv_sources,
    )
    held_out = (
        write_held_out(held_out_rows(result, args.runtime), args.held_out)
        if getattr(args, "held_out", None)
        else None
    )
    if args.json:
        path = write_profile(result.document, args.out)
        print_json(_json_summary(args, result, str(path)))
        return _excluded_exit_code(result, path)
    print(
        f"{result.fit.default.rows} rows of {args.runtime} on {', '.join(sorted(set(result.data.hw)))}; "
        f"{len(result.excluded)} excluded (a mesh the model cannot split, or faster than the "
        "efficiency-1 bound):"
    )
    for row, reason in result.excluded:
        print(
            f"  {row.source}: {row.model} batch {row.batch} in {row.input_tokens} out "
            f"{row.output_tokens} on {row.devices} x {row.hw}: {reason}"
        )
    fits = {"default (all rows)": result.fit.default, **result.fit.classes}
    for label, fit in fits.items():
        for name in fit.inherited:
            print(f"{label}: {name} not fitted (--inherit): each platform preset's own value")
        for name, reason in fit.capped.items():
            print(f"{label}: {name} not fitted: {reason}")
        for name in fit.held:
            if name not in fit.capped:
                print(f"{label}: {name} held at the default's value (its rows cannot identify it)")
        for name, reason in fit.unused.items():
            print(f"{label}: {name} not fitted ({reason}; the physics' own model is kept)")
        for name, reason in fit.refused.items():
            print(f"{label}: {name} not fitted, left at its neutral value: {reason}")
        print(
            f"\nfitted, {label}: {fit.rows} rows ({fit.message.rstrip('.')}; "
            f"Jacobian condition {fit.condition:.3g}):"
        )
        print_table(
            [
                {
                    "parameter": name,
                    "value": f"{value:.4g}",
                    "95% interval": _interval_text(fit.intervals, fit.capped, name),
                }
                for name, value in fit.values.items()
            ]
        )
    for kind, reason in result.fit.skipped.items():
        print(f"device class {kind}: default values kept ({reason})")
    print("\nerror, % (bias < 0: predicted faster than measured):")
    lines = []
    for metric, label in METRIC_LABELS.items():
        for out_of_sample in (False, True):
            errors = result.errors_pct(out_of_sample, metric)
            if errors.size:
                kind = f"out-of-sample ({result.cv.method})" if out_of_sample else "in-sample"
                lines.append(_summary(f"{label}, {kind}", errors))
    print_table(lines)
    if getattr(args, "per_hardware", False):
        print_per_hardware(result)
    path = write_profile(result.document, args.out)
    print(f"\nwrote {path}")
    if held_out is not None:
        print(f"wrote {held_out}")
    return _excluded_exit_code(result, path)


def _excluded_exit_code(result: Calibration, path: object) -> int:
    """0 when no row was excluded; else 1 after one stderr line counting the excluded
    rows by reason (the convention of ``predict --scenarios``: 1 when some rows fail)."""
    if not result.excluded:
        return 0
    total = len(result.excluded) + result.fit.default.rows
    kinds = ", ".join(f"{count} {kind}" for kind, count in result.excluded_by_kind().items())
    print(
        f"codesign: error: {len(result.excluded)} of {total} rows excluded ({kinds}); "
        f"the profile, fitted on the other {result.fit.default.rows}, is written to {path}",
        file=sys.stderr,
    )
    return 1


def _json_summary(args: argparse.Namespace, result: Any, path: str) -> dict[str, Any]:
    """What the text report says, as data: rows, exclusions, fitted values and errors."""
    fits = {"default (all rows)": result.fit.default, **result.fit.classes}
    errors = []
    for metric, label in METRIC_LABELS.items():
        for out_of_sample in (False, True):
            values = result.errors_pct(out_of_sample, metric)
            if values.size:
                kind = f"out-of-sample ({result.cv.method})" if out_of_sample else "in-sample"
                errors.append(_summary(f"{label}, {kind}", values))
    return {
        "runtime": args.runtime,
        "rows": result.fit.default.rows,
        "hardware": sorted(set(result.data.hw)),
        "excluded": [{"source": row.source, "reason": reason} for row, reason in result.excluded],
        "excluded_by_kind": result.excluded_by_kind(),
        "fits": {
            label: {
                "rows": fit.rows,
                "message": fit.message,
                "jacobian_condition": float(fit.condition),
                "values": {name: float(value) for name, value in fit.values.items()},
                "intervals_95": {
                    name: [float(low), float(high)] for name, (low, high) in fit.intervals.items()
                },
                "not_fitted": {
                    **{name: "inherited" for name in fit.inherited},
                    **{name: "held" for name in fit.held},
                    **dict(fit.capped),
                    **dict(fit.unused),
                    **dict(fit.refused),
                },
            }
            for label, fit in fits.items()
        },
        "device_classes_skipped": dict(result.fit.skipped),
        "errors_pct": errors,
        "profile": path,
    }


def _interval_text(
    intervals: Mapping[str, tuple[float, float]], capped: Mapping[str, str], name: str
) -> str:
    """A fitted value's 95 % interval, or why it has none (held, not fitted)."""
    if name in intervals:
        low, high = intervals[name]
        return f"{low:.4g} - {high:.4g}"
    return "none: held at its upper bound" if name in capped else "none: the default's value"
