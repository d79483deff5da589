"""External validation: published runs from other sources, predicted by the shipped profiles.

``data/validation/published_runs.csv`` (mlc-ai/llm-perf-bench, TensorRT-LLM's own
performance tables, Jetson AI Lab, mlx-examples; see its README) is not an input of any
shipped profile: every row is predicted by ``data/runtimes/<runtime>.yaml`` as shipped
(calibrated on LLM-Inference-Bench and ``measurements.csv`` only), so its errors are out of
sample by construction, a different lab and set-up from the calibration data. Runtimes
without a shipped profile (MLC, MLX) are predicted by the physics (``ideal``) only.

Why these rows are not calibration inputs: the profile fit weighs each hardware equally,
so the 1-7 rows a new device brings here would weigh as much as 300-400 LLM-Inference-Bench
rows of one device; tried (2026-12-03), adding them moved vLLM's held-out A100 / H100
batch-latency MAPE from 9.3% / 10.0% to 20.0% / 26.4%.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from serving_accuracy import METRICS, PUBLISHED, _path, ideal_times, metric_errors, summary

from genz import Measurement, RuntimeProfile, list_runtimes, load_measurements, load_runtime


def external_frame() -> pd.DataFrame:
    """Per row and metric of `PUBLISHED`: error of the shipped profile and of ``ideal``."""
    rows = load_measurements(_path(PUBLISHED))
    shipped = set(list_runtimes())
    records = []
    for runtime in sorted({row.runtime for row in rows}):
        part: Sequence[Measurement] = [row for row in rows if row.runtime == runtime]
        profile: RuntimeProfile | None = load_runtime(runtime) if runtime in shipped else None
        ideal = metric_errors(part, ideal_times(part))
        profiled = metric_errors(part, ideal_times(part, profile)) if profile else None
        for metric in METRICS:
            for index, row in enumerate(part):
                if np.isnan(ideal[metric][index]):
                    continue
                records.append(
                    {
                        "runtime": runtime,
                        "hw": row.hw,
                        "metric": metric,
                        "tp": row.tp,
                        "profile": "shipped" if profile else "none (ideal)",
                        "held_out_pct": np.nan if profiled is None else profiled[metric][index],
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
    print(
        f"\nExternal rows ({PUBLISHED}, {len(frame.source.unique())} runs; no profile is fitted "
        "on them): signed % error of the shipped profile (blank: none ships) and of ideal:"
    )
    print(table.to_string(index=False, na_rep="-", float_format=lambda value: f"{value:6.1f}"))
    latency = frame[(frame.metric == "batch latency") & (frame.profile == "shipped")]
    if len(latency):
        line = summary(latency)
        print(
            f"  external batch latency, shipped profiles: {len(latency)} rows, MAPE "
            f"{line['out-of-sample MAPE']:.1f}%, bias {line['out-of-sample bias']:+.1f}% "
            f"(ideal MAPE {line['ideal MAPE']:.1f}%); no target is set on these rows"
        )
