"""Convert the NIM / GenAI-Perf concurrency sweep (data/validation/serving/raw/) into
serving validation rows (data/validation/serving/nim_genai_perf_llama3.csv).

Source: github.com/wbing520/ai-performance-engineering, commit
0e25b2e236211ad01ed2221bd2c1cfa5b3f47b55,
``code/ch10_inference/inference_gpu_cluster_sizing/dataset/nim.csv`` (Apache-2.0; the
NVIDIA DLI "Sizing LLM inference systems" course data the repository ships): GenAI-Perf
``profile_export`` summaries of NIM (TensorRT-LLM backend) serving Llama 3 8B / 70B
Instruct on A100-SXM4-80GB and H100 80GB HBM3, fixed prompt / output lengths, closed-loop
concurrency 1-250. Kept: the 16-bit rows (fp16, bf16; the fp8 rows do not state the
KV-cache precision), the first of repeated runs of one set-up. Per row: request and
output-token throughput, mean and P95 of TTFT, of GenAI-Perf's inter-token latency
(per request (E2E - TTFT) / (output - 1): our TPOT) and of the request latency (E2E).

Run: ``python benchmarks/convert_nim_genai_perf.py``.
"""

from __future__ import annotations

import csv

from serving_validate import MEASURE, SETUP

from roofline import data_dir

FOLDER = data_dir() / "validation" / "serving"
RAW = FOLDER / "raw" / "nim_dli_genai_perf.csv"
OUT = FOLDER / "nim_genai_perf_llama3.csv"
SOURCE = (
    "https://github.com/wbing520/ai-performance-engineering/blob/"
    "0e25b2e236211ad01ed2221bd2c1cfa5b3f47b55/code/ch10_inference/"
    "inference_gpu_cluster_sizing/dataset/nim.csv"
)
MODELS = {"meta-llama3-8b-instruct": "llama-3-8b", "meta-llama3-70b-instruct": "llama-3-70b"}
HARDWARE = {"A100-SXM4-80GB": "a100-sxm-80gb", "H100_80GB_HBM3": "h100-sxm"}
#: our metric, statistic <- GenAI-Perf column, factor to our unit
METRICS = (
    ("requests_per_s", "value", "request_throughput-avg", 1.0),
    ("output_tokens_per_s", "value", "output_token_throughput-avg", 1.0),
    ("ttft_ms", "mean", "time_to_first_token-avg", 1e-6),
    ("ttft_ms", "p95", "time_to_first_token-p95", 1e-6),
    ("tpot_ms", "mean", "inter_token_latency-avg", 1e-6),
    ("tpot_ms", "p95", "inter_token_latency-p95", 1e-6),
    ("e2e_ms", "mean", "request_latency-avg", 1e-6),
    ("e2e_ms", "p95", "request_latency-p95", 1e-6),
)
ASSUMPTIONS = (
    "tp = the row's n_gpus (one TensorRT-LLM engine across them; not stated); 16-bit "
    "weights, activations and KV cache (fp16/bf16 as stated); in-flight batching "
    "simulated as chunked steps of up to 8192 tokens (TensorRT-LLM's default "
    "max_num_tokens; prompts of up to 7000 tokens fit whole) with at most 256 sequences "
    "(its default max_batch_size); KV cache 0.9 of the memory left after weights "
    "(kv_cache_free_gpu_mem_fraction default); requests = 8 x concurrency + 40, "
    "statistics over the steady part (requests sent after the first concurrency-many "
    "and before the last concurrency-many), as GenAI-Perf measures in a stable window "
    "after warm-up; ISL/OSL exact (stddev 0, measured output counts equal the request)"
)
#: The serving set-up columns `serving_validate.py` reads, then the reading's own.
COLUMNS = [*SETUP, *MEASURE, "assumptions"]


def main() -> None:
    with RAW.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    seen: set[tuple[str, ...]] = set()
    out = []
    for line, row in enumerate(rows, start=2):
        if row["task_inputs-precision"] not in ("fp16", "bf16"):
            continue
        concurrency = int(row["input_config-concurrency"])
        isl = int(row["input_config-synthetic_input_tokens_mean"])
        osl = int(row["input_config-output_tokens_mean"])
        key = (
            row["task_inputs-model"],
            row["task_inputs-GPU"],
            row["task_inputs-n_gpus"],
            row["task_inputs-precision"],
            str(concurrency),
            str(isl),
            str(osl),
        )
        if key in seen:  # a repeated run of the same set-up
            continue
        seen.add(key)
        setup = {
            "model": MODELS[row["task_inputs-model"]],
            "hardware": HARDWARE[row["task_inputs-GPU"]],
            "tp": row["task_inputs-n_gpus"],
            "weight_bits": 16,
            "activation_bits": 16,
            "kv_bits": 16,
            "runtime": f"NIM (TensorRT-LLM backend, {row['task_inputs-precision']}); "
            "GenAI-Perf concurrency mode",
            "profile": "tensorrt-llm",
            "scenario": "closed",
            "rate_per_s": "",
            "requests": 8 * concurrency + 40,
            "lengths": "fixed",
            "input_tokens": isl,
            "output_tokens": osl,
            "length_cv": 0,
            "policy": "chunked",
            "max_sequences": 256,
            "max_batched_tokens": 8192,
            "memory_utilization": 0.9,
            "kv_capacity_tokens": "",
            "concurrency": concurrency,
            "kv_free_fraction": 0.9,
        }
        for metric, statistic, column, factor in METRICS:
            out.append(
                {
                    **setup,
                    "metric": metric,
                    "statistic": statistic,
                    "measured": f"{float(row[column]) * factor:.6g}",
                    "reading_error": 0,
                    "source": SOURCE,
                    "locator": f"line {line}, column {column}",
                    "read": "2026-12-03",
                    "assumptions": ASSUMPTIONS,
                }
            )
    with OUT.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(out)
    print(f"{OUT}: {len(out)} numbers of {len(seen)} set-ups")


if __name__ == "__main__":
    main()
