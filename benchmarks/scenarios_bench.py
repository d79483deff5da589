"""Time ``codesign predict --scenarios`` on 10,000 rows (target: under 2 s).

Writes a CSV of 10,000 random scenarios (5 models x 4 hardware x 3 runtimes,
batch 1-64, 128-2048 prompt tokens, tp 1-4, fixed seed) to a temporary folder,
runs the command in-process once to warm the imports and presets, then times
reading, predicting and writing every row; prints the wall time, the load average
and the rows with an error.

Run: ``python benchmarks/scenarios_bench.py``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from app.cli import main

MODELS = ("llama-3-8b", "llama-2-7b", "mistral-7b", "llama-2-70b", "mixtral-8x7b")
HARDWARE = ("a100-sxm-40gb", "h100-sxm", "rtx-4090", "mi250-gcd")
RUNTIMES = ("ideal", "vllm", "tensorrt-llm")
ROWS = 10_000


def write_scenarios(path: Path, rows: int = ROWS, seed: int = 0) -> None:
    """A reproducible scenario file of ``rows`` rows."""
    pick = random.Random(seed).choice
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "hw", "runtime", "batch", "input_tokens", "output_tokens", "tp"])
        for _ in range(rows):
            model = pick(MODELS)
            tp = 4 if model == "llama-2-70b" else pick((1, 2))
            batch, tokens = pick((1, 8, 32, 64)), pick((128, 512, 2048))
            writer.writerow(
                [model, pick(HARDWARE), pick(RUNTIMES), batch, tokens, pick((64, 256)), tp]
            )


def run(path: Path) -> tuple[float, str, str]:
    """Seconds, stdout and stderr of one ``codesign predict --scenarios`` call."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(["predict", "--scenarios", str(path)])
    return time.perf_counter() - start, out.getvalue(), err.getvalue()


def main_bench() -> int:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.csv"
        write_scenarios(path)
        run(path)  # warm: imports, presets, profiles
        seconds, out, err = run(path)
    lines = out.count("\n") - 1
    print(
        f"{lines} rows predicted in {seconds:.2f} s (target < 2 s); "
        f"{err.count(chr(10))} rows with an error; load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
