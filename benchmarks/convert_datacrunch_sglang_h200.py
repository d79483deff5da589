"""Convert DataCrunch's SGLang runs on H200 (data/validation/serving/raw/) into serving
validation rows (data/validation/serving/datacrunch_sglang04_h200_llama.csv).

Source: github.com/datacrunch-research/h200-benchmarks at commit c091ef5 (2024-12-14),
``sglang/outputs/llama_3_3_70b_online_output.jsonl``, ``..._offline_output.jsonl`` and
``llama_405b_online_output.jsonl``: the result lines ``sglang.bench_serving`` writes
(``--output-file``) for the commands of ``sglang/experiments/llama_3_3_70b_sglang.sh``
and ``llama_405b_sglang.sh`` (same commit): Llama 3.3 70B Instruct on 4 x H200 and
Llama 3.1 405B Instruct on 8 x H200, bf16, ``sglang.launch_server --tp-size 4`` (8,
with ``--mem-frac 0.87``) ``--disable-radix-cache --enable-torch-compile`` in the
``lmsysorg/sglang`` image of December 2024; random prompts (lengths uniform up to the
stated ``--random-input`` / ``--random-output``, range ratio 0) and ShareGPT, Poisson
arrivals at 1-16 requests/s or all at once. Per run: output tokens/s, mean and median
E2E, median TTFT, median ITL. The repository has no licence file: the figures are
transcribed (``raw/datacrunch_sglang_h200.csv``: file, line and the printed fields).

Left out: the offline runs with 4,096-token random prompts (uniform lengths up to 4,096
do not fit the ShareGPT-filtered length sampler the rows are simulated with) and the
second of two repeated runs.

Run: ``python benchmarks/convert_datacrunch_sglang_h200.py``; ``--transcribe DIR``
rewrites the transcription from a local copy of ``sglang/outputs/``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from serving_validate import SETUP

from roofline import data_dir

FOLDER = data_dir() / "validation" / "serving"
RAW = FOLDER / "raw" / "datacrunch_sglang_h200.csv"
OUT = FOLDER / "datacrunch_sglang04_h200_llama.csv"
COMMIT = "c091ef530a525d2e788bc41c39a4450b09c9f2ad"
REPO = f"https://github.com/datacrunch-research/h200-benchmarks/blob/{COMMIT}/sglang/outputs"
#: output file -> (model preset, tp, SGLang's mem_fraction_static, what the script states)
FILES = {
    "llama_3_3_70b_online_output.jsonl": ("llama-3.1-70b", 4, 0.85, "default for tp 4"),
    "llama_3_3_70b_offline_output.jsonl": ("llama-3.1-70b", 4, 0.85, "default for tp 4"),
    "llama_405b_online_output.jsonl": ("llama-3.1-405b", 8, 0.87, "--mem-frac 0.87"),
}
FIELDS = (
    "dataset_name",
    "request_rate",
    "completed",
    "random_input_len",
    "random_output_len",
    "random_range_ratio",
    "total_input_tokens",
    "total_output_tokens",
    "duration",
    "output_throughput",
    "mean_e2e_latency_ms",
    "median_e2e_latency_ms",
    "median_ttft_ms",
    "median_itl_ms",
)
RAW_COLUMNS = ["file", "line", *FIELDS]
#: our metric, statistic <- field
METRICS = (
    ("output_tokens_per_s", "value", "output_throughput"),
    ("e2e_ms", "mean", "mean_e2e_latency_ms"),
    ("e2e_ms", "p50", "median_e2e_latency_ms"),
    ("ttft_ms", "p50", "median_ttft_ms"),
    ("itl_ms", "p50", "median_itl_ms"),
)
#: coefficient of variation of a uniform length on [0, L] (1 / sqrt 3)
UNIFORM_CV = 0.577
#: SGLang's prompt cap in the length sampler the rows are simulated with
LONGEST_PROMPT = 1024
COLUMNS = [
    *SETUP,
    "metric",
    "statistic",
    "measured",
    "reading_error",
    "source",
    "locator",
    "read",
    "assumptions",
]


def transcribe(folder: Path) -> list[dict[str, str]]:
    """Every result line of the `FILES` in ``folder``: its fields as printed."""
    runs = []
    for name in FILES:
        lines = (folder / name).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            result = json.loads(line)
            runs.append({"file": name, "line": str(number)} | {f: str(result[f]) for f in FIELDS})
    return runs


def assumptions(run: dict[str, str], fraction_note: str, fraction: float) -> str:
    """What the row adds to the source (model, GPUs, tp, bf16, commands are stated)."""
    common = (
        "SGLang v0.4 (the lmsysorg/sglang image of December 2024, after v0.4.0 of "
        "2024-12-04; the exact version is not stated), its defaults of that release: "
        f"mem_fraction_static {fraction} ({fraction_note}), chunked prefill of 8192 "
        "tokens, at most 4096 running requests (min(max(KV tokens / context x 512, "
        "2048), 4096)); radix cache off as launched; KV cache derived from memory; "
        "overlap scheduling is that release's default (simulated only with "
        "--async-scheduling); H200 read as the SXM preset (an 8-GPU HGX server, not "
        "stated); Llama 3.3 70B simulated as llama-3.1-70b (the same architecture); no "
        "SGLang runtime profile: ideal physics; "
    )
    if run["dataset_name"] == "sharegpt":
        lengths = (
            "ShareGPT via sglang.bench_serving (its filter: prompt <= 1024, prompt + "
            "output <= 2048 tokens); mean lengths = the run's total input / output tokens "
            "over its requests; lognormal lengths with cv 1.0 (assumed)"
        )
    else:
        lengths = (
            f"random lengths uniform on [1, {run['random_input_len']}] and [0, "
            f"{run['random_output_len']}] (range ratio 0), outputs forced (ignore_eos); "
            f"simulated as the filtered lognormal of the run's mean lengths and cv "
            f"{UNIFORM_CV} (a uniform's)"
        )
    arrivals = (
        "every request at t = 0 (request rate inf)"
        if run["request_rate"] in ("inf", "Infinity")
        else f"Poisson arrivals at {run['request_rate']} requests/s"
    )
    return common + lengths + "; " + arrivals


def rows(raw: list[dict[str, str]]) -> list[dict[str, object]]:
    """Validation rows of the transcribed runs (`LONGEST_PROMPT` and repeats left out)."""
    out: list[dict[str, object]] = []
    seen: set[tuple[str, ...]] = set()
    for run in raw:
        model, tp, fraction, note = FILES[run["file"]]
        sharegpt = run["dataset_name"] == "sharegpt"
        if not sharegpt and int(run["random_input_len"]) > LONGEST_PROMPT:
            continue
        key = (model, run["dataset_name"], run["request_rate"], run["random_input_len"],
               run["random_output_len"])  # fmt: skip
        if key in seen:
            continue  # a repeated run of the same command
        seen.add(key)
        n = int(run["completed"])
        offline = run["request_rate"] in ("inf", "Infinity")
        setup = {
            "model": model,
            "hardware": "h200-sxm",
            "tp": tp,
            "weight_bits": 16,
            "activation_bits": 16,
            "kv_bits": 16,
            "runtime": "SGLang v0.4 (--disable-radix-cache --enable-torch-compile)",
            "profile": "ideal",
            "scenario": "offline" if offline else "rate",
            "rate_per_s": "" if offline else run["request_rate"],
            "requests": n,
            "lengths": "sharegpt",
            "input_tokens": f"{int(run['total_input_tokens']) / n:.2f}",
            "output_tokens": f"{int(run['total_output_tokens']) / n:.2f}",
            "length_cv": 1.0 if sharegpt else UNIFORM_CV,
            "policy": "chunked",
            "max_sequences": 4096,
            "max_batched_tokens": 8192,
            "memory_utilization": fraction,
            "kv_capacity_tokens": "",
            "concurrency": "",
            "kv_free_fraction": "",
        }
        for metric, statistic, field in METRICS:
            out.append(
                {
                    **setup,
                    "metric": metric,
                    "statistic": statistic,
                    "measured": f"{float(run[field]):.6g}",
                    "reading_error": 0,
                    "source": f"{REPO}/{run['file']}",
                    "locator": f"line {run['line']}, {field}",
                    "read": "2026-12-04",
                    "assumptions": assumptions(run, note, fraction),
                }
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--transcribe", type=Path, help="a local copy of sglang/outputs/")
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
