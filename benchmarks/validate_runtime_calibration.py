"""How much would calibrating memory efficiency to llama.cpp help decode, out of sample?

The shipped presets carry one efficiency set per device class (benchmarks/validate.py
reports the error that gives). A user can override it for their serving runtime
(``--memory-eff``). This script measures what that buys, honestly: for llama.cpp
batch-1 decode rows (split into F16 and quantised weights, whose kernels differ), it
picks one multiplier ``m`` on every preset's memory efficiency from all hardware but
one, predicts the held-out hardware's rows with it (leave-one-hardware-out), and
reports the held-out MAPE next to the uncalibrated one. Rows that beat the spec-sheet
roofline are left out (no efficiency can match them).

Run: ``python benchmarks/validate_runtime_calibration.py``.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pandas as pd
from validate import (
    HARDWARE,
    MODELS,
    PHASE_OF_METRIC,
    express,
    physical_limit_note,
    predicted_value,
)

from genz import load_model, predict
from roofline import data_dir, derive_platform, load_platform

MULTIPLIERS = np.round(np.arange(0.40, 1.301, 0.05), 2)


def decode_rows() -> pd.DataFrame:
    """llama.cpp batch-1 decode rows within spec, with predictions for every multiplier."""
    measurements = pd.read_csv(data_dir() / "validation" / "measurements.csv", dtype={"batch": str})
    records = []
    for _, row in measurements.iterrows():
        if PHASE_OF_METRIC[row.metric] != "decode" or "TensorRT" in row.source:
            continue
        scenario, _reason = express(row)
        if scenario is None:
            continue
        model = load_model(MODELS[row.model])
        base = load_platform(HARDWARE[row.hardware])
        if physical_limit_note(row, scenario, predict(model, base, scenario)):
            continue
        rate = {}
        for multiplier in MULTIPLIERS:
            efficiency = dataclasses.replace(
                base.efficiency, memory=min(1.0, base.efficiency.memory * multiplier)
            )
            platform = derive_platform(base, efficiency=efficiency)
            value = predicted_value(row, predict(model, platform, scenario), scenario)
            # Compare as rates, as validate.py does (+ = predicted faster).
            rate[multiplier] = value / row.value if row.metric != "tpot_ms" else row.value / value
        records.append(
            {
                "preset": HARDWARE[row.hardware],
                "weights": "F16" if row.precision_quant == "F16" else "quantised",
                **{f"m{m:.2f}": rate[m] for m in MULTIPLIERS},
            }
        )
    return pd.DataFrame(records)


def mape(ratios: pd.Series | pd.DataFrame) -> float | pd.Series:
    """Mean absolute percentage error of rate ratios (predicted / measured)."""
    return (100 * (ratios - 1).abs()).mean()


def leave_one_hardware_out(rows: pd.DataFrame) -> tuple[list[float], list[float]]:
    """Held-out absolute % errors with m fitted on the other hardware, and the m's chosen."""
    columns = [f"m{m:.2f}" for m in MULTIPLIERS]
    held_out, chosen = [], []
    for preset in rows.preset.unique():
        train, test = rows[rows.preset != preset], rows[rows.preset == preset]
        best = mape(train[columns]).idxmin()
        chosen.append(float(best[1:]))
        held_out.extend((test[best] - 1).abs() * 100)
    return held_out, chosen


def main() -> int:
    rows = decode_rows()
    print("llama.cpp batch-1 decode rows within spec; MAPE of rates (+/- vs measured)")
    print(
        f"{'weights':10} {'rows':>4} {'hardware':>8} {'MAPE shipped':>13} {'MAPE LOHO-calibrated':>21}  multiplier chosen per fold"
    )
    pooled: list[float] = []
    for label, part in [*rows.groupby("weights"), ("all", rows)]:
        held, chosen = leave_one_hardware_out(part)
        if label != "all":
            pooled.extend(held)
        print(
            f"{label:10} {len(part):4d} {part.preset.nunique():8d} {mape(part['m1.00']):12.1f}% "
            f"{np.mean(held):20.1f}%  {min(chosen):.2f}-{max(chosen):.2f}"
        )
    print(
        f"{'per format':10} {len(rows):4d} {rows.preset.nunique():8d} {mape(rows['m1.00']):12.1f}% "
        f"{np.mean(pooled):20.1f}%  (one multiplier for F16, one for quantised)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
