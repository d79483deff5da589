"""Write ``data/validation/measurements.csv`` in the `calibration.measurements` schema.

``data/validation/measurements_normalized.csv`` holds every row of
``measurements.csv`` that `validate.express` can describe as a static-batch
scenario (its docstring lists the mapping: llama.cpp formats to bits per weight,
``tgN`` / ``ppN`` token counts, "2x GPU" as pp 2), with the runtime read from the
source (TensorRT-LLM or llama.cpp) and the metric mapped to a schema column:
``decode_tokens_per_s`` to ``itl_s = batch / value`` (tokens/s of the batch),
``tpot_ms`` to ``itl_s``, ``prefill_tokens_per_s`` to ``ttft_s = batch x input /
value``, ``ttft_ms`` to ``ttft_s``, ``throughput_tokens_per_s`` to
``throughput_tok_s``. Rows beating the spec-sheet roofline (`validate.physical_limit_note`)
are kept: `calibration.physics_check` and the calibration decide. A test re-runs it and
compares the bytes.

Run: ``python benchmarks/convert_measurements.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from validate import HARDWARE, MODELS, express

from calibration import Measurement, write_measurements
from roofline import data_dir

SOURCE = data_dir() / "validation" / "measurements.csv"
TARGET = data_dir() / "validation" / "measurements_normalized.csv"
FORMAT_NAMES = {"FP16": "fp16", "F16": "F16", "FP8": "fp8"}


def convert(frame: pd.DataFrame) -> tuple[list[Measurement], list[str]]:
    """Schema rows and, per skipped line, why."""
    rows, skipped = [], []
    for line, row in zip(range(2, len(frame) + 2), frame.itertuples(index=False), strict=True):
        scenario, reason = express(pd.Series(row._asdict()))
        if scenario is None:
            skipped.append(f"measurements.csv:{line}: {reason}")
            continue
        value = float(row.value)
        batch, tokens = scenario.batch, scenario.input_tokens
        metric = {
            "decode_tokens_per_s": {"itl_s": batch / value},
            "tpot_ms": {"itl_s": value / 1e3},
            "prefill_tokens_per_s": {"ttft_s": batch * tokens / value},
            "ttft_ms": {"ttft_s": value / 1e3},
            "throughput_tokens_per_s": {"throughput_tok_s": value},
        }[row.metric]
        trt = "TensorRT" in row.source or "trtllm" in row.source
        precision, mesh = scenario.precision, scenario.parallelism
        rows.append(
            Measurement(
                model=MODELS[row.model],
                hw=HARDWARE[row.hardware],
                runtime="tensorrt-llm" if trt else "llama.cpp",
                batch=batch,
                input_tokens=tokens,
                output_tokens=scenario.output_tokens,
                tp=mesh.tp,
                pp=mesh.pp,
                weight_format=FORMAT_NAMES.get(row.precision_quant, row.precision_quant),
                weight_bits=precision.weight_bits,
                activation_bits=precision.activation_bits,
                kv_bits=precision.kv_bits,
                source=f"measurements.csv:{line} ({row.source})",
                **metric,
            )
        )
    return rows, skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TARGET)
    args = parser.parse_args(argv)
    rows, skipped = convert(pd.read_csv(SOURCE, dtype={"batch": str}))
    write_measurements(rows, args.out)
    print(f"wrote {len(rows)} rows to {args.out}; skipped {len(skipped)}:")
    for line in skipped:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
