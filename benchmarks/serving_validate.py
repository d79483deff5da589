"""Serving simulator against published serving measurements (data/validation/serving/).

Every CSV there has one measured number per row (the columns are described in that
folder's README): the set-up (model, hardware preset, TP, bits, scheduler settings,
scenario: ``static`` batch, ``offline`` = every request at t = 0, or ``rate`` = Poisson
arrivals at ``rate_per_s``; fixed or ShareGPT-like lengths; the engine's logged KV
capacity where the source states it) and one metric with its statistic. Rows of one set-up are simulated once (`search.serving.run`, the row's
runtime profile from ``data/runtimes/`` where one exists, ``ideal`` physics otherwise;
every profile was calibrated on LLM-Inference-Bench rows, none of which is here), and
the script prints, per measured number, the simulated one (the mean over ``--seeds``
draws of arrivals and lengths where the workload is random, with their relative
standard deviation) and the signed error ``simulated / measured - 1``, then whether the issue's target is met: throughput, P50
and mean latencies within 15 %, P99 (and P90, P95) within 25 %, on at least 80 % of
the numbers, per source and per client model (``closed`` rows: closed-loop clients of
``concurrency`` requests in flight, scored over the steady part of the run,
`steady_summary`; ``rate``: open loop; ``static`` / ``offline``: all at once). A MISSED line carries the reason
found (no profile for the stack, an effect the simulator does not model, or the figure
reading error). Inter-token latency (ITL) is compared with the simulated gaps between
a request's streamed chunks (`search.serving.emissions`), as the benchmark scripts
record it. A row whose ``runtime`` states vLLM's ``--num-scheduler-steps N`` (the
source's command line) is simulated with multi-step scheduling of N steps
(`SchedulerConfig.scheduler_steps`); ``--steps 1`` overrides it to compare.

Run: ``python benchmarks/serving_validate.py [--source NAME] [--profile ideal] [--seeds 5]
[--steps N] [--request-overhead-ms MS] [--async-scheduling] [--brief]``.
"""

from __future__ import annotations

import argparse
import csv
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from calibration.serving_costs import adapt_profile, gemm_scale, newer, stack_of
from genz import Parallelism, Precision, RuntimeProfile, load_model, load_runtime
from roofline import InputError, Platform, data_dir, load_platform
from search.serving import (
    SchedulerConfig,
    ServingResult,
    Workload,
    build_replica,
    run,
    sharegpt_lengths,
)

FOLDER = data_dir() / "validation" / "serving"
SETUP = (
    "model",
    "hardware",
    "tp",
    "weight_bits",
    "activation_bits",
    "kv_bits",
    "runtime",
    "profile",
    "scenario",
    "rate_per_s",
    "requests",
    "lengths",
    "input_tokens",
    "output_tokens",
    "length_cv",
    "policy",
    "max_sequences",
    "max_batched_tokens",
    "memory_utilization",
    "kv_capacity_tokens",
    "concurrency",
    "kv_free_fraction",
)
#: Set-up columns a file may leave out (blank): closed-loop clients and a KV budget
#: stated as TensorRT-LLM's share of the memory left after weights.
OPTIONAL = ("concurrency", "kv_free_fraction")
MEASURE = ("metric", "statistic", "measured", "reading_error", "source", "locator", "read")
SCENARIOS = ("static", "offline", "rate", "closed")
#: scenario -> client model of the benchmark that measured it
CLIENTS = {
    "static": "all at once",
    "offline": "all at once",
    "rate": "open loop",
    "closed": "closed loop",
}
LENGTHS = ("fixed", "sharegpt")
#: metric -> (summary key stem of `search.serving.summarise`, factor to the row's unit)
METRICS = {
    "output_tokens_per_s": ("throughput_tokens_per_s", 1.0),
    "requests_per_s": ("throughput_requests_per_s", 1.0),
    "ttft_ms": ("ttft_s", 1e3),
    "tpot_ms": ("tpot_s", 1e3),
    "itl_ms": ("itl_s", 1e3),
    "e2e_ms": ("e2e_s", 1e3),
}
STATISTICS = ("value", "mean", "p50", "p90", "p95", "p99")
#: statistic -> target on |signed error| (issue #14: throughput, P50 15 %, P99 25 %; the
#: mean is judged like the P50 and the P90 like the P99)
TARGETS = {"value": 0.15, "mean": 0.15, "p50": 0.15, "p90": 0.25, "p95": 0.25, "p99": 0.25}


@dataclass(frozen=True)
class Measurement:
    """One published number of a set-up (``reading_error`` in the metric's unit)."""

    metric: str
    statistic: str
    measured: float
    reading_error: float
    source: str
    locator: str
    read: str


def load_rows(folder: Path = FOLDER) -> dict[str, dict[tuple[str, ...], list[Measurement]]]:
    """Every CSV of ``folder``: file name -> set-up (the `SETUP` columns) -> its numbers."""
    files: dict[str, dict[tuple[str, ...], list[Measurement]]] = {}
    for path in sorted(folder.glob("*.csv")):
        with path.open(encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            columns = [c for c in SETUP if c not in OPTIONAL] + list(MEASURE)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"{path.name}: line 1: missing column {missing[0]!r}")
            setups: dict[tuple[str, ...], list[Measurement]] = {}
            for line, row in enumerate(reader, start=2):
                if row["metric"] not in METRICS or row["statistic"] not in STATISTICS:
                    raise InputError(
                        f"{path.name}: line {line}: metric/statistic {row['metric']!r}/"
                        f"{row['statistic']!r} not in {sorted(METRICS)} x {STATISTICS}"
                    )
                if row["scenario"] not in SCENARIOS or row["lengths"] not in LENGTHS:
                    raise InputError(
                        f"{path.name}: line {line}: scenario must be one of {SCENARIOS} and "
                        f"lengths one of {LENGTHS}"
                    )
                if row["scenario"] == "closed" and not row.get("concurrency"):
                    raise InputError(f"{path.name}: line {line}: closed scenario needs concurrency")
                key = tuple(row.get(c) or "" for c in SETUP)
                setups.setdefault(key, []).append(
                    Measurement(
                        row["metric"],
                        row["statistic"],
                        float(row["measured"]),
                        float(row["reading_error"] or 0),
                        row["source"],
                        row["locator"],
                        row["read"],
                    )
                )
            files[path.name] = setups
    return files


def workload(setup: dict[str, str], seed: int = 0) -> Workload:
    """The set-up's requests: all at t = 0 (static, offline; closed: all ready at 0,
    at most ``concurrency`` in flight) or Poisson at the rate."""
    rng = np.random.default_rng(seed)
    n = int(setup["requests"])
    if setup["scenario"] == "rate":
        gaps = rng.exponential(1.0 / float(setup["rate_per_s"]), size=n)
        arrivals = np.cumsum(gaps) - gaps[0]
    else:
        arrivals = np.zeros(n)
    mean_in, mean_out = float(setup["input_tokens"]), float(setup["output_tokens"])
    if setup["lengths"] == "sharegpt":
        inputs, outputs = sharegpt_lengths(mean_in, mean_out, float(setup["length_cv"]), n, rng)
    else:
        inputs = np.full(n, int(mean_in), np.int64)
        outputs = np.full(n, int(mean_out), np.int64)
    concurrency = int(setup["concurrency"]) if setup.get("concurrency") else None
    return Workload(
        arrivals, inputs, outputs, np.zeros(n, np.int64), setup["scenario"], None, concurrency
    )


def scheduler_steps(setup: dict[str, str]) -> int:
    """vLLM's ``--num-scheduler-steps N`` where the row's runtime states it, else 1."""
    found = re.search(r"--num-scheduler-steps (\d+)", setup["runtime"])
    return int(found.group(1)) if found else 1


#: Engines whose stated version overlaps host scheduling with the GPU step by default
#: (`SchedulerConfig.async_scheduling`): TensorRT-LLM's PyTorch backend
#: (``disable_overlap_scheduler=False``, tensorrt_llm/llmapi/llm_args.py), SGLang from
#: 0.4 (its overlap scheduler), vLLM run with ``--async-scheduling``.
OVERLAPPING = re.compile(r"PyTorch backend|SGLang v?0\.(?:[4-9]|\d\d)|--async-scheduling")


def overlaps(setup: dict[str, str]) -> bool:
    """Whether the row's engine overlaps scheduling with the GPU (`OVERLAPPING`)."""
    return bool(OVERLAPPING.search(setup["runtime"]))


def simulate(
    setup: dict[str, str],
    profile: str | None = None,
    seed: int = 0,
    steps: int | None = None,
    request_overhead_s: float = 0.0,
    async_scheduling: bool = False,
    chunk_overhead_s: float = 0.0,
    stack_rules: StackRules | None = None,
) -> dict[str, float]:
    """Summary (`search.serving.summarise`) of the set-up on its replica; ``profile``
    overrides the row's runtime profile and ``steps`` its scheduler steps. A stated ``kv_capacity_tokens`` (an engine's
    logged KV cache size) replaces the one the replica derives from memory.
    ``async_scheduling`` overlaps host and device time, ``request_overhead_s`` and
    ``chunk_overhead_s`` are the front-end costs (`SchedulerConfig`); ``stack_rules``
    adapts the row's profile to its device and version family (`StackRules`)."""
    name = profile or setup["profile"]
    requests = workload(setup, seed)
    platform = load_platform(setup["hardware"])
    runtime = None if name == "ideal" else load_runtime(name)
    if runtime is not None and stack_rules is not None:
        runtime = stack_rules.adapt(runtime, platform, setup)
    replica = build_replica(
        load_model(setup["model"]),
        platform,
        requests,
        precision=Precision(
            weight_bits=float(setup["weight_bits"]),
            activation_bits=float(setup["activation_bits"]),
            kv_bits=float(setup["kv_bits"]),
        ),
        parallelism=Parallelism(tp=int(setup["tp"])),
        config=SchedulerConfig(
            policy=setup["policy"],
            max_sequences=int(setup["max_sequences"]),
            max_batched_tokens=int(setup["max_batched_tokens"]),
            memory_utilization=float(setup["memory_utilization"]),
            scheduler_steps=scheduler_steps(setup) if steps is None else steps,
            kv_free_fraction=float(setup["kv_free_fraction"])
            if setup.get("kv_free_fraction")
            else None,
            request_overhead_s=request_overhead_s,
            chunk_overhead_s=chunk_overhead_s,
            async_scheduling=async_scheduling,
        ),
        runtime=runtime,
    )
    if setup["kv_capacity_tokens"]:
        replica = replace(replica, kv_capacity_tokens=int(setup["kv_capacity_tokens"]))
    result = run(requests, replica)
    if setup["scenario"] == "closed":
        return steady_summary(result, int(setup["concurrency"]))
    return result.summary


@dataclass(frozen=True)
class StackRules:
    """How a row's runtime profile is adapted (`calibration.serving_costs`):
    ``cited_gemm``: compute efficiency times the device's cited achievable-GEMM scale
    (`gemm_scale`); ``families``: on a row of a version family later than the
    profile's (`newer`), the profile's per-sequence cost is not charged (a fitted
    per-chunk cost, `SchedulerConfig.chunk_overhead_s`, may stand in for it)."""

    cited_gemm: bool = False
    families: bool = False

    def adapt(
        self, runtime: RuntimeProfile, platform: Platform, setup: dict[str, str]
    ) -> RuntimeProfile:
        scale = (
            gemm_scale(runtime, setup["hardware"], float(setup["activation_bits"]))
            if self.cited_gemm
            else 1.0
        )
        foreign = self.families and newer(runtime, stack_of(setup["runtime"]))
        return adapt_profile(runtime, platform, scale, 0.0 if foreign else None)


def steady_summary(result: ServingResult, concurrency: int) -> dict[str, float]:
    """Closed-loop figures over the steady part of the run, as GenAI-Perf measures in
    a stable window after warm-up: the requests sent after the first ``concurrency``
    and before the last ``concurrency`` (all of them when that leaves none); throughput
    = those requests (and their output tokens) over the time from the first of them
    being sent to the last of them finishing (so throughput x mean E2E <= concurrency,
    Little's law)."""
    n = len(result.arrival_s)
    window = np.arange(n)
    if n > 2 * concurrency:
        window = window[concurrency : n - concurrency]
    start = float(result.arrival_s[window].min())
    end = float((result.arrival_s + result.e2e_s)[window].max())
    summary = dict(result.summary)
    summary["throughput_requests_per_s"] = len(window) / (end - start)
    summary["throughput_tokens_per_s"] = float(result.output_tokens[window].sum()) / (end - start)
    for name in ("ttft_s", "tpot_s", "e2e_s"):
        values = getattr(result, name)[window]
        values = values[np.isfinite(values)]
        summary[f"{name}_mean"] = float(values.mean())
        for q in (50, 90, 95, 99):
            summary[f"{name}_p{q}"] = float(np.percentile(values, q))
    return summary


def simulated_value(summary: dict[str, float], metric: str, statistic: str) -> float:
    """The summary's figure for a measured metric and statistic, in the row's unit."""
    stem, factor = METRICS[metric]
    key = stem if statistic == "value" else f"{stem}_{statistic}"
    return summary[key] * factor


def miss_reason(
    setup: dict[str, str], m: Measurement, error: float, profile: str, spread: float
) -> str:
    """What the data say about a missed row (facts of the set-up, not a fit);
    ``spread`` is the seed-to-seed standard deviation over the simulated value."""
    reasons = ["simulated " + ("higher" if error > 0 else "lower")]
    runtime = setup["runtime"]
    if "num-scheduler-steps" in runtime:
        reasons.append(
            "multi-step scheduling modelled as blocks of steps (no CPU-GPU overlap, "
            "no detokenizer or HTTP time)"
        )
    if "guaranteed_no_evict" in runtime:
        reasons.append("guaranteed_no_evict reserves KV for the whole sequence; not modelled")
    if "AWQ" in runtime:
        reasons.append("AWQ dequantising kernels costed as plain 4-bit weight reads")
    if profile == "ideal":
        reasons.append(f"no runtime profile for {runtime.split(' (')[0]}: ideal physics")
    if m.reading_error / m.measured > TARGETS[m.statistic] / 2:
        reasons.append(f"figure read to +-{m.reading_error:g}")
    if spread > TARGETS[m.statistic] / 2:
        reasons.append(f"seed-to-seed spread +-{spread:.0%}")
    if setup["lengths"] == "sharegpt" and m.metric in ("ttft_ms", "e2e_ms"):
        reasons.append("ShareGPT lengths modelled as lognormal of assumed cv")
    return "; ".join(reasons)


def label(setup: dict[str, str]) -> str:
    load = {
        "rate": f"{setup['rate_per_s']}/s",
        "offline": "offline",
        "static": "static",
        "closed": f"concurrency {setup.get('concurrency')}",
    }
    lengths = (
        f"{setup['input_tokens']}/{setup['output_tokens']}"
        if setup["lengths"] == "fixed"
        else f"ShareGPT {setup['input_tokens']}/{setup['output_tokens']}"
    )
    return (
        f"{setup['model']} {setup['tp']}x{setup['hardware']} {setup['runtime'].split(' (')[0]} "
        f"{load[setup['scenario']]} n={setup['requests']} {lengths}"
    )


#: Share of a group's numbers that must be within target (issue #24)
SHARE_TARGET = 0.8


def group_of(m: Measurement) -> str:
    """Throughput, latency P50 / mean (15 %) or latency tail P90-P99 (25 %)."""
    if m.metric.endswith("per_s"):
        return "throughput"
    return "latency p50/mean" if m.statistic in ("p50", "mean") else "latency p90-p99"


def report(label_: str, errors: list[tuple[float, bool]]) -> str:
    """``label_: k of n within target (share; MAPE) met / MISSED``."""
    met = sum(ok for _, ok in errors)
    share = met / len(errors)
    mape = float(np.mean([abs(e) for e, _ in errors]))
    verdict = "met" if share >= SHARE_TARGET else "MISSED"
    return (
        f"{label_}: {met} of {len(errors)} within target ({share:.0%}; MAPE {mape:.0%}) "
        f"-> {verdict} (target: {SHARE_TARGET:.0%} of the numbers)"
    )


@dataclass(frozen=True)
class Options:
    """How every set-up is simulated: ``profile`` for every row (None: the row's),
    ``seeds`` for random workloads, ``steps`` (None: the row's), front-end costs
    (s; `SchedulerConfig`), overlap scheduling on `OVERLAPPING` engines, profile
    adaptation (`StackRules`)."""

    profile: str | None = None
    seeds: int = 5
    steps: int | None = None
    request_overhead_s: float = 0.0
    chunk_overhead_s: float = 0.0
    async_scheduling: bool = False
    stack_rules: StackRules | None = None


def score_setup(
    name: str, setup: dict[str, str], measurements: list[Measurement], options: Options
) -> list[dict[str, object]]:
    """One row per measured number of the set-up: its set-up, measured and simulated
    value (mean over seeds), seed-to-seed ``spread``, signed ``error``, ``met``,
    ``in_flight`` (simulated requests in the engine: throughput x mean E2E) and
    ``queued`` (simulated mean queueing delay over mean TTFT)."""
    random = setup["scenario"] == "rate" or setup["lengths"] == "sharegpt"
    seeds = range(options.seeds if random else 1)
    steps = scheduler_steps(setup) if options.steps is None else options.steps
    overlap = options.async_scheduling and overlaps(setup)
    summaries = [
        simulate(
            setup,
            options.profile,
            seed,
            steps,
            options.request_overhead_s,
            overlap,
            options.chunk_overhead_s,
            options.stack_rules,
        )
        for seed in seeds
    ]
    in_flight = float(
        np.mean([s["throughput_requests_per_s"] * s["e2e_s_mean"] for s in summaries])
    )
    queued = float(np.mean([s.get("queue_s_mean", np.nan) / s["ttft_s_mean"] for s in summaries]))
    rows: list[dict[str, object]] = []
    for m in measurements:
        draws = np.array([simulated_value(s, m.metric, m.statistic) for s in summaries])
        value = float(draws.mean())
        spread = float(draws.std(ddof=1) / value) if len(draws) > 1 else 0.0
        error = value / m.measured - 1
        row: dict[str, object] = {"file": name, **setup}
        rows.append(
            row
            | {"metric": m.metric, "statistic": m.statistic}
            | {"measured": m.measured, "simulated": value, "error": error}
            | {"met": abs(error) <= TARGETS[m.statistic], "spread": spread}
            | {"in_flight": in_flight, "queued": queued}
            | {"steps": steps, "overlap": overlap, "seeds": len(seeds)}
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default="", help="only CSV files whose name contains this")
    parser.add_argument("--profile", default=None, help="profile for every row (e.g. ideal)")
    parser.add_argument(
        "--seeds",
        type=int,
        default=5,
        help="draws of arrivals and lengths averaged for random workloads (default 5)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="scheduler steps for every row (default: as each row's runtime states, else 1)",
    )
    parser.add_argument(
        "--request-overhead-ms",
        type=float,
        default=0.0,
        help="front-end time per request for every row (SchedulerConfig.request_overhead_s)",
    )
    parser.add_argument(
        "--exclude",
        help="skip set-ups whose printed label matches this regular expression (e.g. the "
        "rows a --request-overhead-ms was fitted on)",
    )
    parser.add_argument(
        "--async-scheduling",
        action="store_true",
        help="overlap scheduling on the rows of engines that do it (OVERLAPPING)",
    )
    parser.add_argument("--brief", action="store_true", help="only the per-group summaries")
    parser.add_argument("--out", help="write every number's set-up, value and error to this CSV")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    if args.steps is not None and args.steps < 1:
        parser.error("--steps must be >= 1")
    options = Options(
        args.profile,
        args.seeds,
        args.steps,
        args.request_overhead_ms / 1e3,
        async_scheduling=args.async_scheduling,
    )
    files = {k: v for k, v in load_rows().items() if args.source in k}
    by_client: dict[tuple[str, str], list[tuple[float, bool]]] = {}
    by_group: dict[str, list[tuple[float, bool]]] = {}
    written: list[dict[str, object]] = []
    for name, setups in files.items():
        count = sum(len(v) for v in setups.values())
        print(f"\n== {name}: {count} measured numbers, {len(setups)} set-ups")
        here: dict[tuple[str, str], list[tuple[float, bool]]] = {}
        for key, measurements in setups.items():
            setup = dict(zip(SETUP, key, strict=True))
            if args.exclude and re.search(args.exclude, label(setup)):
                continue
            profile = args.profile or setup["profile"]
            rows = score_setup(name, setup, measurements, options)
            written.extend(rows)
            if not args.brief:
                first = rows[0]
                print(
                    f"{label(setup)}  [profile {profile}, {first['steps']} scheduler step(s), "
                    f"{first['seeds']} seed(s){', overlap scheduling' if first['overlap'] else ''}]"
                )
            client = CLIENTS[setup["scenario"]]
            for m, row in zip(measurements, rows, strict=True):
                error, met = float(row["error"]), bool(row["met"])  # type: ignore[arg-type]
                for table in (here, by_client):
                    table.setdefault((client, group_of(m)), []).append((error, met))
                by_group.setdefault(group_of(m), []).append((error, met))
                if args.brief:
                    continue
                spread = float(row["spread"])  # type: ignore[arg-type]
                reason = miss_reason(setup, m, error, profile, spread)
                verdict = "met" if met else f"MISSED ({reason})"
                print(
                    f"    {m.metric:<19} {m.statistic:<5} measured {m.measured:>10.4g}  "
                    f"simulated {row['simulated']:>10.4g} (+-{spread:>4.0%})  error {error:>+7.1%}  "
                    f"target {TARGETS[m.statistic]:.0%}: {verdict}"
                )
        for (client, group), errors in sorted(here.items()):
            print("  " + report(f"{name} {client} {group}", errors))
    print("\n== all files, by client model")
    for (client, group), errors in sorted(by_client.items()):
        print(report(f"{client} {group}", errors))
    print("\n== all files")
    for group, errors in sorted(by_group.items()):
        print(report(group, errors))
    if args.out and written:
        with open(args.out, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(written[0]))
            writer.writeheader()
            writer.writerows(written)


if __name__ == "__main__":
    main()
