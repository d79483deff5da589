"""Do the 80 % intervals of ``codesign predict --runtime`` hold 80 % of what is measured?

Two checks, both out of sample:

1. **Leave one hardware out, nested.** For each runtime of `RUNTIME_DATA` and each of
   its hardware H: `calibration.calibrate_runtime` on every row except H's, as the shipped
   profile is made (the same files and formats), so the profile it writes carries the
   cross-validated error of the other hardware only; then each of H's rows is predicted
   with that profile and given its interval (`calibration.prediction_interval`, per metric:
   batch latency, TTFT, inter-token latency). Counted: rows inside, below (measured
   faster than the interval) and above, and rows given no interval (H's device class
   absent from the profile: "outside anything measured").
2. **External rows** (`external_accuracy.external_rows`: ``published_runs.csv`` and the
   vLLM MI300X rows, fitted by no profile) with the shipped profiles' intervals.
3. **Per source, leave one source out** (``--per-source held_out.csv``, the predictions
   `benchmarks/transfer_profiles.py --save` writes: every stored row predicted through
   genz by the transfer model's profiles fitted without its source, and by ``ideal``).
   Each source's 80 % interval is split-conformal grouped by source: the 10 % and 90 %
   quantiles of ``log(measured / predicted)`` of the *other* sources' held-out values,
   each source weighing the same (`calibration.transfer_validation.conformal_bounds`),
   per metric and predictor. Printed: per source the share inside, and the
   source-averaged share (target 75-85 %).

A measured batch latency missing from a row is ``batch x output_tokens / throughput``
(`calibration.measured_metrics`, as calibration reads it). A well-calibrated 80 % interval holds
about 80 % of the rows; fewer means the figures are less certain than the interval says.

Run: ``python benchmarks/interval_coverage.py [--runtimes vllm,tensorrt-llm]`` (all five
shipped runtimes: about 6 minutes on 2 cores, llama.cpp's 20-odd hardware most of it);
``python benchmarks/interval_coverage.py --per-source held_out.csv`` (check 3 only: seconds).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd
from external_accuracy import external_rows
from serving_accuracy import (
    RUNTIME_DATA,
    calibrate_as_shipped,
    ideal_times,
    shipped_formats,
    shipped_rows,
)
from transfer_profiles import load as load_held_out

from calibration import Measurement, calibration_rows, measured_metrics, prediction_interval
from calibration.transfer_validation import conformal_bounds
from genz import RuntimeProfile, list_runtimes, load_runtime, runtime_from_dict
from roofline import InputError, load_platform

#: (label, key of `ideal_times`, `prediction_interval` metric) of each checked time.
TIMES = (
    ("batch latency", "batch_latency_s", "batch_latency_s"),
    ("TTFT", "ttft_s", "ttft_s"),
    ("inter-token latency", "itl_s", "itl_s"),
)


def coverage_records(
    rows: Sequence[Measurement], profile: RuntimeProfile, check: str
) -> list[dict[str, object]]:
    """One record per row and measured time: inside / below / above its interval, or none."""
    predicted = ideal_times(rows, profile)
    measured = measured_metrics(rows)
    records: list[dict[str, object]] = []
    intervals: dict[tuple[str, str], tuple[float | None, float | None]] = {}
    for label, key, metric in TIMES:
        for index, row in enumerate(rows):
            value, truth = predicted[key][index], measured[key][index]
            if np.isnan(truth) or np.isnan(value):
                continue
            if (row.hw, metric) not in intervals:
                unit = prediction_interval(1.0, profile, load_platform(row.hw), metric=metric)
                intervals[row.hw, metric] = (unit.low, unit.high)
            low, high = intervals[row.hw, metric]
            if low is None or high is None:
                verdict = "no interval"
            elif truth < value * low:
                verdict = "below"
            elif truth > value * high:
                verdict = "above"
            else:
                verdict = "inside"
            records.append(
                {
                    "check": check,
                    "runtime": row.runtime,
                    "hw": row.hw,
                    "metric": label,
                    "verdict": verdict,
                }
            )
    return records


def nested_records(runtime: str) -> list[dict[str, object]]:
    """Check 1 for one runtime: each hardware's rows against a profile made without them."""
    rows = shipped_rows(runtime)

    def calibrate(part: Sequence[Measurement]) -> RuntimeProfile:
        return runtime_from_dict(calibrate_as_shipped(runtime, part).document)

    # The rows the shipped calibration keeps (physically possible, on a mesh the model splits).
    formats, _, kv_formats, _ = shipped_formats(runtime)
    kept = list(calibration_rows(rows, runtime, formats=formats, kv_formats=kv_formats)[0].rows)
    hardware = sorted({row.hw for row in kept})
    if len(hardware) < 2:
        print(f"  {runtime}: measured on {hardware[0]} only: no leave-one-hardware-out check")
        return []
    records: list[dict[str, object]] = []
    for hw in hardware:
        try:
            profile = calibrate([row for row in rows if row.hw != hw])
        except InputError as error:
            print(f"  {runtime} without {hw}: not calibrated ({error})")
            continue
        held = [row for row in kept if row.hw == hw]
        records += coverage_records(held, profile, "leave-one-hardware-out")
        print(f"  {runtime} without {hw}: {len(held)} rows checked", flush=True)
    return records


def external_records() -> list[dict[str, object]]:
    """Check 2: the external rows with the shipped profile of their runtime."""
    shipped = set(list_runtimes())
    rows = [row for _, row in external_rows() if row.runtime in shipped]
    records: list[dict[str, object]] = []
    for runtime in sorted({row.runtime for row in rows}):
        part = [row for row in rows if row.runtime == runtime]
        records += coverage_records(part, load_runtime(runtime), "external")
    return records


#: Predictors of check 3 (columns of the held-out CSV) and the fewest values a source
#: needs for its own line.
PER_SOURCE_PREDICTORS = ("ideal", "generic", "stack")
PER_SOURCE_MIN_VALUES = 10


def per_source_coverage(path: str) -> pd.DataFrame:
    """Check 3: per source, metric and predictor, the share of its held-out values inside
    the interval made of the other sources' residuals (grouped split conformal)."""
    frame = pd.DataFrame(load_held_out([path]))
    lines = []
    for metric, part in frame.groupby("metric", sort=True):
        sources = part["source"].to_numpy()
        measured = part["measured"].to_numpy()
        for predictor in PER_SOURCE_PREDICTORS:
            predicted = part[predictor].to_numpy()
            low, high = conformal_bounds(predicted, measured, sources)
            inside = (measured >= predicted * low) & (measured <= predicted * high)
            given = np.isfinite(low) & np.isfinite(predicted)
            for source in sorted(set(sources.tolist())):
                own = given & (sources == source)
                lines.append(
                    {
                        "metric": metric,
                        "predictor": predictor,
                        "source": source,
                        "values": int(own.sum()),
                        "% inside": 100 * inside[own].mean() if own.any() else np.nan,
                        "% below": 100 * (measured[own] < predicted[own] * low[own]).mean()
                        if own.any()
                        else np.nan,
                    }
                )
    return pd.DataFrame(lines)


def print_per_source(path: str) -> None:
    """Check 3's table and its source-averaged coverage per metric and predictor."""
    result = per_source_coverage(path)
    print("Per source, leave one source out, 80% split-conformal intervals grouped by source")
    print(f"(sources with at least {PER_SOURCE_MIN_VALUES} values; % inside per predictor):")
    wide = result[result["values"] >= PER_SOURCE_MIN_VALUES].pivot_table(
        index=["metric", "source", "values"], columns="predictor", values="% inside"
    )
    print(wide.to_string(na_rep="-", float_format=lambda value: f"{value:5.1f}"))
    print(
        "\nsource-averaged share inside (every source with a value weighs the same; target 75-85%):"
    )
    for (metric, predictor), part in result[result["values"] > 0].groupby(
        ["metric", "predictor"], sort=True
    ):
        pooled = np.average(part["% inside"], weights=part["values"])
        print(
            f"  {metric:16s} {predictor:8s} {part['% inside'].mean():5.1f}% over "
            f"{len(part)} sources (pooled {pooled:5.1f}%)"
        )


def table(records: list[dict[str, object]]) -> pd.DataFrame:
    """Per check x runtime x metric (and x hardware): rows, % inside / below / above, and
    rows with no interval."""
    frame = pd.DataFrame(records)
    lines = []
    for keys in (["check", "runtime", "metric"], ["check", "runtime", "hw", "metric"]):
        for group, part in frame.groupby(keys, sort=True):
            given = part[part.verdict != "no interval"]
            line = dict(zip(keys, group, strict=True))
            line.setdefault("hw", "all")
            line["rows"] = len(part)
            line["no interval"] = len(part) - len(given)
            for verdict in ("inside", "below", "above"):
                share = (given.verdict == verdict).mean() if len(given) else np.nan
                line[f"% {verdict}"] = 100 * share
            lines.append(line)
    columns = ["check", "runtime", "hw", "metric", "rows", "no interval"]
    columns += ["% inside", "% below", "% above"]
    return pd.DataFrame(lines)[columns].sort_values(["check", "runtime", "metric", "hw"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtimes", default=",".join(RUNTIME_DATA), help="comma-separated")
    parser.add_argument(
        "--per-source",
        metavar="HELD_OUT_CSV",
        help="check 3 only, on benchmarks/transfer_profiles.py --save output",
    )
    args = parser.parse_args(argv)
    if args.per_source:
        print_per_source(args.per_source)
        return 0
    chosen = [name.strip() for name in args.runtimes.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(RUNTIME_DATA))
    if unknown:
        parser.error(f"--runtimes: unknown {unknown[0]!r}; accepted: {', '.join(RUNTIME_DATA)}")
    print("Leave one hardware out, nested (calibrated without the hardware, intervals from")
    print("the other hardware's cross-validated error):")
    records = [record for runtime in chosen for record in nested_records(runtime)]
    records += external_records()
    result = table(records)
    print("\n80% intervals: share of measured values inside, below (measured faster) and above")
    print(result.to_string(index=False, na_rep="-", float_format=lambda value: f"{value:5.1f}"))
    for check, part in pd.DataFrame(records).groupby("check", sort=True):
        given = part[part.verdict != "no interval"]
        print(
            f"  {check}: {len(given)} of {len(part)} measured values given an interval, "
            f"{100 * (given.verdict == 'inside').mean():.1f}% inside (an 80% interval: 80%)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
