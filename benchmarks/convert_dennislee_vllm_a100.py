"""Convert the vLLM 0.10.1.1 (V1 engine) runs of Qwen2-7B-Instruct on one A100 80GB in
github.com/dennislee22/vLLM-benchmarking (data/validation/serving/raw/) into serving
validation rows (data/validation/serving/dennislee_vllm0101_a100_qwen2_7b.csv).

Source: that repository's ``README.md`` at commit b474d1e (2025-09-13), "Test 4" and
"Test 5": one GPU, ``vllm serve Qwen2-7B-Instruct --max-model-len 16384
--gpu-memory-utilization 0.25`` (and ``0.5``), each driven by vLLM's
``benchmarks/benchmark_serving.py --dataset-name random --random-input-len 1024
--random-output-len 1024 --num-prompts N`` for N = 1 ... 1,000 (request rate inf: every
request sent at once). The start-up logs of the same commit (``log/vllm-7B-1gpuA10080GB-
0.25GRAM.log``, ``-0.5GRAM.log``) state the engine: V1, chunked prefill with
``max_num_batched_tokens`` 2048, prefix caching on, bf16, and the KV cache (93,872 and
464,848 tokens). The repository has no licence file, so the printed figures are
transcribed (``raw/dennislee_vllm_a100_qwen2_7b.csv``, README line of each run), not
copied. Runs with failed requests (894 and 924 of 1,000 succeeded) are left out.

Run: ``python benchmarks/convert_dennislee_vllm_a100.py``; ``--transcribe README.md``
rewrites the raw transcription from a local copy of the README.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

from serving_validate import MEASURE, SETUP

from roofline import data_dir

FOLDER = data_dir() / "validation" / "serving"
RAW = FOLDER / "raw" / "dennislee_vllm_a100_qwen2_7b.csv"
OUT = FOLDER / "dennislee_vllm0101_a100_qwen2_7b.csv"
COMMIT = "b474d1e053c35c9aef8c02aae4efbc0d8675f033"
SOURCE = f"https://github.com/dennislee22/vLLM-benchmarking/blob/{COMMIT}/README.md"
#: test heading -> (gpu_memory_utilization, KV cache tokens its start-up log states)
TESTS = {"Test 4": (0.25, 93872), "Test 5": (0.5, 464848)}
#: raw column <- the benchmark's printed label
PRINTED = {
    "successful": "Successful requests",
    "duration_s": "Benchmark duration (s)",
    "total_input": "Total input tokens",
    "total_generated": "Total generated tokens",
    "requests_per_s": "Request throughput (req/s)",
    "output_tokens_per_s": "Output token throughput (tok/s)",
    "mean_ttft_ms": "Mean TTFT (ms)",
    "mean_tpot_ms": "Mean TPOT (ms)",
    "median_tpot_ms": "Median TPOT (ms)",
    "p99_tpot_ms": "P99 TPOT (ms)",
    "mean_itl_ms": "Mean ITL (ms)",
    "median_itl_ms": "Median ITL (ms)",
    "p99_itl_ms": "P99 ITL (ms)",
}
RAW_COLUMNS = ["test", "line", "num_prompts", "random_input_len", "random_output_len", *PRINTED]
#: our metric, statistic <- raw column; printed to 2 decimals: +-0.005 in the unit
METRICS = (
    ("requests_per_s", "value", "requests_per_s"),
    ("output_tokens_per_s", "value", "output_tokens_per_s"),
    ("tpot_ms", "mean", "mean_tpot_ms"),
    ("tpot_ms", "p50", "median_tpot_ms"),
    ("tpot_ms", "p99", "p99_tpot_ms"),
    ("itl_ms", "mean", "mean_itl_ms"),
    ("itl_ms", "p50", "median_itl_ms"),
    ("itl_ms", "p99", "p99_itl_ms"),
)
COLUMNS = [*SETUP, *MEASURE, "assumptions"]
ASSUMPTIONS = (
    "one A100 80GB read as A100-SXM4-80GB (the page: 'NVIDIA A100 80GB', form factor not "
    "stated); engine as its start-up log states: vLLM 0.10.1.1 V1, bf16, tp 1, chunked "
    "prefill with max_num_batched_tokens 2048, the stated gpu_memory_utilization and GPU "
    "KV cache size, CUDA graphs; max_num_seqs 256 (vLLM 0.10's default where it picks "
    "2048 batched tokens; not printed); request rate inf (benchmark_serving.py default): "
    "every request at t = 0; lengths fixed at the run's total input / generated tokens "
    "over its requests (random dataset, range ratio 0); prefix caching is on and the "
    "log's cumulative hit rates (up to 23 %) show repeated random prompts hit the cache, "
    "so part of the prefill may have been skipped (not simulated; TTFT rows are left "
    "out for this reason); simulated with the vllm profile (fitted on 2024 vLLM runs, "
    "none of these)"
)


def transcribe(readme: Path) -> list[dict[str, str]]:
    """Every run of `TESTS` in the README: its command's lengths and printed figures."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    runs: list[dict[str, str]] = []
    test, run = "", {}
    for number, line in enumerate(lines, start=1):
        heading = re.match(r"#+ .*(Test \d+):", line)
        if heading:
            test = heading.group(1)
        if test not in TESTS:
            continue
        option = re.match(r"--(num-prompts|random-input-len|random-output-len) (\d+)", line)
        if option:
            run[option.group(1).replace("-", "_")] = option.group(2)
        if line.startswith("Successful requests"):
            run |= {"test": test, "line": str(number)}
        for column, label in PRINTED.items():
            if line.startswith(label + ":"):
                run[column] = line.split(":", 1)[1].strip()
        if line.startswith("P99 ITL (ms)"):
            runs.append(run)
            run = {}
    return runs


def rows(raw: list[dict[str, str]]) -> list[dict[str, object]]:
    """Validation rows of the transcribed runs."""
    out: list[dict[str, object]] = []
    for run in raw:
        utilisation, kv_tokens = TESTS[run["test"]]
        n = int(run["successful"])
        if n != int(run["num_prompts"]):
            continue  # failed requests (the 1,000-prompt runs): the load is not stated
        setup = {
            "model": "qwen2-7b",
            "hardware": "a100-sxm-80gb",
            "tp": 1,
            "weight_bits": 16,
            "activation_bits": 16,
            "kv_bits": 16,
            "runtime": "vLLM 0.10.1.1 (V1 engine, chunked prefill, prefix caching on)",
            "profile": "vllm",
            "scenario": "offline",
            "rate_per_s": "",
            "requests": n,
            "lengths": "fixed",
            "input_tokens": round(int(run["total_input"]) / n),
            "output_tokens": round(int(run["total_generated"]) / n),
            "length_cv": 0,
            "policy": "chunked",
            "max_sequences": 256,
            "max_batched_tokens": 2048,
            "memory_utilization": utilisation,
            "kv_capacity_tokens": kv_tokens,
            "concurrency": "",
            "kv_free_fraction": "",
        }
        for metric, statistic, column in METRICS:
            out.append(
                {
                    **setup,
                    "metric": metric,
                    "statistic": statistic,
                    "measured": run[column],
                    "reading_error": 0.005,
                    "source": SOURCE,
                    "locator": f"{run['test']}, --num-prompts {n}, README line {run['line']}, "
                    f"'{PRINTED[column]}'",
                    "read": "2026-12-04",
                    "assumptions": ASSUMPTIONS,
                }
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--transcribe", type=Path, help="a local copy of the README")
    args = parser.parse_args()
    if args.transcribe:
        runs = transcribe(args.transcribe)
        with RAW.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=RAW_COLUMNS)
            writer.writeheader()
            writer.writerows(runs)
        print(f"{RAW}: {len(runs)} runs")
    with RAW.open(encoding="utf-8") as handle:
        out = rows(list(csv.DictReader(handle)))
    with args.out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(out)
    print(f"{args.out}: {len(out)} numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
