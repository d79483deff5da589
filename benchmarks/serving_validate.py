"""Serving simulator against published serving measurements (data/validation/serving/).

For every row of ``trtllm_h200_max_throughput.csv`` (TensorRT-LLM's H200 launch
table: one static batch per row) the simulator runs the stated batch of requests, all
arriving at time 0, with the ``static`` policy on the stated model, platform, TP and
bits, and prints predicted and measured output tokens/s, the signed error and whether
the issue's target (throughput within 15 %) is met. The physics platform presets are
used as they are (their efficiency factors; no runtime profile, nothing fitted).

Run: ``python benchmarks/serving_validate.py``.
"""

from __future__ import annotations

import csv

import numpy as np

from genz import Parallelism, Precision, load_model
from roofline import data_dir, load_platform
from search.serving import SchedulerConfig, Workload, build_replica, run

ROWS = data_dir() / "validation" / "serving" / "trtllm_h200_max_throughput.csv"
THROUGHPUT_TARGET = 0.15


def main() -> None:
    with ROWS.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    print(f"{len(rows)} rows from {ROWS.name} (static batches, all requests at t = 0)")
    header = f"{'model':<12} {'tp':>2} {'batch':>5} {'in/out':>9} {'measured':>9} {'simulated':>9} {'error':>7}  target 15%"
    print(header)
    errors = []
    for row in rows:
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
        )
        result = run(workload, replica)
        simulated = result.summary["throughput_tokens_per_s"]
        measured = float(row["measured_output_tokens_per_s"])
        error = simulated / measured - 1
        errors.append(error)
        batches = "" if result.summary["steps"] <= n_out else " (KV cache split the batch)"
        print(
            f"{row['model']:<12} {row['tp']:>2} {batch:>5} {n_in:>4}/{n_out:<4} {measured:>9.0f} "
            f"{simulated:>9.0f} {error:>+7.1%}  {'met' if abs(error) <= THROUGHPUT_TARGET else 'MISSED'}"
            f"{batches}"
        )
    absolute = np.abs(errors)
    print(
        f"throughput: mean |error| {absolute.mean():.1%}, worst {absolute.max():.1%}; "
        f"{int(np.sum(absolute <= THROUGHPUT_TARGET))} of {len(errors)} rows within 15 %. "
        "No row with latency percentiles under load: P50/P99 targets untested (see the README)."
    )


if __name__ == "__main__":
    main()
