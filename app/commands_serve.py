"""``codesign serve``: a replica under load (continuous batching simulation),
latency percentiles, goodput, and capacity planning (``--find-max-rate``,
``--find-replicas``)."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any

from roofline import InputError

from .commands import add_command
from .platform_args import add_platform_arguments, platform_from_args
from .runtime_output import add_runtime_argument, runtime_from_args

POLICY_CHOICES = ("continuous", "chunked", "static", "disaggregated")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``serve``."""
    parser = add_command(subparsers, "serve")
    parser.add_argument("--model", required=True, help="model preset name or path to a config.json")
    add_platform_arguments(parser)
    add_runtime_argument(parser)
    for flag, label in (("--tp", "tensor"), ("--pp", "pipeline"), ("--ep", "expert")):
        parser.add_argument(flag, type=int, default=1, help=f"{label}-parallel degree (default 1)")
    parser.add_argument("--wbits", type=float, help="weight bits (default: the model's)")
    parser.add_argument("--abits", type=float, default=16.0, help="activation bits (default 16)")
    parser.add_argument("--kvbits", type=float, default=16.0, help="KV-cache bits (default 16)")
    load = parser.add_argument_group("workload")
    load.add_argument("--rate", type=float, help="requests per second (Poisson unless --burst-cv)")
    load.add_argument("--duration", type=float, default=600.0, help="seconds of arrivals (600)")
    load.add_argument("--use-case", default="chat", help="length preset (default chat)")
    load.add_argument("--input", type=float, help="mean prompt tokens (default: the use case's)")
    load.add_argument("--output", type=float, help="mean output tokens (default: the use case's)")
    load.add_argument("--length-cv", type=float, default=0.5, help="lognormal CV of lengths (0.5)")
    load.add_argument("--burst-cv", type=float, default=1.0, help="gamma CV of gaps (1 = Poisson)")
    load.add_argument(
        "--prefix-hit-rate", type=float, default=0.0, help="share re-sending a prefix"
    )
    load.add_argument("--prefix-tokens", type=int, default=0, help="tokens of that shared prefix")
    load.add_argument(
        "--trace", help="CSV with arrival_s,input_tokens,output_tokens (replaces rate)"
    )
    load.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    sched = parser.add_argument_group("scheduler")
    sched.add_argument("--policy", choices=POLICY_CHOICES, default="continuous")
    sched.add_argument("--max-seqs", type=int, default=256, help="sequences per step (256)")
    sched.add_argument(
        "--max-batched-tokens", type=int, help="token budget per step (8192; chunked 512)"
    )
    sched.add_argument("--block-tokens", type=int, default=16, help="KV block size (16)")
    sched.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    sched.add_argument("--preemption", choices=("recompute", "swap"), default="recompute")
    sched.add_argument(
        "--link-gb-per-s",
        type=float,
        help="disaggregated KV link per device, GB/s (default: scale-out)",
    )
    slo = parser.add_argument_group("SLO and capacity planning")
    slo.add_argument("--slo-ttft-p99-s", type=float, help="P99 time to first token limit, s")
    slo.add_argument("--slo-tpot-p99-ms", type=float, help="P99 time per output token limit, ms")
    search = slo.add_mutually_exclusive_group()
    search.add_argument("--find-max-rate", action="store_true", help="highest rate meeting the SLO")
    search.add_argument("--find-replicas", action="store_true", help="fewest replicas for --rate")
    parser.add_argument("--out", help="write the per-request CSV here")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run_serve)


def _replica_builder(args: argparse.Namespace, policy: str) -> Any:
    from genz import Parallelism, Precision, load_model
    from search.serving import SchedulerConfig, build_replica

    model, platform = load_model(args.model), platform_from_args(args)
    runtime = runtime_from_args(args)
    precision = Precision(
        weight_bits=args.wbits or model.default_weight_bits,
        activation_bits=args.abits,
        kv_bits=args.kvbits,
    )
    parallelism = Parallelism(tp=args.tp, pp=args.pp, ep=args.ep)
    budget = args.max_batched_tokens or (512 if policy == "chunked" else 8192)
    config = SchedulerConfig(
        policy=policy,
        max_sequences=args.max_seqs,
        max_batched_tokens=budget,
        block_tokens=args.block_tokens,
        memory_utilization=args.gpu_memory_utilization,
        preemption=args.preemption,
    )

    def build(workload: Any) -> Any:
        return build_replica(
            model,
            platform,
            workload,
            precision=precision,
            parallelism=parallelism,
            config=config,
            runtime=None if runtime.is_ideal else runtime,
        )

    return build, platform


def _workload_maker(args: argparse.Namespace) -> Any:
    from search.serving import synthetic_workload

    def make(rate: float) -> Any:
        return synthetic_workload(
            rate,
            args.duration,
            use_case_name=args.use_case,
            input_tokens=args.input,
            output_tokens=args.output,
            length_cv=args.length_cv,
            arrival_cv=args.burst_cv,
            prefix_hit_rate=args.prefix_hit_rate,
            prefix_tokens=args.prefix_tokens,
            seed=args.seed,
        )

    return make


def run_serve(args: argparse.Namespace) -> None:
    """Simulate, or search for the max rate / the fewest replicas, and print."""
    from search.serving import SLO, find_max_rate, find_replicas, load_trace

    slo = SLO(
        ttft_s=args.slo_ttft_p99_s,
        tpot_s=None if args.slo_tpot_p99_ms is None else args.slo_tpot_p99_ms / 1e3,
    )
    make = _workload_maker(args)
    if args.find_max_rate:
        if args.trace or args.policy == "disaggregated":
            raise InputError("--find-max-rate draws its own workload on one replica; drop --trace")
        build, _ = _replica_builder(args, args.policy)
        found = find_max_rate(make, build, slo, start_rate=args.rate or 1.0)
        _print_capacity(args, found, "rate")
        return
    if args.trace:
        workload = load_trace(args.trace)
    elif args.rate is None:
        raise InputError("--rate is required (requests/s), or give --trace")
    else:
        workload = make(args.rate)
    if args.find_replicas:
        if args.policy == "disaggregated":
            raise InputError("--find-replicas runs one colocated policy; pick another --policy")
        build, _ = _replica_builder(args, args.policy)
        _print_capacity(args, find_replicas(workload, build, slo), "replicas")
        return
    result = _simulate(args, workload, slo)
    if args.out:
        _write_csv(args.out, result.request_rows())
    _print_result(args, workload, result)


def _simulate(args: argparse.Namespace, workload: Any, slo: Any) -> Any:
    from search.serving import run, run_disaggregated

    if args.policy == "disaggregated":
        build, platform = _replica_builder(args, "continuous")
        replica = build(workload)
        link = args.link_gb_per_s * 1e9 if args.link_gb_per_s else _default_link(platform)
        return run_disaggregated(workload, replica, replica, link, slo)
    build, _ = _replica_builder(args, args.policy)
    replica = build(workload)
    if args.no_progress or len(workload) < 20_000:
        return run(workload, replica, slo)
    from tqdm import tqdm

    with tqdm(total=len(workload), unit="req", desc="simulating", leave=False) as bar:
        return run(workload, replica, slo, progress=bar.update)


def _default_link(platform: Any) -> float:
    link = platform.interconnect
    if link is None:
        raise InputError(f"{platform.name} has no interconnect; pass --link-gb-per-s")
    return float(link.scaleout_bandwidth_bytes_per_s or link.link_bandwidth_bytes_per_s)


def _write_csv(path: str, columns: dict[str, Any]) -> None:
    target = Path(path)
    if not target.resolve().parent.is_dir():
        raise InputError(f"--out {path}: folder {target.resolve().parent} does not exist")
    names = list(columns)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        writer.writerows(zip(*(columns[name].tolist() for name in names), strict=True))


def _ms(value: float) -> str:
    return f"{value * 1e3:.1f} ms"


def _print_result(args: argparse.Namespace, workload: Any, result: Any) -> None:
    from .formatting import print_json, print_key_values

    summary = result.summary
    if args.json:
        print_json(
            {
                "workload": workload.source,
                "policy": args.policy,
                "runtime": args.runtime,
                **result.to_dict(),
            }
        )
        return
    latency = [
        (
            name,
            " / ".join(_ms(summary[f"{key}_p{p}"]) for p in (50, 90, 99)),
        )
        for name, key in (("TTFT P50/P90/P99", "ttft_s"), ("TPOT P50/P90/P99", "tpot_s"))
    ]
    e2e = " / ".join(f"{summary[f'e2e_s_p{p}']:.2f} s" for p in (50, 90, 99))
    print_key_values(
        [
            ("model / hardware", f"{args.model} on {_replicas(args)}"),
            ("policy, runtime", f"{args.policy}, {args.runtime}"),
            ("workload", workload.source),
            ("requests (finished)", f"{summary['requests']:.0f} ({summary['finished']:.0f})"),
            *latency,
            ("E2E P50/P90/P99", e2e),
            (
                "throughput",
                f"{summary['throughput_tokens_per_s']:.0f} output tokens/s, "
                f"{summary['throughput_requests_per_s']:.2f} requests/s",
            ),
            (
                "goodput (SLO met)",
                f"{summary['goodput_requests_per_s']:.2f} requests/s "
                f"({summary['slo_attainment']:.1%} of requests)",
            ),
            (
                "KV cache",
                f"{summary['kv_capacity_tokens']:.0f} tokens; occupancy mean "
                f"{summary['kv_occupancy_mean']:.0%}, peak {summary['kv_occupancy_peak']:.0%}",
            ),
            (
                "queue",
                f"mean {summary['queue_mean']:.1f}, peak {summary['queue_peak']:.0f}; "
                f"preemptions {summary['preemptions']:.0f}",
            ),
            ("verdict", result.verdict),
        ]
    )


def _replicas(args: argparse.Namespace) -> str:
    devices = f"{args.tp * args.pp * args.ep} x {args.hw}"
    if args.policy == "disaggregated":
        return f"a prefill replica and a decode replica of {devices} each"
    return f"one replica of {devices}"


def _print_capacity(args: argparse.Namespace, found: Any, what: str) -> None:
    from .formatting import print_json, print_key_values

    if args.json:
        print_json(
            {
                "success": found.success,
                "status": found.status,
                "message": found.message,
                what: found.value,
                "evaluations": [list(item) for item in found.evaluations],
                "summary": None if found.result is None else found.result.to_dict(),
                "economics": None if found.economics is None else vars(found.economics),
            }
        )
        return
    pairs = [("search", found.message)]
    pairs.append(
        ("evaluations", ", ".join(f"{v:g}{'+' if ok else '-'}" for v, ok in found.evaluations))
    )
    if found.result is not None:
        summary = found.result.summary
        pairs += [
            ("TTFT P99 there", _ms(summary["ttft_s_p99"])),
            ("TPOT P99 there", _ms(summary["tpot_s_p99"])),
        ]
    money = found.economics
    if money is not None:
        pairs.append(
            ("output tokens/s", f"{money.output_tokens_per_s:.0f} on {money.devices} device(s)")
        )
        if money.j_per_output_token is not None:
            pairs.append(("energy", f"{money.j_per_output_token:.3g} J/token (at TDP)"))
        if money.usd_per_million_output_tokens is not None:
            pairs.append(
                ("cost", f"${money.usd_per_million_output_tokens:.3g} per million output tokens")
            )
    print_key_values(pairs)
