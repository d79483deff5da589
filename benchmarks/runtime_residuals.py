"""Where the shipped runtime profiles miss: residuals by shape, batch, model kind and tp.

For vLLM, TensorRT-LLM and llama.cpp, each runtime's rows (`serving_accuracy.RUNTIME_DATA`)
are calibrated as the shipped profile is (`calibration.calibrate_runtime`) and every batch
latency gets an in-sample prediction (the fitted profile) and an out-of-sample one
(leave one hardware out). Prints the median signed error, ``100 (predicted -
measured) / measured`` in %, and the row count per group: dense rows by runtime x
hardware x input tokens x batch (LLM-Inference-Bench runs input = output tokens),
mixture-of-experts rows by runtime x hardware x tp x batch, and all rows by tp.
A pattern along one axis that the in-sample column keeps is structure the profile
cannot express (the analysis behind ``routing_independence``, docs/accuracy.md).

Run: ``python benchmarks/runtime_residuals.py`` (about 10 s).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from serving_accuracy import RUNTIME_DATA, _path, calibrate_command

from calibration import calibrate_runtime, load_formats, load_measurements
from genz import load_model

RUNTIMES = ("vllm", "tensorrt-llm", "llama.cpp")


def residual_frame(runtime: str) -> pd.DataFrame:
    """One line per kept row with a batch latency: its axes and both signed errors, %."""
    files, formats_file = RUNTIME_DATA[runtime]
    rows = [row for path in files for row in load_measurements(_path(path))]
    formats, sources = load_formats(_path(formats_file)) if formats_file else ((), {})
    result = calibrate_runtime(
        rows, runtime, command=calibrate_command(runtime), formats=formats, format_sources=sources
    )
    data = result.data
    measured = data.measured["batch_latency_s"]
    fitted = data.predict(result.fit.profile)["batch_latency_s"]
    held_out = result.cv.predicted["batch_latency_s"]
    moe = {name: load_model(name).is_moe for name in {row.model for row in data.rows}}
    frame = pd.DataFrame(
        {
            "runtime": runtime,
            "hw": data.hw,
            "moe": [moe[row.model] for row in data.rows],
            "input": [row.input_tokens for row in data.rows],
            "batch": [row.batch for row in data.rows],
            "tp": [row.tp for row in data.rows],
            "in-sample %": 100 * (fitted - measured) / measured,
            "out-of-sample %": 100 * (held_out - measured) / measured,
        }
    )
    return frame[np.isfinite(measured)]


def table(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Rows and median signed errors per group."""
    grouped = frame.groupby(by)
    out = grouped[["in-sample %", "out-of-sample %"]].median().round(1)
    out.insert(0, "rows", grouped.size())
    return out


def main() -> int:
    frame = pd.concat([residual_frame(runtime) for runtime in RUNTIMES], ignore_index=True)
    pd.set_option("display.max_rows", 1000)
    pd.set_option("display.width", 200)
    common = frame.batch.isin([1, 16, 32, 64])  # the LLM-Inference-Bench grid
    print("Median signed error, %, of batch latency (bias < 0: predicted faster).")
    print("\nDense models, by runtime x hardware x input tokens x batch:")
    print(table(frame[~frame.moe & common], ["runtime", "hw", "input", "batch"]).to_string())
    print("\nMixture-of-experts (Mixtral) rows, by runtime x hardware x tp x batch:")
    print(table(frame[frame.moe], ["runtime", "hw", "tp", "batch"]).to_string())
    print("\nAll rows by runtime x tp:")
    print(table(frame, ["runtime", "tp"]).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
