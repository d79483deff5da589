"""Out-of-sample accuracy of runtime profiles, beside uncalibrated physics (``ideal``).

For each runtime, its rows of the measurement files (`RUNTIME_DATA`: the same files
and formats the shipped profile is calibrated from) go through
`calibration.calibrate_runtime`: rows faster than the efficiency-1 bound or on a mesh the
model cannot split are excluded (and listed with the reason), and
every kept row gets an out-of-sample prediction (leave one hardware out when the
runtime was measured on two or more hardware, else 5-fold). The same rows are
predicted with the ``ideal`` runtime (platform presets' efficiencies, nothing
fitted). Errors are signed percentages, ``100 (predicted - measured) / measured``,
of batch latency, throughput (generated tokens/s), TTFT, inter-token latency and
decode tokens/s (batch / ITL), each where measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from calibration import (
    Calibration,
    Measurement,
    calibrate_runtime,
    load_formats,
    load_kv_formats,
    load_measurements,
    measured_metrics,
)
from genz import REPLICA_AXES, KVFormat, RuntimeProfile, WeightFormat, evaluate_grid, load_model
from roofline import data_dir, load_platform

BENCH = "data/validation/llm_inference_bench/normalized.csv"
CSV = "data/validation/measurements_normalized.csv"
#: Rows that give the AMD and Intel GPU classes a second measured device (llama.cpp on
#: MI300X, RX 7900 XTX, Arc A770; vLLM on MI300X), scored as their own dataset.
SECOND = "data/validation/device_class_runs.csv"
PUBLISHED = "data/validation/published_runs.csv"
LLAMA_FORMATS = "data/runtime_formats/llama.cpp.yaml"
VLLM_FORMATS = "data/runtime_formats/vllm.yaml"
#: Measurement files and formats file (weight and KV-cache formats) of each shipped
#: profile. ``PUBLISHED`` is not among them: it is the external test set of
#: `external_accuracy`.
RUNTIME_DATA: dict[str, tuple[tuple[str, ...], str | None]] = {
    "vllm": ((BENCH,), VLLM_FORMATS),
    "tensorrt-llm": ((BENCH, CSV), None),
    "llama.cpp": ((BENCH, CSV, SECOND), LLAMA_FORMATS),
    "deepspeed": ((BENCH,), None),
    "deepspeed-mii": ((BENCH,), None),
}
GRID_COLUMNS = REPLICA_AXES
METRICS = ("batch latency", "throughput", "TTFT", "inter-token latency", "decode tokens/s")


def dataset_of(row: Measurement) -> str:
    """Which file a calibration row came from, by its ``source`` prefix."""
    for prefix, name in (
        ("measurements", "measurements.csv"),
        ("device_class_runs", "device_class_runs.csv"),
    ):
        if row.source.startswith(prefix):
            return name
    return "LLM-Inference-Bench"


def calibrate_command(runtime: str) -> str:
    """The command that writes the shipped profile ``data/runtimes/<runtime>.yaml``."""
    files, formats = RUNTIME_DATA[runtime]
    parts = ["codesign calibrate --measurements", *files, "--runtime", runtime]
    if formats:
        parts += ["--formats", formats]
    return " ".join([*parts, "--out", f"data/runtimes/{runtime}.yaml"])


def _path(relative: str) -> str:
    return str(data_dir().parent / relative)


def ideal_times(
    rows: Sequence[Measurement], runtime: RuntimeProfile | None = None
) -> dict[str, np.ndarray]:
    """TTFT, TPOT and batch latency (s) per row: of the ``ideal`` runtime, or of ``runtime``
    (a profile as shipped, nothing refitted) when given."""
    frame = pd.DataFrame([row.__dict__ for row in rows])
    out = {key: np.full(len(rows), np.nan) for key in ("ttft_s", "itl_s", "batch_latency_s")}
    for (model, hw), group in frame.groupby(["model", "hw"], sort=False):
        grid = evaluate_grid(
            load_model(str(model)),
            load_platform(str(hw)),
            runtime=runtime,
            **{name: group[name].to_numpy(float) for name in GRID_COLUMNS},
            prefill_chunk=group.prefill_chunk.fillna(group.input_tokens).to_numpy(float),
        )
        index = group.index.to_numpy()
        out["ttft_s"][index] = grid.ttft_s
        out["itl_s"][index] = grid.tpot_s
        out["batch_latency_s"][index] = grid.e2e_s
    return out


def metric_errors(
    rows: Sequence[Measurement], times: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Signed % error of every metric per row (NaN where the row does not measure it)."""
    batch = np.array([row.batch for row in rows], float)
    out = np.array([row.output_tokens for row in rows], float)
    measured = measured_metrics(rows)  # batch latency from throughput where only that is given
    throughput = np.array(
        [np.nan if r.throughput_tok_s is None else r.throughput_tok_s for r in rows]
    )
    latency, itl = measured["batch_latency_s"], measured["itl_s"]

    def error(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
        return 100 * (predicted - measured) / measured

    return {
        "batch latency": error(times["batch_latency_s"], latency),
        "throughput": error(batch * out / times["batch_latency_s"], throughput),
        "TTFT": error(times["ttft_s"], measured["ttft_s"]),
        "inter-token latency": error(times["itl_s"], itl),
        "decode tokens/s": error(batch / times["itl_s"], batch / itl),
    }


def shipped_rows(runtime: str) -> list[Measurement]:
    """Every row of the files the shipped profile of ``runtime`` is calibrated on."""
    files, _ = RUNTIME_DATA[runtime]
    return [row for path in files for row in load_measurements(_path(path))]


def shipped_formats(
    runtime: str,
) -> tuple[tuple[WeightFormat, ...], dict[str, str], tuple[KVFormat, ...], dict[str, Any]]:
    """Weight formats and KV-cache formats (each with its sources) of the shipped
    profile of ``runtime``'s formats file; empty when it has none."""
    _, formats_file = RUNTIME_DATA[runtime]
    if formats_file is None:
        return (), {}, (), {}
    return (*load_formats(_path(formats_file)), *load_kv_formats(_path(formats_file)))


def calibrate_as_shipped(runtime: str, rows: Sequence[Measurement]) -> Calibration:
    """`calibrate_runtime` of ``rows`` with the shipped profile's formats and command."""
    formats, sources, kv_formats, kv_sources = shipped_formats(runtime)
    return calibrate_runtime(
        rows,
        runtime,
        command=calibrate_command(runtime),
        formats=formats,
        format_sources=sources,
        kv_formats=kv_formats,
        kv_format_sources=kv_sources,
    )


def runtime_frame(runtime: str) -> tuple[pd.DataFrame, list[tuple[Measurement, str]]]:
    """Per kept row and metric: out-of-sample and ideal error; and the excluded rows."""
    result = calibrate_as_shipped(runtime, shipped_rows(runtime))
    kept = list(result.data.rows)
    held_out = metric_errors(kept, result.cv.predicted)
    ideal = metric_errors(kept, ideal_times(kept))
    moe = {name: load_model(name).is_moe for name in {row.model for row in kept}}
    kinds = result.data.kinds
    class_hardware = {
        kind: {hw for hw, k in zip(result.data.hw, kinds, strict=True) if k == kind}
        for kind in set(kinds)
    }
    records = []
    for metric in METRICS:
        for index, row in enumerate(kept):
            if np.isnan(ideal[metric][index]):
                continue
            records.append(
                {
                    "runtime": runtime,
                    "dataset": dataset_of(row),
                    "hw": row.hw,
                    "metric": metric,
                    "moe": moe[row.model],
                    "tp": row.tp,
                    "devices": row.devices,
                    "device_class": kinds[index],
                    # Held out, this row's class still had other measured hardware.
                    "class_seen": len(class_hardware[kinds[index]]) > 1,
                    "method": result.cv.method,
                    "held_out_pct": held_out[metric][index],
                    "ideal_pct": ideal[metric][index],
                    "source": row.source,
                }
            )
    return pd.DataFrame(records), list(result.excluded)


def summary(part: pd.DataFrame) -> dict[str, float]:
    """Count, MAPE, median / p90 absolute error and bias (%) of both predictions."""
    line: dict[str, float] = {"rows": len(part)}
    for label, column in (("out-of-sample", "held_out_pct"), ("ideal", "ideal_pct")):
        errors = part[column].to_numpy(float)
        absolute = np.abs(errors)
        line.update(
            {
                f"{label} MAPE": absolute.mean(),
                f"{label} median": np.median(absolute),
                f"{label} p90": np.quantile(absolute, 0.9),
                f"{label} bias": errors.mean(),
            }
        )
    return line
