"""Validate genz predictions against published measurements, out of sample.

For every shipped runtime profile (vLLM, TensorRT-LLM, llama.cpp, DeepSpeed,
DeepSpeed-MII) the rows it is calibrated from (LLM-Inference-Bench
``normalized.csv`` and ``measurements_normalized.csv``, see `serving_accuracy`) are
predicted out of sample (leave one hardware out: calibrated on all other hardware) and, separately, by uncalibrated physics (``ideal``). Prints, per runtime x hardware
x metric and for the MoE and tp > 1 groups, the count, MAPE, median and p90
absolute error and bias of both, then one met / missed line per acceptance target
of issue #12; then energy per token against the power rows (`energy_accuracy`) and the
FP8 / INT8 weight and KV-cache rows beside their 16-bit counterparts (`quant_accuracy`);
then the external rows of ``published_runs.csv``, which no profile is fitted on, predicted
by the shipped profiles (`external_accuracy`). ``--out`` writes every row.

Row mapping of ``measurements.csv`` (used by ``convert_measurements.py``):
- llama.cpp quantisation -> bits per weight: Q4_0 4.5, Q4_K_M 4.85, Q8_0 8.5, F16 16;
  activations and KV cache 16 bits. TensorRT-LLM FP8 -> weights, activations and KV
  cache 8 bits; FP16 -> 16.
- llama-bench ``tgN`` (input 0, output N): an empty prompt generating N tokens
  (input 1). ``ppN`` (input N, output 0): prefill of N tokens, tokens/s = N / TTFT.
- Rows with blank token counts ("short prompt, up to 1024 generated"): decode is
  predicted at input 64 / output 512 (decode time is nearly flat at short context);
  prefill rows with an unstated prompt length are skipped (prefill tokens/s depends
  on the prompt length the source does not give).
- "2x GPU ... layer split" rows: pipeline parallel pp=2 over PCIe.
- Rows with continuous batching over thousands of requests are skipped (a static
  batch model cannot express them).

Run: ``python benchmarks/validate.py [--out validation_rows.csv]``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd
from energy_accuracy import energy_frame, print_energy
from external_accuracy import external_frame, print_external
from quant_accuracy import print_quant, quant_frame
from serving_accuracy import BENCH, RUNTIME_DATA, runtime_frame, summary

from calibration import load_measurements
from genz import Parallelism, Precision, Prediction, Scenario
from roofline import data_dir, load_platform

HARDWARE = {
    "RTX 3070 8GB": "rtx-3070",
    "RTX 3080 10GB": "rtx-3080",
    "RTX 4070 Ti 12GB": "rtx-4070-ti",
    "RTX 3090 24GB": "rtx-3090",
    "RTX 4090 24GB": "rtx-4090",
    "2x RTX 4090 24GB": "rtx-4090",
    "2x RTX 3090 24GB": "rtx-3090",
    "A100 80GB": "a100-sxm-80gb",
    "H100 PCIe 80GB": "h100-pcie",
    "H100 SXM 80GB": "h100-sxm",
    "RTX 6000 Ada 48GB": "rtx-6000-ada",
    "Apple M1 7-core GPU 8GB": "apple-m1-7c",
    "Apple M1 7-core GPU (68 GB/s)": "apple-m1-7c",
    "Apple M1 8-core GPU (68 GB/s)": "apple-m1-8c",
    "Apple M1 Max 24-core GPU 32GB": "apple-m1-max-24c",
    "Apple M1 Max 32GB": "apple-m1-max-24c",
    "Apple M1 Max 32-core GPU 64GB": "apple-m1-max-32c",
    "Apple M1 Max 32-core GPU 64GB (400 GB/s)": "apple-m1-max-32c",
    "Apple M1 Max 64GB": "apple-m1-max-32c",
    "Apple M2 Pro 19-core GPU 32GB (Mac mini)": "apple-m2-pro-19c",
    "Apple M2 Max 30-core 64GB": "apple-m2-max-30c",
    "Apple M2 Ultra 76-core GPU 192GB": "apple-m2-ultra",
    "Apple M3 10-core GPU 16GB": "apple-m3-10c",
    "Apple M4 10-core GPU 16GB (Mac mini)": "apple-m4-10c",
}
MODELS = {
    "Llama-3-8B": "llama-3-8b",
    "Llama-3-70B": "llama-3-70b",
    "Llama-3.1-8B": "llama-3.1-8b",
    "Llama-2-7B": "llama-2-7b",
    "Llama-2-70B": "llama-2-70b",
    "LLaMA-7B (v2)": "llama-2-7b",
    "LLaMA-7B": "llama-7b",
}
QUANT_BITS = {
    "Q4_0": (4.5, 16, 16),
    "Q4_K_M": (4.85, 16, 16),
    "Q8_0": (8.5, 16, 16),
    "F16": (16, 16, 16),
    "FP16": (16, 16, 16),
    "FP8": (8, 8, 8),
}
PHASE_OF_METRIC = {
    "decode_tokens_per_s": "decode",
    "tpot_ms": "decode",
    "prefill_tokens_per_s": "prefill",
    "ttft_ms": "prefill",
    "throughput_tokens_per_s": "throughput",
}


def _count(value: object) -> int | None:
    if (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or str(value).strip() == ""
    ):
        return None
    return int(float(value))


def express(row: pd.Series) -> tuple[Scenario | None, str]:
    """The scenario a measurement row describes, or None and the reason it cannot."""
    if row.hardware not in HARDWARE:
        return None, f"no preset for hardware {row.hardware!r}"
    if row.model not in MODELS:
        return None, f"no preset for model {row.model!r}"
    if row.precision_quant not in QUANT_BITS:
        return None, f"unknown quantisation {row.precision_quant!r}"
    batch = _count(row.batch) if str(row.batch).strip().isdigit() else None
    if batch is None:
        return None, "continuous batching over many requests (not a static batch)"
    weight_bits, activation_bits, kv_bits = QUANT_BITS[row.precision_quant]
    precision = Precision(weight_bits=weight_bits, activation_bits=activation_bits, kv_bits=kv_bits)
    mesh = Parallelism(pp=2) if str(row.hardware).startswith("2x") else Parallelism()
    input_tokens, output_tokens = _count(row.input_tokens), _count(row.output_tokens)
    phase = PHASE_OF_METRIC[row.metric]
    if input_tokens is None or output_tokens is None:
        if phase != "decode":
            return None, "prompt length not stated by the source"
        input_tokens, output_tokens = 64, 512
    input_tokens = max(input_tokens, 1)
    output_tokens = max(output_tokens, 1)
    if phase == "decode" and output_tokens == 1:
        return None, "no decode tokens in the figure"
    return Scenario(batch, input_tokens, output_tokens, precision, mesh), ""


def physical_limit_note(row: pd.Series, scenario: Scenario, prediction: Prediction) -> str:
    """Non-empty when the measurement beats the platform's spec-sheet roofline.

    Decode: implied bandwidth = (bytes one decode step must move) x measured steps/s;
    prefill: implied FLOP/s = prefill FLOP x measured prefills/s. A row above the
    spec (efficiency 1) cannot be matched by any roofline model and most likely
    names other hardware or another model than its columns say.
    """
    platform = load_platform(HARDWARE[row.hardware])
    measured = float(row.value)
    devices = scenario.parallelism.devices
    if row.metric in ("decode_tokens_per_s", "tpot_ms"):
        steps_per_s = measured if row.metric == "decode_tokens_per_s" else 1e3 / measured
        implied = prediction.decode.bytes * steps_per_s
        limit = platform.main_memory.bandwidth_bytes_per_s * devices
        if implied > limit:
            return f"implied {implied / 1e9:.0f} GB/s > spec {limit / 1e9:.0f} GB/s"
    if row.metric == "prefill_tokens_per_s":
        implied = prediction.prefill.flop * measured / (scenario.batch * scenario.input_tokens)
        limit = max(platform.peak_flops_per_s.values()) * devices
        if implied > limit:
            return f"implied {implied / 1e12:.0f} TFLOP/s > spec {limit / 1e12:.0f} TFLOP/s"
    return ""


def predicted_value(row: pd.Series, prediction: Prediction, scenario: Scenario) -> float:
    """The row's metric from a prediction, in the row's unit."""
    return {
        "decode_tokens_per_s": 1.0 / prediction.tpot_s,
        "tpot_ms": prediction.tpot_s * 1e3,
        "prefill_tokens_per_s": scenario.batch * scenario.input_tokens / prediction.ttft_s,
        "ttft_ms": prediction.ttft_s * 1e3,
        "throughput_tokens_per_s": prediction.throughput_tokens_per_s,
    }[row.metric]


#: Issue #12 acceptance: (label, row filter, target MAPE %, target |bias| % or None).
TARGETS = (
    (
        "LLM-Inference-Bench vLLM + TensorRT-LLM batch latency, leave-one-hardware-out",
        lambda f: (
            (f.dataset == "LLM-Inference-Bench")
            & f.runtime.isin(["vllm", "tensorrt-llm"])
            & (f.metric == "batch latency")
        ),
        15.0,
        5.0,
    ),
    (
        "LLM-Inference-Bench llama.cpp batch latency, leave-one-hardware-out",
        lambda f: (
            (f.dataset == "LLM-Inference-Bench")
            & (f.runtime == "llama.cpp")
            & (f.metric == "batch latency")
        ),
        20.0,
        None,
    ),
    (
        "measurements.csv decode (inter-token latency), leave-one-hardware-out",
        lambda f: (f.dataset == "measurements.csv") & (f.metric == "inter-token latency"),
        15.0,
        None,
    ),
    (
        "measurements.csv prefill (TTFT), leave-one-hardware-out",
        lambda f: (f.dataset == "measurements.csv") & (f.metric == "TTFT"),
        20.0,
        None,
    ),
    (
        "MoE (Mixtral) batch latency, leave-one-hardware-out runtimes",
        lambda f: f.moe & (f.metric == "batch latency") & (f.method == "leave-one-hardware-out"),
        20.0,
        None,
    ),
    (
        "tp > 1 batch latency, leave-one-hardware-out runtimes",
        lambda f: (
            (f.tp > 1) & (f.metric == "batch latency") & (f.method == "leave-one-hardware-out")
        ),
        20.0,
        None,
    ),
)


def groups(frame: pd.DataFrame) -> pd.DataFrame:
    """Summary lines per runtime x hardware x metric, per runtime x metric, MoE, tp > 1."""
    lines = []
    for (runtime, hw, metric), part in frame.groupby(["runtime", "hw", "metric"]):
        lines.append({"group": f"{runtime} / {hw}", "metric": metric, **summary(part)})
    for (runtime, metric), part in frame.groupby(["runtime", "metric"]):
        lines.append(
            {"group": f"{runtime} / all ({part.method.iloc[0]})", "metric": metric, **summary(part)}
        )
    for label, mask in (("MoE", frame.moe), ("tp > 1", frame.tp > 1)):
        for metric, part in frame[mask].groupby("metric"):
            lines.append({"group": f"{label} / all runtimes", "metric": metric, **summary(part)})
    return pd.DataFrame(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="CSV of every row and metric")
    args = parser.parse_args(argv)
    frames = []
    for runtime in RUNTIME_DATA:
        frame, excluded = runtime_frame(runtime)
        counts = ", ".join(f"{metric} {n}" for metric, n in frame.metric.value_counts().items())
        print(
            f"{runtime} ({frame.method.iloc[0]}): rows scored per metric: {counts}; "
            f"{len(excluded)} rows excluded"
            + "".join(f"\n    {row.source}: {reason}" for row, reason in excluded)
        )
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    table = groups(frame)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    print(
        "\nSigned errors 100 (predicted - measured) / measured, %; out-of-sample = calibrated "
        "without the row's hardware (5-fold where a runtime has one hardware); ideal = "
        "uncalibrated physics:"
    )
    print(table.to_string(index=False, float_format=lambda value: f"{value:6.1f}"))
    print("\nAcceptance (issue #12):")
    for label, select, mape_target, bias_target in TARGETS:
        part = frame[select(frame)]
        line = summary(part)
        mape, bias = line["out-of-sample MAPE"], line["out-of-sample bias"]
        met = mape < mape_target and (bias_target is None or abs(bias) < bias_target)
        wanted = f"MAPE < {mape_target:g}%" + (
            f", |bias| < {bias_target:g}%" if bias_target else ""
        )
        print(
            f"  {'MET   ' if met else 'MISSED'} {label}: {len(part)} rows, MAPE {mape:.1f}%, "
            f"bias {bias:+.1f}% (target {wanted}; ideal MAPE {line['ideal MAPE']:.1f}%)"
        )
        for seen, words in (
            (True, "other hardware of its device class measured"),
            (False, "the only measured hardware of its device class"),
        ):
            share = part[part.class_seen == seen]
            if len(share) and len(share) < len(part):
                detail = summary(share)
                print(
                    f"         of which {len(share)} rows on {words}: MAPE "
                    f"{detail['out-of-sample MAPE']:.1f}%, bias {detail['out-of-sample bias']:+.1f}% "
                    f"({', '.join(sorted(set(share.hw)))})"
                )
    second = frame[frame.dataset == "device_class_runs.csv"]
    if len(second):
        print(
            "  (no target) second measured devices of the AMD and Intel GPU classes "
            "(device_class_runs.csv, calibration input of llama.cpp), leave-one-hardware-out:"
        )
        for (runtime, hw, metric), part in second.groupby(["runtime", "hw", "metric"]):
            if metric in ("TTFT", "inter-token latency"):
                line = summary(part)
                print(
                    f"         {runtime} / {hw} {metric}: {len(part)} rows, MAPE "
                    f"{line['out-of-sample MAPE']:.1f}%, bias {line['out-of-sample bias']:+.1f}% "
                    f"(ideal {line['ideal MAPE']:.1f}%)"
                )
    bench_rows = load_measurements(data_dir().parent / BENCH)
    print_energy(energy_frame(frame, bench_rows))
    print_quant(quant_frame(frame, bench_rows))
    external = external_frame()
    print_external(external)
    if args.out is not None:
        pd.concat([frame, external.assign(dataset=external.file + " (external)")]).to_csv(
            args.out, index=False
        )
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
