"""Convert the published LLM-Inference-Bench CSVs into the project's measurement schema.

Reads ``data/validation/llm_inference_bench/*.csv`` (columns as published by
Chitty-Venkata et al., argonne-lcf/LLM-Inference-Bench @ 4211f5d4) and writes
``normalized.csv`` next to them in the `calibration.measurements` schema, one row per
published row that maps onto a shipped model and hardware preset. Every mapping
decision is a table below; the evidence for each is in that folder's README.

- Hardware: ``Nvidia A100 GPU`` is the A100 40GB SXM4 of ALCF Polaris; ``Nvidia H100
  GPU`` the H100 SXM5 80GB of JLSE; ``AMD MI250 GPU`` counts MI250 modules, each two
  GCDs (preset ``mi250-gcd``), so N modules are 2N devices; ``Intel PVC GPU`` and
  ``Intel Max 1550`` are the same card (``intel-max-1550``, one device per card).
- Parallelism: vLLM, TensorRT-LLM, DeepSpeed-MII, DeepSpeed (Gaudi 2) and SambaFlow
  shard with tensor parallelism over all devices; llama.cpp splits layers (its default
  ``--split-mode layer``): pipeline stages run one after the other, so ``pp`` = devices.
  ``parallelism_results.csv`` names the split in its ``Parallelism Type`` column.
- llama.cpp rows are llama-bench ``-pg L,L -b B`` runs: one sequence, L prompt tokens
  processed in passes of B tokens (``-b`` is llama.cpp's logical batch, not concurrent
  sequences), then L generated tokens. ``Latency`` is the time of that run and
  ``Throughput = 2L / Latency`` (prompt plus generated tokens of the one sequence;
  checked on every row). So: batch 1, ``prefill_chunk`` = B.
- Throughput is written in the schema's unit, generated tokens per second: for every
  runtime that is the published ``Throughput`` times L / 2L (the published figure
  counts prompt tokens too); the identity is checked per row and a row failing it
  keeps its latency but no throughput.
- Precision: the runs are 16-bit (vLLM ``--dtype float16``, TensorRT-LLM
  ``float16``, llama.cpp F16 GGUF; Gaudi 2 and SN40L bf16). ``quant_kv_dtype_results``
  names weight and KV dtypes: fp8 / int8 weights are 8 bits; FP8 on H100 and
  TensorRT-LLM int8 (SmoothQuant, ``int8_sq``) quantise activations too (8 bits).
- ``power_results.csv``: ``avg_power`` is the mean of NVML ``nvmlDeviceGetPowerUsage``
  samples of GPU 0 (milliwatts; the authors' ``power_utils.py``), written in watts.
- ``ttft_itl_results.csv``: ``TTFT Latency`` is a run with 1 output token and
  ``end_latency`` the full run of ``Input Length`` in and out (the ``Output Length``
  column says 1 for both); written as one row with ``itl_s = (end - TTFT) / (L - 1)``,
  the mean decode step time.
- Left out: ``ttft_results.csv`` (the TTFT column of ``ttft_itl_results.csv`` again),
  ``sn40l_results.csv`` (its 40 rows are rows of ``all_results.csv``),
  ``quant_perplexity_power.csv`` (its ``avg_power`` sums every GPU of the node,
  idle ones included, and its latencies repeat ``all_results.csv``), and rows of
  models without a preset (counted on the console).

Run: ``python benchmarks/convert_llm_inference_bench.py [--out PATH]``.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from calibration import Measurement, write_measurements
from roofline import data_dir

FOLDER = data_dir() / "validation" / "llm_inference_bench"


@dataclass(frozen=True)
class Device:
    """A published hardware name: our preset, devices per counted unit, weight dtype."""

    preset: str
    per_unit: int
    dtype: str


HARDWARE = {
    "Nvidia A100 GPU": Device("a100-sxm-40gb", 1, "fp16"),
    "Nvidia H100 GPU": Device("h100-sxm", 1, "fp16"),
    "AMD MI250 GPU": Device("mi250-gcd", 2, "fp16"),
    "Intel PVC GPU": Device("intel-max-1550", 1, "fp16"),
    "Intel Max 1550": Device("intel-max-1550", 1, "fp16"),
    "Habana Gaudi2": Device("gaudi2", 1, "bf16"),
    "SambaNova SN40L": Device("sn40l", 1, "bf16"),
}
RUNTIMES = {
    "vLLM": "vllm",
    "TensorRT-LLM": "tensorrt-llm",
    "llama.cpp": "llama.cpp",
    "Deepspeed-MII": "deepspeed-mii",
    "Deepspeed": "deepspeed",
    "sambaflow": "sambaflow",
}
MODELS = {
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-2-13b-hf": "llama-2-13b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "meta-llama/Meta-Llama-3-8B": "llama-3-8b",
    "meta-llama/Meta-Llama-3-70B": "llama-3-70b",
    "mistralai/Mistral-7B-v0.1": "mistral-7b",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "Qwen/Qwen2-7B": "qwen2-7b",
    "Qwen/Qwen2-72B": "qwen2-72b",
    "Qwen/Qwen1.5-7B": "qwen1.5-7b",
    "huggyllama/llama-7b": "llama-7b",
}
#: ``Parallelism Type`` of parallelism_results.csv -> (tp, pp, ep) as shares of the
#: devices; None = all devices.
PARALLELISM = {
    "Tensor Parallelism": ("all", 1, 1),
    "TP": ("all", 1, 1),
    "Pipeline Parallelism": (1, "all", 1),
    "PP": (1, "all", 1),
    "EP": (1, 1, "all"),
    "Hybrid TP = 2 and EP = 2": (2, 1, 2),
    "Hybrid TP = 2 and PP = 2": (2, 2, 1),
    "Hybird Tensor (2) and Pipeline (2) Parallelism": (2, 2, 1),
}
#: ``kv_cache_dtype`` of quant_kv_dtype_results.csv: weight format -> bits.
DTYPE_BITS = {"fp16": 16.0, "fp8": 8.0, "int8": 8.0}
#: Relative tolerance of the published Throughput identity.
IDENTITY_RTOL = 1e-5


def read_table(name: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of a published CSV; line 1 is the header."""
    with open(FOLDER / name, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            yield reader.line_num, row


class Converter:
    """Maps published rows to `Measurement` rows and counts what it leaves out."""

    def __init__(self) -> None:
        self.skipped: Counter[str] = Counter()
        self.identity_failures = 0

    def mesh(self, runtime: str, devices: int, split: str | None) -> tuple[int, int, int] | None:
        """(tp, pp, ep) of a run on ``devices`` devices."""
        if split is None:
            return (1, devices, 1) if runtime == "llama.cpp" else (devices, 1, 1)
        shares = PARALLELISM.get(split)
        if shares is None:
            self.skipped[f"unknown Parallelism Type {split!r}"] += 1
            return None
        mesh = tuple(devices if share == "all" else int(share) for share in shares)
        if math.prod(mesh) != devices:
            self.skipped[f"{split!r} does not use {devices} devices"] += 1
            return None
        return mesh  # type: ignore[return-value]

    def base(
        self, row: dict[str, str], source: str, split: str | None = None
    ) -> dict[str, object] | None:
        """Fields every table shares, or None (counted) when the row cannot be mapped."""
        model = MODELS.get(row["Model"])
        device = HARDWARE.get(row["Hardware"])
        runtime = RUNTIMES.get(row["Framework"])
        if model is None:
            self.skipped[f"no model preset for {row['Model']}"] += 1
            return None
        if device is None or runtime is None:
            self.skipped[f"unknown hardware or framework {row['Hardware']}/{row['Framework']}"] += 1
            return None
        devices = int(row["Num of Hardware"]) * device.per_unit
        mesh = self.mesh(runtime, devices, split)
        if mesh is None:
            return None
        return {
            "model": model,
            "hw": device.preset,
            "runtime": runtime,
            "tp": mesh[0],
            "pp": mesh[1],
            "ep": mesh[2],
            "weight_format": device.dtype,
            "source": source,
        }

    def static_batch(
        self, row: dict[str, str], source: str, latency: str, throughput: str, **extra: object
    ) -> Measurement | None:
        """A row of input = output = ``Input Output Length`` tokens (see module doc)."""
        fields = self.base(row, source, split=row.get("Parallelism Type"))
        if fields is None:
            return None
        length = int(row["Input Output Length"])
        published_batch = int(row["Batch Size"])
        latency_s = float(row[latency])
        if fields["runtime"] == "llama.cpp":
            sequences, chunk = 1, published_batch
        else:
            sequences, chunk = published_batch, None
        published = float(row[throughput])
        expected = sequences * 2 * length / latency_s
        throughput_s: float | None = sequences * length / latency_s
        if not math.isclose(published, expected, rel_tol=IDENTITY_RTOL):
            self.identity_failures += 1
            throughput_s = None
        fields.update(extra)
        return Measurement(
            batch=sequences,
            input_tokens=length,
            output_tokens=length,
            prefill_chunk=chunk,
            batch_latency_s=latency_s,
            throughput_tok_s=throughput_s,
            **fields,  # type: ignore[arg-type]
        )

    def all_results(self) -> Iterator[Measurement]:
        """all_results.csv and parallelism_results.csv: static-batch runs."""
        for name in ("all_results.csv", "parallelism_results.csv"):
            for line, row in read_table(name):
                measurement = self.static_batch(row, f"{name}:{line}", "Latency", "Throughput")
                if measurement is not None:
                    yield measurement

    def quantised(self) -> Iterator[Measurement]:
        """quant_kv_dtype_results.csv: weight and KV-cache dtypes in one text column."""
        name = "quant_kv_dtype_results.csv"
        for line, row in read_table(name):
            weight, kv = (part.split("=")[1].strip() for part in row["kv_cache_dtype"].split(","))
            eight_bit_compute = (weight == "fp8" and row["Hardware"] == "Nvidia H100 GPU") or (
                weight == "int8" and row["Framework"] == "TensorRT-LLM"
            )
            measurement = self.static_batch(
                row,
                f"{name}:{line}",
                "latency",
                "throughput",
                weight_format=weight,
                weight_bits=DTYPE_BITS[weight],
                kv_bits=DTYPE_BITS[kv],
                activation_bits=8.0 if eight_bit_compute else 16.0,
            )
            if measurement is not None:
                yield measurement

    def power(self) -> Iterator[Measurement]:
        """power_results.csv: static-batch runs with GPU 0's mean power (mW -> W)."""
        name = "power_results.csv"
        for line, row in read_table(name):
            measurement = self.static_batch(
                row,
                f"{name}:{line}",
                "Latency",
                "Throughput",
                power_w=float(row["avg_power"]) / 1000.0,
            )
            if measurement is not None:
                yield measurement

    def ttft_itl(self) -> Iterator[Measurement]:
        """ttft_itl_results.csv: TTFT (1-token run) and the full run's latency."""
        name = "ttft_itl_results.csv"
        for line, row in read_table(name):
            fields = self.base(row, f"{name}:{line}")
            if fields is None:
                continue
            length = int(row["Input Length"])
            ttft = float(row["TTFT Latency"])
            end = float(row["end_latency"])
            yield Measurement(
                batch=int(row["Batch Size"]),
                input_tokens=length,
                output_tokens=length,
                batch_latency_s=end,
                ttft_s=ttft,
                itl_s=(end - ttft) / (length - 1),
                **fields,  # type: ignore[arg-type]
            )

    def convert(self) -> list[Measurement]:
        """Every mapped row, table by table, in published line order."""
        return [
            *self.all_results(),
            *self.quantised(),
            *self.power(),
            *self.ttft_itl(),
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FOLDER / "normalized.csv")
    args = parser.parse_args(argv)
    converter = Converter()
    rows = converter.convert()
    write_measurements(rows, args.out)
    print(f"wrote {len(rows)} rows to {args.out}")
    print(
        f"throughput identity failed on {converter.identity_failures} rows (throughput left blank)"
    )
    for reason, count in sorted(converter.skipped.items()):
        print(f"  left out {count:4d}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
