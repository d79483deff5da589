"""Serving simulator against published serving measurements (data/validation/serving/).

For every row of ``trtllm_h200_max_throughput.csv`` (TensorRT-LLM's H200 launch
table: one static batch per row) the simulator runs the stated batch of requests, all
arriving at time 0, with the ``static`` policy on the stated model, platform, TP and
bits, and prints measured and simulated output tokens/s with the signed error, twice:
with the physics presets alone (``ideal``) and with the shipped ``tensorrt-llm``
runtime profile (calibrated by ``codesign calibrate`` on LLM-Inference-Bench rows, none
of which is in this table), and whether the issue's target (throughput within 15 %) is
met.

Run: ``python benchmarks/serving_validate.py``.
"""

from __future__ import annotations

import csv

import numpy as np

from genz import Parallelism, Precision, RuntimeProfile, load_model, load_runtime
from roofline import data_dir, load_platform
from search.serving import SchedulerConfig, Workload, build_replica, run

ROWS = data_dir() / "validation" / "serving" / "trtllm_h200_max_throughput.csv"
THROUGHPUT_TARGET = 0.15


def simulated(row: dict[str, str], runtime: RuntimeProfile | None) -> tuple[float, bool]:
    """Output tokens/s of the row's batch, and whether the KV cache split the batch."""
    batch = int(row["batch"])
    n_in, n_out = int(row["input_tokens"]), int(row["output_tokens"])
    workload = Workload(
        np.zeros(batch),
        np.full(batch, n_in, np.int64),
        np.full(batch, n_out, np.int64),
        np.zeros(batch, np.int64),
        row["source"],
    )
    replica = build_replica(
        load_model(row["model"]),
        load_platform(row["hardware"]),
        workload,
        precision=Precision(
            weight_bits=float(row["weight_bits"]),
            activation_bits=float(row["activation_bits"]),
            kv_bits=float(row["kv_bits"]),
        ),
        parallelism=Parallelism(tp=int(row["tp"])),
        config=SchedulerConfig(policy="static", max_sequences=batch),
        runtime=runtime,
    )
    result = run(workload, replica)
    return result.summary["throughput_tokens_per_s"], result.summary["steps"] > n_out


def main() -> None:
    with ROWS.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    profiles = {"ideal": None, "tensorrt-llm": load_runtime("tensorrt-llm")}
    print(f"{len(rows)} rows from {ROWS.name} (static batches, all requests at t = 0)")
    print(
        f"{'model':<12} {'tp':>2} {'batch':>5} {'in/out':>9} {'measured':>9}"
        + "".join(f" {name:>13} {'error':>7}" for name in profiles)
    )
    errors: dict[str, list[float]] = {name: [] for name in profiles}
    for row in rows:
        measured = float(row["measured_output_tokens_per_s"])
        line = (
            f"{row['model']:<12} {row['tp']:>2} {row['batch']:>5} "
            f"{row['input_tokens']:>4}/{row['output_tokens']:<4} {measured:>9.0f}"
        )
        split = False
        for name, profile in profiles.items():
            value, split = simulated(row, profile)
            errors[name].append(value / measured - 1)
            line += f" {value:>13.0f} {errors[name][-1]:>+7.1%}"
        print(line + ("  (KV cache split the batch)" if split else ""))
    for name, values in errors.items():
        absolute = np.abs(values)
        print(
            f"{name}: throughput mean |error| {absolute.mean():.1%}, worst {absolute.max():.1%}; "
            f"{int(np.sum(absolute <= THROUGHPUT_TARGET))} of {len(values)} rows within the 15 % "
            f"target ({'met' if absolute.max() <= THROUGHPUT_TARGET else 'MISSED'})"
        )
    print("No row with latency percentiles under load: the P50/P99 targets are untested.")


if __name__ == "__main__":
    main()
