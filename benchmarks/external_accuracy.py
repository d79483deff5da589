"""External validation: published runs from other sources, predicted by the shipped profiles.

``data/validation/published_runs.csv`` (mlc-ai/llm-perf-bench, TensorRT-LLM's own
performance tables, Jetson AI Lab, mlx-examples; see its README) is not an input of any
shipped profile: every row is predicted by ``data/runtimes/<runtime>.yaml`` as shipped
(calibrated on LLM-Inference-Bench and ``measurements.csv`` only), so its errors are out of
sample by construction, a different lab and set-up from the calibration data. Runtimes
without a shipped profile (MLC, MLX) are predicted by the physics (``ideal``) only.

The rows of ``device_class_runs.csv`` whose runtime's profile does not read that file
(``RUNTIME_DATA``: today the vLLM MI300X rows) are scored the same way. Where the row's
device class has its own fit in the profile, the profile's default fit (the class
overrides removed) is scored beside it: a class fit made on one device can fail to carry
to another device of the class.

Why these rows are not calibration inputs: the profile fit weighs each hardware equally,
so the 1-7 rows a new device brings here would weigh as much as 300-400 LLM-Inference-Bench
rows of one device; tried (2026-12-03), adding them moved vLLM's held-out A100 / H100
batch-latency MAPE from 9.3% / 10.0% to 20.0% / 26.4%.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd
from serving_accuracy import (
    METRICS,
    PUBLISHED,
    RUNTIME_DATA,
    SECOND,
    _path,
    ideal_times,
    metric_errors,
    summary,
)

from calibration import Measurement, load_measurements
from genz import RuntimeProfile, list_runtimes, load_runtime
from roofline import load_platform


def external_rows() -> list[tuple[str, Measurement]]:
    """(file, row) of every row no shipped profile is calibrated on: all of `PUBLISHED`,
    and the rows of `SECOND` whose runtime's calibration does not read it."""
    rows = [(PUBLISHED, row) for row in load_measurements(_path(PUBLISHED))]
    for row in load_measurements(_path(SECOND)):
        files, _ = RUNTIME_DATA.get(row.runtime, ((), None))
        if SECOND not in files:
            rows.append((SECOND, row))
    return rows


def without_class_fits(profile: RuntimeProfile) -> RuntimeProfile:
    """``profile`` with its per-device-class overrides removed: its default fit everywhere."""
    return dataclasses.replace(
        profile, device_classes={}, class_all_reduce_latency_s={}, class_kv_scales={}
    )


def external_frame() -> pd.DataFrame:
    """Per external row and metric: error of the shipped profile, of its default fit
    where the row's device class has its own (else NaN), and of ``ideal``."""
    rows = external_rows()
    shipped = set(list_runtimes())
    records = []
    for file, runtime in sorted({(file, row.runtime) for file, row in rows}):
        part: Sequence[Measurement] = [r for f, r in rows if f == file and r.runtime == runtime]
        profile: RuntimeProfile | None = load_runtime(runtime) if runtime in shipped else None
        ideal = metric_errors(part, ideal_times(part))
        profiled = metric_errors(part, ideal_times(part, profile)) if profile else None
        own_class = [
            profile is not None and load_platform(row.hw).device_class in profile.device_classes
            for row in part
        ]
        default = (
            metric_errors(part, ideal_times(part, without_class_fits(profile)))
            if profile is not None and any(own_class)
            else None
        )
        for metric in METRICS:
            for index, row in enumerate(part):
                if np.isnan(ideal[metric][index]):
                    continue
                records.append(
                    {
                        "file": file,
                        "runtime": runtime,
                        "hw": row.hw,
                        "metric": metric,
                        "tp": row.tp,
                        "profile": "shipped" if profile else "none (ideal)",
                        "held_out_pct": np.nan if profiled is None else profiled[metric][index],
                        "default_fit_pct": (
                            default[metric][index]
                            if default is not None and own_class[index]
                            else np.nan
                        ),
                        "ideal_pct": ideal[metric][index],
                        "source": row.source,
                    }
                )
    return pd.DataFrame(records)


def print_external(frame: pd.DataFrame) -> None:
    """Per runtime x hardware x metric, and per runtime: MAPE, median, p90, bias."""
    lines = []
    for keys, part in frame.groupby(["runtime", "hw", "metric"], sort=True):
        lines.append({"group": f"{keys[0]} / {keys[1]}", "metric": keys[2], **summary(part)})
    for keys, part in frame.groupby(["runtime", "metric"], sort=True):
        lines.append({"group": f"{keys[0]} / all", "metric": keys[1], **summary(part)})
    table = pd.DataFrame(lines).rename(
        columns=lambda name: name.replace("out-of-sample", "shipped profile")
    )
    counts = ", ".join(
        f"{file} {part.source.nunique()}" for file, part in frame.groupby("file", sort=False)
    )
    print(
        f"\nExternal rows (runs: {counts}; no profile is fitted on them): signed % error of "
        "the shipped profile (blank: none ships) and of ideal:"
    )
    print(table.to_string(index=False, na_rep="-", float_format=lambda value: f"{value:6.1f}"))
    classed = frame.dropna(subset=["default_fit_pct"])
    for keys, part in classed.groupby(["runtime", "hw", "metric"], sort=True):
        absolute = part.default_fit_pct.abs()
        print(
            f"  {keys[0]} / {keys[1]} {keys[2]}: the profile's own fit of the device class "
            f"MAPE {part.held_out_pct.abs().mean():.1f}% (bias {part.held_out_pct.mean():+.1f}%), "
            f"its default fit {absolute.mean():.1f}% (bias {part.default_fit_pct.mean():+.1f}%)"
        )
    latency = frame[(frame.metric == "batch latency") & (frame.profile == "shipped")]
    for file, part in latency.groupby("file", sort=False):
        line = summary(part)
        print(
            f"  {file} batch latency, shipped profiles: {len(part)} rows, MAPE "
            f"{line['out-of-sample MAPE']:.1f}%, bias {line['out-of-sample bias']:+.1f}% "
            f"(ideal MAPE {line['ideal MAPE']:.1f}%); no target is set on these rows"
        )
