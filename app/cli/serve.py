"""``codesign serve``: a replica (or disaggregated prefill and decode pools) under
load (continuous batching simulation), latency percentiles, goodput, prefix-cache
hits, capacity planning (``--find-max-rate``, ``--find-replicas``) and sweeps over
rates and policies (``--sweep-rates``, serial or on Ray)."""

from __future__ import annotations

import argparse
import csv
import functools
import math
from pathlib import Path
from typing import Any

from roofline import InputError

from ..serving_stack import (
    StackChoice,
    adapted_runtime,
    check_stack_flags,
    chunk_seconds,
    stack_choice,
    stack_json,
    stack_rows,
)
from .commands import add_command
from .platform_args import add_platform_arguments, platform_from_args
from .runtime_output import add_runtime_argument, runtime_from_args
from .scenario_args import (
    add_architecture_arguments,
    add_lora_arguments,
    add_offload_arguments,
    lora_model_from_args,
    model_from_args,
    offload_from_args,
)
from .serve_features import lora_json, lora_rows
from .serve_modes import add_mode_arguments, check_mode_flags, with_modes
from .serve_stack import add_stack_arguments

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
    add_offload_arguments(parser)
    add_architecture_arguments(parser)
    add_lora_arguments(parser)
    load = parser.add_argument_group("workload")
    load.add_argument("--rate", type=float, help="requests per second (Poisson unless --burst-cv)")
    load.add_argument("--duration", type=float, default=600.0, help="seconds of arrivals (600)")
    load.add_argument(
        "--num-requests",
        type=int,
        help="send exactly N requests at --rate (instead of those falling in --duration)",
    )
    load.add_argument(
        "--max-concurrency",
        type=int,
        help="closed-loop clients: at most C requests in flight, the next sent when one "
        "finishes (vllm bench serve --max-concurrency); --rate then defaults to inf "
        "(every request ready at 0) and --num-requests is needed",
    )
    load.add_argument("--use-case", default="chat", help="length preset (default chat)")
    load.add_argument("--input", type=float, help="mean prompt tokens (default: the use case's)")
    load.add_argument("--output", type=float, help="mean output tokens (default: the use case's)")
    load.add_argument("--length-cv", type=float, default=0.5, help="lognormal CV of lengths (0.5)")
    load.add_argument("--burst-cv", type=float, default=1.0, help="gamma CV of gaps (1 = Poisson)")
    load.add_argument(
        "--prefix-share",
        type=float,
        default=0.0,
        help="share of prompts starting with a shared prefix, in [0, 1] (0)",
    )
    load.add_argument("--prefix-tokens", type=int, default=0, help="tokens of each shared prefix")
    load.add_argument(
        "--prefix-count", type=int, default=1, help="distinct shared prefixes K (default 1)"
    )
    load.add_argument(
        "--prefix-zipf",
        type=float,
        default=1.0,
        help="Zipf exponent s of prefix popularity, weight 1/k^s (1; 0 uniform)",
    )
    load.add_argument(
        "--trace",
        help="CSV with arrival_s,input_tokens,output_tokens and optional "
        "prefix_id,prefix_tokens (replaces rate)",
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
        "--scheduler-steps",
        type=int,
        default=1,
        help="multi-step scheduling (vLLM --num-scheduler-steps): plan once per N decode "
        "steps, continuous policy only (default 1)",
    )
    kv = sched.add_mutually_exclusive_group()
    kv.add_argument(
        "--kv-tokens",
        type=int,
        help="KV cache size in tokens as the engine states it (SGLang --max-total-tokens, "
        "TensorRT-LLM max_tokens, an engine log); replaces --gpu-memory-utilization's rule",
    )
    kv.add_argument(
        "--kv-blocks",
        type=int,
        help="KV cache size in blocks of --block-tokens (vLLM --num-gpu-blocks-override)",
    )
    kv.add_argument(
        "--kv-free-fraction",
        type=float,
        help="KV cache = this share of the memory left after weights and activations "
        "(TensorRT-LLM kv_cache_free_gpu_mem_fraction, LMDeploy cache_max_entry_count)",
    )
    sched.add_argument(
        "--request-overhead-ms",
        type=float,
        help="front-end time per request (HTTP, tokenisation), ms, one FIFO front end "
        "(default: the --runtime profile's fitted request_overhead_s, 0 without one)",
    )
    sched.add_argument(
        "--chunk-overhead-ms",
        type=float,
        help="host time per streamed chunk per sequence, serialised with each step, ms "
        "(default: the --engine-version line's fitted one, else 0)",
    )
    add_stack_arguments(parser)
    spec = parser.add_argument_group("speculative decoding (continuous policy or decode pool)")
    spec.add_argument(
        "--spec-tokens",
        type=int,
        help="draft tokens K per sequence per iteration, verified in one pass of K+1 "
        "(vLLM num_speculative_tokens; default: no speculation)",
    )
    spec.add_argument(
        "--spec-acceptance",
        type=float,
        default=0.7,
        help="per-token acceptance rate in [0, 1] (0.7): (1-a^(K+1))/(1-a) tokens per step",
    )
    spec.add_argument(
        "--spec-draft",
        default="ngram",
        help="ngram (prompt lookup, no draft model; default), mtp (the model's MTP "
        "module) or a draft model preset / config.json",
    )
    sched.add_argument(
        "--async-scheduling",
        action="store_true",
        help="overlap scheduling (SGLang, vLLM --async-scheduling, TensorRT-LLM PyTorch "
        "backend): a step takes max(host, device time), not their sum",
    )
    sched.add_argument(
        "--routing",
        choices=("least-loaded", "round-robin"),
        default="least-loaded",
        help="how several replicas (--find-replicas, each pool) share requests: fewest "
        "unfinished on arrival, or in turn (default least-loaded)",
    )
    add_mode_arguments(parser)
    pools = parser.add_argument_group("disaggregated pools (--policy disaggregated)")
    for pool in ("prefill", "decode"):
        count = "N" if pool == "prefill" else "M"
        pools.add_argument(
            f"--{pool}-replicas", type=int, default=1, help=f"{pool} replicas {count} (default 1)"
        )
        pools.add_argument(
            f"--{pool}-tp", type=int, help=f"tensor-parallel degree of a {pool} replica (--tp)"
        )
        pools.add_argument(f"--{pool}-hw", help=f"hardware of the {pool} pool (default --hw)")
    pools.add_argument(
        "--link-gb-per-s",
        type=float,
        help="KV link per device, GB/s (default: the interconnect's, after efficiency)",
    )
    slo = parser.add_argument_group("SLO and capacity planning")
    slo.add_argument("--slo-ttft-p99-s", type=float, help="P99 time to first token limit, s")
    slo.add_argument("--slo-tpot-p99-ms", type=float, help="P99 time per output token limit, ms")
    slo.add_argument("--slo-itl-p99-ms", type=float, help="P99 inter-token latency (TBT) limit, ms")
    slo.add_argument(
        "--slo-queue-p99-s", type=float, help="P99 queueing delay limit (arrival to admission), s"
    )
    search = slo.add_mutually_exclusive_group()
    search.add_argument(
        "--find-max-rate",
        action="store_true",
        help="highest rate meeting the SLO (disaggregated: for the given N prefill and M "
        "decode replicas; --rate is the first rate tried)",
    )
    search.add_argument(
        "--find-replicas",
        action="store_true",
        help="fewest replicas for --rate (disaggregated: fewest prefill and decode)",
    )
    sweep = parser.add_argument_group("sweeps")
    sweep.add_argument(
        "--sweep-rates", help="comma-separated rates, one summary row each (e.g. 5,10,20)"
    )
    sweep.add_argument(
        "--sweep-policies", help="comma-separated policies to sweep with the rates (--policy)"
    )
    sweep.add_argument(
        "--parallel",
        choices=("serial", "ray"),
        default="serial",
        help="run sweep points here or as Ray tasks (pip install '.[distributed]')",
    )
    parser.add_argument("--out", help="write the per-request (sweep: per-point) CSV here")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run_serve)


def _replica_builder(args: argparse.Namespace, policy: str, pool: str | None = None) -> Any:
    """A function building the replica for a workload, and its platform; ``pool``
    (prefill or decode) applies that pool's ``--<pool>-tp`` and ``--<pool>-hw``."""
    from genz import Parallelism, Precision, load_model
    from search.serving import SchedulerConfig, Speculation, build_replica

    tp, hw = args.tp, args.hw
    if pool is not None:
        tp = tp if getattr(args, f"{pool}_tp") is None else getattr(args, f"{pool}_tp")
        hw = getattr(args, f"{pool}_hw") or hw
    model = lora_model_from_args(args, model_from_args(args, load_model(args.model)))
    weight_offload, kv_offload = offload_from_args(args)
    platform = platform_from_args(argparse.Namespace(**{**vars(args), "hw": hw}))
    choice = stack_choice(args, runtime_from_args(args), platform)
    runtime = adapted_runtime(choice, runtime_from_args(args), platform)
    precision = Precision(
        weight_bits=args.wbits or model.default_weight_bits,
        activation_bits=args.abits,
        kv_bits=args.kvbits,
    )
    parallelism = Parallelism(tp=tp, pp=args.pp, ep=args.ep)
    budget = args.max_batched_tokens or (512 if policy == "chunked" else 8192)
    config = SchedulerConfig(
        policy=policy,
        max_sequences=args.max_seqs,
        max_batched_tokens=budget,
        block_tokens=args.block_tokens,
        memory_utilization=args.gpu_memory_utilization,
        preemption=args.preemption,
        scheduler_steps=args.scheduler_steps,
        kv_capacity_tokens=args.kv_tokens,
        kv_blocks=args.kv_blocks,
        kv_free_fraction=args.kv_free_fraction,
        request_overhead_s=_front_end_s(args, runtime, choice),
        chunk_overhead_s=chunk_seconds(args, choice),
        async_scheduling=args.async_scheduling,
    )

    speculation = None
    if args.spec_tokens is not None:
        speculation = Speculation(args.spec_tokens, args.spec_acceptance, args.spec_draft)

    def build(workload: Any) -> Any:
        return build_replica(
            model,
            platform,
            workload,
            precision=precision,
            parallelism=parallelism,
            config=config,
            runtime=None if runtime.is_ideal else runtime,
            speculation=speculation,
            weight_offload=weight_offload,
            kv_offload=kv_offload,
        )

    return build, platform


def _workload_maker(args: argparse.Namespace) -> Any:
    from search.serving import synthetic_workload

    def make(rate: float) -> Any:
        drawn = synthetic_workload(
            rate,
            args.duration,
            use_case_name=args.use_case,
            input_tokens=args.input,
            output_tokens=args.output,
            length_cv=args.length_cv,
            arrival_cv=args.burst_cv,
            prefix_share=args.prefix_share,
            prefix_tokens=args.prefix_tokens,
            prefix_count=args.prefix_count,
            prefix_zipf=args.prefix_zipf,
            seed=args.seed,
            requests=args.num_requests,
            max_concurrency=args.max_concurrency,
        )
        return with_modes(drawn, args)

    return make


def slo_from_args(args: argparse.Namespace) -> Any:
    """The SLO of the --slo-* flags (ms flags converted to seconds)."""
    from search.serving import SLO

    def seconds(ms: float | None) -> float | None:
        return None if ms is None else ms / 1e3

    return SLO(
        ttft_s=args.slo_ttft_p99_s,
        tpot_s=seconds(args.slo_tpot_p99_ms),
        itl_s=seconds(args.slo_itl_p99_ms),
        queue_s=args.slo_queue_p99_s,
    )


def _check_client_flags(args: argparse.Namespace) -> None:
    """What --num-requests and --max-concurrency go with (their ranges are in the table
    of bounds, `roofline.FLAG_BOUNDS_BY_COMMAND`, checked before the command runs)."""
    if args.max_concurrency is None:
        return
    if args.num_requests is None:
        raise InputError("--max-concurrency needs --num-requests N (the requests the clients send)")
    if args.trace:
        raise InputError("--max-concurrency draws its own requests; drop --trace")
    if args.find_replicas:
        raise InputError(
            "--max-concurrency (closed-loop clients) runs on one colocated replica or on "
            "--policy disaggregated pools; drop --find-replicas"
        )


def _check_speculation_flags(args: argparse.Namespace, policies: list[str]) -> None:
    """--spec-acceptance and --spec-draft go with --spec-tokens; speculation runs with
    the continuous policy (or in the decode pool), single-step."""
    if args.spec_tokens is None:
        for flag, default in (("--spec-acceptance", 0.7), ("--spec-draft", "ngram")):
            if getattr(args, flag[2:].replace("-", "_")) != default:
                raise InputError(f"{flag} goes with --spec-tokens K (speculative decoding)")
        return
    other = [policy for policy in policies if policy not in ("continuous", "disaggregated")]
    if other:
        raise InputError(
            f"--spec-tokens (speculative decoding) is simulated with --policy continuous or "
            f"disaggregated, got {other[0]}"
        )
    if args.scheduler_steps != 1:
        raise InputError("--spec-tokens goes with --scheduler-steps 1 (single-step scheduling)")


def _check_pool_flags(args: argparse.Namespace, policies: list[str]) -> None:
    """Pool flags only with the disaggregated policy; replica counts >= 1."""
    from roofline import require_positive

    flags = [f"--{pool}-{what}" for pool in ("prefill", "decode") for what in ("tp", "hw")]
    given = [flag for flag in flags if getattr(args, flag[2:].replace("-", "_")) is not None]
    given += [
        flag
        for flag in ("--prefill-replicas", "--decode-replicas")
        if getattr(args, flag[2:].replace("-", "_")) != 1
    ]
    if args.link_gb_per_s is not None:
        require_positive("--link-gb-per-s", args.link_gb_per_s)
        given.append("--link-gb-per-s")
    if given and "disaggregated" not in policies:
        raise InputError(f"{given[0]} sets a disaggregated pool; add --policy disaggregated")
    if args.scheduler_steps != 1 and any(policy != "continuous" for policy in policies):
        other = next(policy for policy in policies if policy != "continuous")
        raise InputError(
            f"--scheduler-steps {args.scheduler_steps} (multi-step scheduling) is modelled "
            f"for --policy continuous only, got {other}"
        )
    for flag in ("--prefill-replicas", "--decode-replicas", "--prefill-tp", "--decode-tp"):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and not 1 <= value <= 4096:
            raise InputError(f"{flag} must be an integer in [1, 4096], got {value}")


def _policies(args: argparse.Namespace) -> list[str]:
    if not args.sweep_policies:
        return [args.policy]
    names = [name.strip() for name in args.sweep_policies.split(",") if name.strip()]
    for name in names:
        if name not in POLICY_CHOICES:
            raise InputError(
                f"--sweep-policies: {name!r} is not one of {', '.join(POLICY_CHOICES)}"
            )
    if not names:
        raise InputError("--sweep-policies needs at least one policy, e.g. continuous,chunked")
    return names


def _rates(text: str) -> list[float]:
    try:
        rates = [float(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise InputError(f"--sweep-rates must be comma-separated numbers, got {text!r}") from None
    if not rates or not all(0 < rate < 1e6 for rate in rates):
        raise InputError(f"--sweep-rates must be rates in (0, 1e6) requests/s, got {text!r}")
    return rates


def run_serve(args: argparse.Namespace) -> None:
    """Simulate, sweep, or search for the max rate / the fewest replicas, and print."""
    from search.serving import (
        find_disaggregated_max_rate,
        find_max_rate,
        find_replicas,
        load_trace,
    )

    slo = slo_from_args(args)
    policies = _policies(args)
    _check_pool_flags(args, policies)
    _check_client_flags(args)
    _check_speculation_flags(args, policies)
    check_mode_flags(args, policies)
    check_stack_flags(args)
    if args.rate is None and args.max_concurrency is not None and not args.find_max_rate:
        args.rate = float("inf")
    if args.rate == float("inf") and args.num_requests is None:
        raise InputError("--rate inf (every request at once) needs --num-requests N")
    make = _workload_maker(args)
    if args.sweep_policies and not args.sweep_rates:
        raise InputError("--sweep-policies goes with --sweep-rates")
    if args.sweep_rates:
        if args.trace or args.find_max_rate or args.find_replicas:
            raise InputError(
                "--sweep-rates draws a workload per rate and simulates it; drop --trace, "
                "--find-max-rate and --find-replicas"
            )
        _print_sweep(args, _rates(args.sweep_rates), policies, slo)
        return
    if args.find_max_rate:
        if args.trace:
            raise InputError("--find-max-rate draws its own workload at each rate; drop --trace")
        if args.policy == "disaggregated":
            found = find_disaggregated_max_rate(
                make,
                functools.partial(_pools, args),
                slo,
                prefill_replicas=args.prefill_replicas,
                decode_replicas=args.decode_replicas,
                start_rate=args.rate or 1.0,
                routing=args.routing,
            )
        else:
            build, _ = _replica_builder(args, args.policy)
            found = find_max_rate(make, build, slo, start_rate=args.rate or 1.0)
        _print_capacity(args, found, "rate")
        return
    if args.trace:
        workload = with_modes(load_trace(args.trace), args)
    elif args.rate is None:
        raise InputError("--rate is required (requests/s), or give --trace")
    else:
        workload = make(args.rate)
    if args.find_replicas:
        if args.policy == "disaggregated":
            _print_capacity(args, _find_pools(args, workload, slo), "replicas")
            return
        build, _ = _replica_builder(args, args.policy)
        found = find_replicas(workload, build, slo, routing=args.routing)
        _print_capacity(args, found, "replicas")
        return
    result = _simulate(args, workload, slo)
    if args.out:
        _write_csv(args.out, result.request_rows())
    _print_result(args, workload, result)


def _pools(args: argparse.Namespace, workload: Any) -> tuple[Any, Any, Any]:
    """The prefill and decode replicas for ``workload`` and the KV link of N and M."""
    from search.serving import kv_link

    prefill = _replica_builder(args, "continuous", "prefill")[0](workload)
    decode = _replica_builder(args, "continuous", "decode")[0](workload)
    bandwidth = None if args.link_gb_per_s is None else args.link_gb_per_s * 1e9

    def link_for(n: int, m: int) -> Any:
        return kv_link(prefill, decode, n, m, bandwidth)

    return prefill, decode, link_for


def _find_pools(args: argparse.Namespace, workload: Any, slo: Any) -> Any:
    from search.serving import find_disaggregated_replicas

    prefill, decode, link_for = _pools(args, workload)
    return find_disaggregated_replicas(
        workload, prefill, decode, slo, link_for, routing=args.routing
    )


def _simulate(
    args: argparse.Namespace, workload: Any, slo: Any, progress: bool | None = None
) -> Any:
    from search.serving import run, run_disaggregated

    show = not args.no_progress and len(workload) >= 20_000 if progress is None else progress
    if args.policy == "disaggregated":
        prefill, decode, link_for = _pools(args, workload)
        n, m = args.prefill_replicas, args.decode_replicas
        return run_disaggregated(
            workload,
            prefill,
            decode,
            link_for(n, m),
            slo,
            prefill_replicas=n,
            decode_replicas=m,
            routing=args.routing,
        )
    build, _ = _replica_builder(args, args.policy)
    replica = build(workload)
    if not show:
        return run(workload, replica, slo)
    from tqdm import tqdm

    with tqdm(total=len(workload), unit="req", desc="simulating", leave=False) as bar:
        return run(workload, replica, slo, progress=bar.update)


def sweep_point(args: argparse.Namespace, point: tuple[float, str]) -> dict[str, Any]:
    """One sweep row: the workload at the point's rate under its policy (module-level,
    so Ray can ship it to a worker)."""
    from search.serving import sweep_row

    rate, policy = point
    slo = slo_from_args(args)
    here = argparse.Namespace(**{**vars(args), "policy": policy, "rate": rate})
    result = _simulate(here, _workload_maker(here)(rate), slo, progress=False)
    return sweep_row(rate, policy, result)


def _print_sweep(
    args: argparse.Namespace, rates: list[float], policies: list[str], slo: Any
) -> None:
    from search.serving import SWEEP_COLUMNS, run_sweep

    from ..formatting import print_json, print_table

    points = [(rate, policy) for policy in policies for rate in rates]
    rows = run_sweep(
        functools.partial(sweep_point, args), points, args.parallel, not args.no_progress
    )
    if args.out:
        _write_csv(args.out, {name: [row[name] for row in rows] for name in SWEEP_COLUMNS})
    if args.json:
        print_json(rows)
        return
    table = [
        {
            "rate/s": row["rate"],
            "policy": row["policy"],
            "TTFT P50 ms": round(float(row["ttft_s_p50"]) * 1e3, 1),
            "TTFT P99 ms": round(float(row["ttft_s_p99"]) * 1e3, 1),
            "TPOT P50 ms": round(float(row["tpot_s_p50"]) * 1e3, 2),
            "TPOT P99 ms": round(float(row["tpot_s_p99"]) * 1e3, 2),
            "tokens/s": round(float(row["throughput_tokens_per_s"])),
            "goodput req/s": round(float(row["goodput_requests_per_s"]), 2),
            "sustainable": "yes" if row["sustainable"] else "NO",
        }
        for row in rows
    ]
    print_table(table)
    print(f"({len(rows)} points, {args.parallel}; SLO {_slo_text(slo)})")
    for name, value in stack_rows(args, _stack_choices(args)):
        print(f"{name}: {value}")


def _slo_text(slo: Any) -> str:
    parts = []
    if slo.ttft_s is not None:
        parts.append(f"P99 TTFT <= {slo.ttft_s:g} s")
    if slo.tpot_s is not None:
        parts.append(f"P99 TPOT <= {slo.tpot_s * 1e3:g} ms")
    if slo.itl_s is not None:
        parts.append(f"P99 ITL <= {slo.itl_s * 1e3:g} ms")
    if slo.queue_s is not None:
        parts.append(f"P99 queueing delay <= {slo.queue_s:g} s")
    return ", ".join(parts) or "none: goodput counts every finished request"


def _write_csv(path: str, columns: dict[str, Any]) -> None:
    target = Path(path)
    if not target.resolve().parent.is_dir():
        raise InputError(f"--out {path}: folder {target.resolve().parent} does not exist")
    names = list(columns)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        values = [columns[name] for name in names]
        writer.writerows(
            zip(*(v.tolist() if hasattr(v, "tolist") else list(v) for v in values), strict=True)
        )


def _front_end_s(
    args: argparse.Namespace, runtime: Any = None, choice: StackChoice | None = None
) -> float:
    """Front-end time per request, s: --request-overhead-ms, else the --engine-version
    line's fitted one (``choice``), else the fitted one of ``runtime`` (the loaded
    --runtime profile; None: loaded here)."""
    from search.serving import front_end_seconds

    runtime = runtime or runtime_from_args(args)
    stated = None if args.request_overhead_ms is None else args.request_overhead_ms / 1e3
    if stated is None and choice is not None:
        stated = choice.request_s
    return front_end_seconds(None if runtime.is_ideal else runtime, stated)


def _stack_choices(args: argparse.Namespace) -> dict[str, StackChoice | None]:
    """The --engine-version / --device-gemm-rates rules per hardware preset in use
    (--hw, and each disaggregated pool's own)."""
    presets = [args.hw]
    if args.policy == "disaggregated":
        presets += [getattr(args, f"{pool}_hw") or args.hw for pool in ("prefill", "decode")]
    runtime = runtime_from_args(args)
    return {
        hw: stack_choice(
            args, runtime, platform_from_args(argparse.Namespace(**{**vars(args), "hw": hw}))
        )
        for hw in dict.fromkeys(presets)
    }


def _front_end_row(
    args: argparse.Namespace, choice: StackChoice | None = None
) -> list[tuple[str, str]]:
    """The 'front end per request' line, when one is charged, with where it comes from."""
    seconds = _front_end_s(args, choice=choice)
    if seconds == 0:
        return []
    origin = (
        "--request-overhead-ms"
        if args.request_overhead_ms is not None
        else "--engine-version"
        if choice is not None and choice.request_s is not None
        else "profile"
    )
    return [("front end per request", f"{_ms(seconds)} ({origin})")]


def _offload_row(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The 'offload to host' line, when a share of weights or KV is in host memory."""
    weights, kv = offload_from_args(args)
    if not (weights or kv):
        return []
    return [("offload to host", f"weights {weights:.0%}, KV {kv:.0%} (streamed every step)")]


#: Shown for a figure no finished request defines (every request rejected or unfinished).
UNDEFINED = "n/a"


def _ms(value: float) -> str:
    return UNDEFINED if math.isnan(value) else f"{value * 1e3:.1f} ms"


def _per_s(value: float, digits: int, unit: str) -> str:
    return UNDEFINED if math.isnan(value) else f"{value:.{digits}f} {unit}"


def _speculation_json(args: argparse.Namespace) -> dict[str, Any]:
    if args.spec_tokens is None:
        return {}
    return {
        "spec_tokens": args.spec_tokens,
        "spec_acceptance": args.spec_acceptance,
        "spec_draft": args.spec_draft,
    }


def _speculation_line(args: argparse.Namespace) -> list[tuple[str, str]]:
    if args.spec_tokens is None:
        return []
    from search.serving import Speculation

    spec = Speculation(args.spec_tokens, args.spec_acceptance, args.spec_draft)
    return [
        (
            "speculative decoding",
            f"{spec.draft_tokens} draft tokens ({spec.draft}), acceptance "
            f"{spec.acceptance_rate:g}: {spec.expected_tokens:.2f} tokens per step",
        )
    ]


def _print_result(args: argparse.Namespace, workload: Any, result: Any) -> None:
    from ..formatting import print_json, print_key_values

    summary = result.summary
    choices = _stack_choices(args)
    choice = next(iter(choices.values()))
    if args.json:
        print_json(
            {
                "workload": workload.source,
                "policy": args.policy,
                "runtime": args.runtime or "ideal",
                "request_overhead_s": _front_end_s(args, choice=choice),
                **stack_json(args, choices),
                **dict(zip(("weight_offload", "kv_offload"), offload_from_args(args), strict=True)),
                **_speculation_json(args),
                **lora_json(args),
                "samples": args.samples,
                "beams": args.beams,
                "images": args.images,
                **result.to_dict(),
            }
        )
        return
    latency = [
        (
            name,
            " / ".join(_ms(summary[f"{key}_p{p}"]) for p in (50, 90, 99)),
        )
        for name, key in (
            ("TTFT P50/P90/P99", "ttft_s"),
            ("TPOT P50/P90/P99", "tpot_s"),
            ("ITL P50/P90/P99", "itl_s"),
            ("queue P50/P90/P99", "queue_s"),
        )
        if f"{key}_p50" in summary
    ]
    e2e = " / ".join(_per_s(summary[f"e2e_s_p{p}"], 2, "s") for p in (50, 90, 99))
    print_key_values(
        [
            ("model / hardware", f"{args.model} on {_replicas(args)}"),
            ("policy, runtime", f"{args.policy}, {args.runtime or 'ideal'}"),
            *stack_rows(args, choices),
            *_front_end_row(args, choice),
            *_offload_row(args),
            *lora_rows(args),
            *_speculation_line(args),
            ("workload", workload.source),
            (
                "requests",
                f"{summary['requests']:.0f} ({summary['finished']:.0f} finished, "
                f"{summary['rejected']:.0f} rejected)",
            ),
            *latency,
            ("E2E P50/P90/P99", e2e),
            (
                "throughput",
                f"{summary['throughput_tokens_per_s']:.0f} output tokens/s, "
                f"{summary['throughput_requests_per_s']:.2f} requests/s"
                if summary["finished"]
                else f"{UNDEFINED} (no request finished)",
            ),
            (
                "goodput (SLO met)",
                f"{_per_s(summary['goodput_requests_per_s'], 2, 'requests/s')} "
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
            *_prefix_line(summary),
            *_energy_lines(result.economics),
            ("verdict", result.verdict),
        ]
    )


def _energy_lines(money: Any) -> list[tuple[str, str]]:
    """Energy, mean power and tokens per joule of a run, naming the power model
    (`search.serving.pool_economics`); nothing when no platform lists power."""
    if money is None or money.energy_j is None:
        return []
    return [
        (
            "energy",
            f"{money.j_per_output_token:.3g} J/token, {money.output_tokens_per_j:.3g} tokens "
            f"per joule; mean power {money.mean_power_w:.4g} W on {money.devices} device(s)",
        ),
        ("power model", money.power_basis),
    ]


def _prefix_line(summary: dict[str, float]) -> list[tuple[str, str]]:
    rate = summary["prefix_hit_rate"]
    if rate != rate:  # NaN: no request carries a shared prefix
        return []
    return [("prefix cache", f"hit rate {rate:.1%} of requests with a shared prefix")]


def _replicas(args: argparse.Namespace) -> str:
    def mesh(pool: str | None) -> str:
        own = getattr(args, f"{pool}_tp") if pool else None
        tp = args.tp if own is None else own
        hw = (getattr(args, f"{pool}_hw") if pool else None) or args.hw
        return f"{tp * args.pp * args.ep} x {hw}"

    if args.policy == "disaggregated":
        return (
            f"{args.prefill_replicas} prefill replica(s) of {mesh('prefill')} and "
            f"{args.decode_replicas} decode replica(s) of {mesh('decode')}"
        )
    return f"one replica of {mesh(None)}"


def _print_capacity(args: argparse.Namespace, found: Any, what: str) -> None:
    from ..formatting import print_json, print_key_values

    if args.json:
        print_json(
            {
                "success": found.success,
                "status": found.status,
                "message": found.message,
                what: found.value,
                **(
                    {}
                    if found.pools is None
                    else {"prefill_replicas": found.pools[0], "decode_replicas": found.pools[1]}
                ),
                "evaluations": [list(item) for item in found.evaluations],
                **({"evaluation_pools": list(found.labels)} if found.labels else {}),
                "summary": None if found.result is None else found.result.to_dict(),
                "economics": None if found.economics is None else found.economics.to_dict(),
                **stack_json(args, _stack_choices(args)),
            }
        )
        return
    pairs = [("search", found.message), *stack_rows(args, _stack_choices(args))]
    labels = found.labels or ("",) * len(found.evaluations)
    pairs.append(
        (
            "evaluations",
            ", ".join(
                f"{label + ' ' if label else ''}{v:g}{'+' if ok else '-'}"
                for label, (v, ok) in zip(labels, found.evaluations, strict=True)
            ),
        )
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
        pairs += _energy_lines(money)
        if money.usd_per_million_output_tokens is not None:
            pairs.append(
                ("cost", f"${money.usd_per_million_output_tokens:.3g} per million output tokens")
            )
            pairs.append(("tokens per dollar", f"{money.output_tokens_per_usd:.4g}"))
    print_key_values(pairs)
