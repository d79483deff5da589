"""Validate genz predictions against published measurements (data/validation/).

Predicts every row of measurements.csv that the model can express, with the
platform presets' own efficiency factors (one set per platform, never fitted per
row), and prints per-hardware and overall mean absolute percentage error (MAPE)
and signed bias for decode and prefill separately. Writes every row to a CSV.

Row mapping (documented assumptions):
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

from genz import Parallelism, Precision, Prediction, Scenario, load_model, predict
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


def validate(measurements: pd.DataFrame) -> pd.DataFrame:
    """One output row per measurement: prediction, error (%) or the reason skipped."""
    rows = []
    for _, row in measurements.iterrows():
        scenario, reason = express(row)
        record = {
            "hardware": row.hardware,
            "preset": HARDWARE.get(row.hardware, ""),
            "model": row.model,
            "quant": row.precision_quant,
            "batch": row.batch,
            "input_tokens": row.input_tokens,
            "output_tokens": row.output_tokens,
            "metric": row.metric,
            "phase": PHASE_OF_METRIC[row.metric],
            "measured": float(row.value),
            "predicted": float("nan"),
            "error_pct": float("nan"),
            "skipped": reason,
            "beats_spec": "",
            "source": row.source,
        }
        if scenario is not None:
            model = load_model(MODELS[row.model])
            prediction = predict(model, load_platform(HARDWARE[row.hardware]), scenario)
            predicted = predicted_value(row, prediction, scenario)
            record["beats_spec"] = physical_limit_note(row, scenario, prediction)
            record["predicted"] = predicted
            # Signed error of the prediction in the row's own unit: +10 means 10% high.
            record["error_pct"] = 100.0 * (predicted - float(row.value)) / float(row.value)
        rows.append(record)
    return pd.DataFrame(rows)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """MAPE and signed bias per phase and hardware, plus an overall row per phase.

    Errors are compared as rates: a time metric (TTFT, TPOT) is inverted first so
    that +x% always means the prediction is x% faster than measured.
    """
    used = results.dropna(subset=["error_pct"]).copy()
    time_metric = used.metric.isin(["ttft_ms", "tpot_ms"])
    ratio = used.predicted / used.measured
    used["rate_error_pct"] = 100.0 * ((1.0 / ratio).where(time_metric, ratio) - 1.0)
    used["abs_error_pct"] = used.rate_error_pct.abs()
    used["weights"] = used.quant.map(
        lambda q: "16/8-bit float" if q in ("F16", "FP16", "FP8") else "llama.cpp quantised"
    )
    used["stack"] = used.source.map(
        lambda s: "TensorRT-LLM" if "TensorRT" in s or "trtllm" in s else "llama.cpp"
    )
    groups = [
        _row(phase, preset, part) for (phase, preset), part in used.groupby(["phase", "preset"])
    ]
    for column in ("weights", "stack"):
        for (phase, label), part in used.groupby(["phase", column]):
            groups.append(_row(phase, f"by {column}: {label}", part))
    for phase, part in used.groupby("phase"):
        groups.append(_row(phase, "OVERALL (all rows)", part))
        groups.append(_row(phase, "OVERALL (rows within spec)", part[part.beats_spec == ""]))
    return pd.DataFrame(groups)


def _row(phase: str, label: str, part: pd.DataFrame) -> dict[str, object]:
    return {
        "phase": phase,
        "group": label,
        "rows": len(part),
        "MAPE_pct": part.abs_error_pct.mean(),
        "bias_pct": part.rate_error_pct.mean(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir() / "validation" / "measurements.csv")
    parser.add_argument(
        "--out", type=Path, default=Path("validation_rows.csv"), help="CSV of every row"
    )
    args = parser.parse_args(argv)
    results = validate(pd.read_csv(args.data, dtype={"batch": str}))
    summary = summarise(results)
    pd.set_option("display.width", 200)
    print("Per-row results (error: + means the prediction is faster than measured):")
    shown = results.assign(rate=results.predicted / results.measured)
    print(
        shown[
            [
                "preset",
                "model",
                "quant",
                "batch",
                "input_tokens",
                "output_tokens",
                "metric",
                "measured",
                "predicted",
                "error_pct",
            ]
        ]
        .round(2)
        .to_string(index=False)
    )
    beyond = results[results.beats_spec != ""]
    print(
        f"\n{len(beyond)} rows beat the spec-sheet roofline (efficiency 1), so no roofline model can match them:"
    )
    for _, row in beyond.iterrows():
        print(
            f"  {row.preset} {row.model} {row.quant} {row.metric} {row.measured:g}: {row.beats_spec}"
        )
    skipped = results[results.skipped != ""]
    print(f"\nSkipped {len(skipped)} of {len(results)} rows:")
    for reason, count in skipped.skipped.value_counts().items():
        print(f"  {count:3d}  {reason}")
    print("\nMAPE and signed bias (rates; + = predicted faster than measured):")
    print(summary.round(1).to_string(index=False))
    results.to_csv(args.out, index=False)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
