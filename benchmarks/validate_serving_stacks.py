"""Baseline: how far today's physics model is from published serving-stack measurements.

Predicts the batch latency of every LLM-Inference-Bench static-batch run
(``data/validation/llm_inference_bench/normalized.csv``, rows from
``all_results.csv``) with the shipped hardware presets and their efficiency factors
(the ``ideal`` runtime: no serving-stack profile, nothing fitted), after removing
the rows `calibration.physics_check` finds faster than the efficiency-1 bound. Prints,
per runtime x hardware, the count, MAPE, median and 90th-percentile absolute
percentage error and the bias (mean signed error; negative = predicted faster
than measured), with single-device dense rows, multi-device dense rows and MoE
rows as separate groups. Rows whose footprint exceeds the devices' memory are
kept and also reported as their own group (the stack then queues sequences; a
static batch does not describe them).

Run: ``python benchmarks/validate_serving_stacks.py [--out rows.csv]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from error_stats import error_stats

from calibration import Measurement, PhysicsCheck, check_measurements, load_measurements
from genz import REPLICA_AXES, evaluate_grid, load_model
from roofline import data_dir, load_platform

NORMALIZED = data_dir() / "validation" / "llm_inference_bench" / "normalized.csv"


def predicted_latency(rows: list[Measurement]) -> np.ndarray:
    """Batch latency (s) predicted with the shipped presets, one vectorised call per
    (model, hardware)."""
    frame = pd.DataFrame([row.__dict__ for row in rows])
    predicted = np.full(len(rows), np.nan)
    for (model_name, hw), group in frame.groupby(["model", "hw"], sort=False):
        chunk = group.prefill_chunk.fillna(group.input_tokens).to_numpy(float)
        grid = evaluate_grid(
            load_model(str(model_name)),
            load_platform(str(hw)),
            **{name: group[name].to_numpy(float) for name in REPLICA_AXES},
            prefill_chunk=chunk,
        )
        predicted[group.index.to_numpy()] = grid.e2e_s
    return predicted


def results_frame(rows: list[Measurement], check: PhysicsCheck) -> pd.DataFrame:
    """One line per row: measured, predicted, error (%), bound and its verdicts."""
    moe = {name: load_model(name).is_moe for name in {row.model for row in rows}}
    frame = pd.DataFrame(
        {
            "source": [row.source for row in rows],
            "runtime": [row.runtime for row in rows],
            "hw": [row.hw for row in rows],
            "model": [row.model for row in rows],
            "batch": [row.batch for row in rows],
            "tokens": [row.input_tokens for row in rows],
            "devices": [row.devices for row in rows],
            "moe": [moe[row.model] for row in rows],
            "measured_s": [row.batch_latency_s for row in rows],
            "predicted_s": predicted_latency(rows),
            "bound_s": [verdict.bound_s for verdict in check.rows],
            "impossible": [verdict.impossible for verdict in check.rows],
            "beats_uniform_routing": [verdict.beats_uniform_routing for verdict in check.rows],
            "over_capacity": [verdict.fits is False for verdict in check.rows],
        }
    )
    frame["error_pct"] = 100 * (frame.predicted_s - frame.measured_s) / frame.measured_s
    frame["kind"] = np.where(
        frame.moe, "MoE", np.where(frame.devices > 1, "dense, >1 device", "dense, 1 device")
    )
    return frame


def summary_line(kind: str, runtime: str, hw: str, part: pd.DataFrame) -> dict[str, object]:
    """Count, MAPE, median / p90 absolute error and bias of a group, percent."""
    return {
        "rows of": kind,
        "runtime": runtime,
        "hardware": hw,
        "count": len(part),
        **error_stats(part.error_pct),
    }


def summarise(scored: pd.DataFrame) -> pd.DataFrame:
    """Per runtime x hardware within each kind, then per kind, per runtime and overall."""
    lines = []
    for kind in ("dense, 1 device", "dense, >1 device", "MoE"):
        for (runtime, hw), part in scored[scored.kind == kind].groupby(["runtime", "hw"]):
            lines.append(summary_line(kind, str(runtime), str(hw), part))
    for kind, part in scored.groupby("kind"):
        lines.append(summary_line(str(kind), "all", "all", part))
    for runtime, part in scored.groupby("runtime"):
        lines.append(summary_line("all", str(runtime), "all", part))
    lines.append(summary_line("over capacity", "all", "all", scored[scored.over_capacity]))
    lines.append(summary_line("all", "all", "all", scored))
    return pd.DataFrame(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=NORMALIZED)
    parser.add_argument("--out", type=Path, default=None, help="CSV of every row")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    published = [
        row for row in load_measurements(args.data) if row.source.startswith("all_results")
    ]
    first = check_measurements(published)
    unevaluated = [
        (row, v.reason) for row, v in zip(published, first.rows, strict=True) if v.bound_s is None
    ]
    for reason in sorted({reason for _, reason in unevaluated}):
        count = sum(1 for _, r in unevaluated if r == reason)
        print(f"{count} rows not evaluated: {reason}")
    rows = [row for row, v in zip(published, first.rows, strict=True) if v.bound_s is not None]
    check = check_measurements(rows)
    frame = results_frame(rows, check)
    impossible = frame[frame.impossible]
    scored = frame[~frame.impossible]
    print(
        f"{len(rows)} static-batch rows of all_results.csv with a model and hardware preset; "
        f"{len(impossible)} faster than the efficiency-1 bound, excluded:"
    )
    for _, row in impossible.iterrows():
        print(
            f"  {row.source:22s} {row.runtime:13s} {row.hw:14s} {row.model:12s} batch {row.batch:3d} "
            f"L {row.tokens:4d} devices {row.devices}: {row.measured_s:.3g} s < bound {row.bound_s:.3g} s"
        )
    print(
        f"{int(frame.beats_uniform_routing.sum())} MoE rows beat the uniform-routing bound "
        f"(kept: possible with a skewed router); {int(scored.over_capacity.sum())} scored rows "
        "exceed device memory as a static batch (kept, and reported as a group)."
    )
    print(
        "\nBatch latency, runtime 'ideal' (shipped presets and efficiencies, nothing fitted); "
        "absolute percentage errors; bias < 0 = predicted faster than measured:"
    )
    table = summarise(scored)
    pd.set_option("display.width", 200)
    print(
        table.to_string(
            index=False,
            justify="left",
            formatters={
                column: (lambda text: f"{text:<17s}")
                if column != "count"
                else (lambda count: f"{count:5d}")
                for column in ("rows of", "runtime", "hardware", "count")
            },
            float_format=lambda value: f"{value:6.1f}",
        )
    )
    if args.out is not None:
        frame.to_csv(args.out, index=False)
        print(f"\nwrote {args.out}")
    print(f"\n{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
