"""Runtime-profile options of ``codesign predict`` and the intervals it prints."""

from __future__ import annotations

import argparse

from calibration import INTERVAL_KINDS, Interval, prediction_intervals
from genz import (
    ModelConfig,
    Prediction,
    RuntimeProfile,
    Scenario,
    list_runtimes,
    load_runtime,
    outside_domain,
    parameter_count,
)
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


def domain_reasons(
    runtime: RuntimeProfile, model: ModelConfig, platform: Platform, scenario: Scenario
) -> list[str]:
    """How the prediction leaves the profile's fitted domain (`genz.outside_domain`);
    empty inside it, or for a profile that records none."""
    if runtime.domain is None:
        return []
    point = {
        "batch": float(scenario.batch),
        "input_tokens": float(scenario.input_tokens),
        "output_tokens": float(scenario.output_tokens),
        "parameters": parameter_count(model).total,
        "tp": float(scenario.parallelism.tp),
        "weight_bits": float(scenario.precision.weight_bits),
    }
    return outside_domain(runtime.domain, platform.name, platform.device_class, point)


def intervals(
    prediction: Prediction,
    runtime: RuntimeProfile,
    platform: Platform,
    outside: bool = False,
) -> dict[str, Interval]:
    """80 % intervals of TTFT and TPOT (from their own held-out errors where measured
    enough), end-to-end latency (s) and throughput (tokens/s) (from the batch-latency
    error): `calibration.prediction_intervals`. ``outside`` (the prediction leaves the
    profile's domain): each interval widened to also hold the ``ideal`` profile's
    interval around the same value (physics' error over every published source)."""
    values = {key: getattr(prediction, key) for key in INTERVAL_KINDS}
    found = prediction_intervals(values, runtime, platform)
    if not outside or runtime.is_ideal:
        return found
    physics = prediction_intervals(values, load_runtime("ideal"), platform)
    return {key: _hull(found[key], physics[key]) for key in found}


def _hull(own: Interval, physics: Interval) -> Interval:
    """The smallest interval holding both (the physics one alone where ``own`` has none)."""
    if physics.low is None or physics.high is None:
        return own
    if own.low is None or own.high is None:
        return Interval(
            own.level, physics.low, physics.high, f"outside the domain: {physics.basis}"
        )
    return Interval(
        own.level,
        min(own.low, physics.low),
        max(own.high, physics.high),
        f"outside the domain: widened to physics' spread over published sources; {own.basis}",
    )


LABELS = (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("end-to-end", "e2e_s"))
#: What an interval covers (measured by benchmarks/interval_coverage.py, docs/accuracy.md).
SCOPE = (
    "intervals are the held-out error on set-ups like the profile's calibration data; "
    "another lab's set-up or stack version can fall outside (docs: Serving stacks and accuracy)"
)

#: What physics' interval covers: it fits nothing, so its error is out of source everywhere.
PHYSICS_SCOPE = (
    "physics fits nothing: the interval is its error over every published source, each "
    "source weighted equally (benchmarks/physics_accuracy.py)"
)


def print_intervals(
    prediction: Prediction,
    runtime: RuntimeProfile,
    platform: Platform,
    reasons: list[str] | None = None,
) -> None:
    """One line per metric: value and 80 % interval, then each interval's basis (one
    line for the metrics sharing one); ``reasons`` (`domain_reasons`): one line saying
    how the prediction leaves the profile's domain, the intervals widened."""
    found = intervals(prediction, runtime, platform, outside=bool(reasons))
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
    if reasons:
        pairs.append(("outside domain", "; ".join(reasons)))
    if any(found[key].low is not None for _, key in LABELS):
        pairs.append(("scope", PHYSICS_SCOPE if runtime.is_ideal else SCOPE))
    print()
    print(f"runtime {runtime.name}:")
    print_key_values(pairs)
