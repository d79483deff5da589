"""Runtime-profile options of ``codesign predict`` and the intervals it prints."""

from __future__ import annotations

import argparse

from calibration import INTERVAL_KINDS, Interval, prediction_intervals
from genz import Prediction, RuntimeProfile, list_runtimes, load_runtime
from roofline import Platform

from ..formatting import human_seconds, print_key_values


def add_runtime_argument(parser: argparse.ArgumentParser) -> None:
    """``--runtime NAME|file.yaml`` (not given: ``ideal``, physics only; `runtime_from_args`)."""
    parser.add_argument(
        "--runtime",
        help=f"serving-stack profile: {', '.join(list_runtimes())} or a .yaml file (default ideal)",
    )


def runtime_from_args(args: argparse.Namespace) -> RuntimeProfile:
    """The profile named by ``--runtime`` (``ideal`` when not given)."""
    return load_runtime(args.runtime or "ideal")


def intervals(
    prediction: Prediction, runtime: RuntimeProfile, platform: Platform
) -> dict[str, Interval]:
    """80 % intervals of TTFT and TPOT (from their own held-out errors where measured
    enough), end-to-end latency (s) and throughput (tokens/s) (from the batch-latency
    error): `calibration.prediction_intervals`."""
    return prediction_intervals(
        {key: getattr(prediction, key) for key in INTERVAL_KINDS}, runtime, platform
    )


LABELS = (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("end-to-end", "e2e_s"))
#: What an interval covers (measured by benchmarks/interval_coverage.py, docs/accuracy.md).
SCOPE = (
    "intervals are the held-out error on set-ups like the profile's calibration data; "
    "another lab's set-up or stack version can fall outside (docs: Serving stacks and accuracy)"
)


def print_intervals(prediction: Prediction, runtime: RuntimeProfile, platform: Platform) -> None:
    """One line per metric: value and 80 % interval, then each interval's basis (one
    line for the metrics sharing one)."""
    found = intervals(prediction, runtime, platform)
    pairs = []
    for label, key in LABELS:
        interval = found[key]
        value = human_seconds(getattr(prediction, key))
        if interval.low is None or interval.high is None:
            pairs.append((label, f"{value}  (no interval)"))
        else:
            pairs.append(
                (
                    label,
                    f"{value}, 80% interval {human_seconds(interval.low)} - "
                    f"{human_seconds(interval.high)}",
                )
            )
    bases: dict[str, list[str]] = {}
    for label, key in LABELS:
        bases.setdefault(found[key].basis, []).append(label)
    for basis, labels in bases.items():
        pairs.append((f"basis ({', '.join(labels)})", basis))
    if any(found[key].low is not None for _, key in LABELS):
        pairs.append(("scope", SCOPE))
    print()
    print(f"runtime {runtime.name}:")
    print_key_values(pairs)
