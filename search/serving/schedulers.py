"""Replicas and policies: build a replica's step cost and KV capacity, run static
batching, continuous batching (with or without chunked prefill) and disaggregated
prefill/decode pools of N and M replicas."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from genz import (
    ModelConfig,
    Parallelism,
    Precision,
    RuntimeProfile,
    StepCost,
    load_model,
    mtp_draft,
    step_activation_bytes,
    step_cost,
    vision_step_costs,
)
from roofline import (
    InputError,
    Platform,
    link_parameters,
    require_non_negative,
    require_positive,
)

from .clients import Clients
from .closed_pools import simulate_closed_pools
from .config import SchedulerConfig
from .emissions import Emissions
from .engine import refuse_closed_pool, refuse_speculation, simulate_pool
from .records import RunRecord, StepLog, merged_timeline
from .routing import route
from .speculative import Speculation, SpeculativeDecoder, kv_capacity_tokens
from .workload import Workload


@dataclass(frozen=True)
class Replica:
    """One model replica: its mesh, scheduler, step cost and KV capacity (tokens)."""

    model: ModelConfig
    platform: Platform
    precision: Precision
    parallelism: Parallelism
    config: SchedulerConfig
    cost: StepCost
    kv_capacity_tokens: int
    speculative: SpeculativeDecoder | None = None  # speculative decoding (`speculative`)

    @property
    def devices(self) -> int:
        """Devices of the replica (tp x pp x ep)."""
        return self.parallelism.devices_per_replica


def step_table_tokens(
    workload: Workload, config: SchedulerConfig, speculation: Speculation | None = None
) -> int:
    """Most tokens one step of ``config``'s policy may hold on ``workload``: the
    ``max_tokens`` of the replica's step-cost table (`build_replica`); with
    ``speculation``, at least a verify pass of every sequence."""
    longest = int(workload.input_tokens.max() + workload.output_tokens.max())
    if config.policy == "static":
        return config.max_sequences * longest
    if config.policy == "continuous":
        tokens = max(config.max_batched_tokens, longest + config.max_sequences)
        if speculation is not None:
            tokens = max(tokens, config.max_sequences * (speculation.draft_tokens + 1))
        return tokens
    return config.max_batched_tokens + config.max_sequences


def build_replica(
    model: ModelConfig,
    platform: Platform,
    workload: Workload,
    *,
    precision: Precision | None = None,
    parallelism: Parallelism | None = None,
    config: SchedulerConfig | None = None,
    runtime: RuntimeProfile | None = None,
    cost: StepCost | None = None,
    speculation: Speculation | None = None,
    weight_offload: float = 0.0,
    kv_offload: float = 0.0,
) -> Replica:
    """A replica sized for ``workload``: step-cost tables cover its largest step and the
    KV cache gets the memory weights and the largest step's activations leave.
    ``runtime`` (`genz.load_runtime`) costs every step as `genz.predict` does with it.

    ``cost`` reuses a table built before (a caller's cache: building one takes
    milliseconds, a replica per request rate adds up): it must be `genz.step_cost` of
    these model, platform, precision, parallelism and runtime with ``max_tokens`` =
    `step_table_tokens` and ``max_sequences`` = ``config.max_sequences``; its sizes and
    names are checked. None: built here.

    ``speculation`` decodes speculatively (`speculative`, continuous policy): the
    target's tables then cover a verify pass of ``max_sequences`` sequences (``k + 1``
    tokens each, all through the LM head), and a draft model's step cost is built on
    the same platform, precision and mesh, its weights and KV cache beside the target's.

    ``weight_offload`` and ``kv_offload`` keep those shares of the weights and of the KV
    cache (and recurrent states) in the platform's host memory (`genz.step_cost`): every
    step also streams them over the host link, taking the larger of device and link time,
    and the KV cache gets the device memory the offloaded weights free plus its host share.
    A reused ``cost`` must have been built with the same shares."""
    precision = precision or Precision(weight_bits=model.default_weight_bits)
    parallelism = parallelism or Parallelism()
    if parallelism.dp != 1:
        raise InputError("dp must be 1 for one replica; use find-replicas for several")
    config = config or SchedulerConfig()
    if speculation is not None:
        refuse_speculation(config)
    longest = int(workload.input_tokens.max() + workload.output_tokens.max())
    tokens = step_table_tokens(workload, config, speculation)
    rows = config.max_sequences * (1 if speculation is None else speculation.draft_tokens + 1)
    if cost is None:
        cost = step_cost(
            model,
            platform,
            precision,
            parallelism,
            max_tokens=tokens,
            max_sequences=rows,
            runtime=runtime,
            weight_offload=weight_offload,
            kv_offload=kv_offload,
        )
    else:
        _check_cost(cost, model, platform, runtime, tokens, rows, (weight_offload, kv_offload))
    decoder = None
    if speculation is not None:
        decoder = SpeculativeDecoder(
            speculation, _draft_cost(model, platform, precision, parallelism, config, runtime,
                                     speculation.draft)
        )  # fmt: skip
    step_tokens = min(tokens, config.max_batched_tokens if config.policy == "chunked" else longest)
    activations = step_activation_bytes(model, precision, parallelism, step_tokens)
    capacity = kv_capacity_tokens(
        cost,
        None if decoder is None else decoder.draft_cost,
        config.memory_utilization,
        activations,
    )
    stated = config.stated_kv_tokens(
        cost.capacity_bytes - cost.weights_bytes - activations, cost.kv_bytes_per_token
    )
    if stated is not None:
        capacity = stated
    if workload.images:  # a VLM's tower, in the step starting each prefill
        tower = vision_step_costs(
            model, platform, workload.images, rows, precision, parallelism, runtime
        )
        cost = replace(
            cost, vision_s=tower.seconds, vision_work=np.stack([tower.flop, tower.bytes])
        )
    if config.chunk_overhead_s > 0:  # per sequence in every step (`SchedulerConfig`)
        cost = replace(cost, fixed_sequence_s=cost.fixed_sequence_s + config.chunk_overhead_s)
    if config.async_scheduling:  # host time overlaps device time (`SchedulerConfig`)
        cost = replace(cost, host_overlap=True)
    if capacity <= config.block_tokens:
        raise InputError(
            f"{model.name} on {parallelism.devices_per_replica} x {platform.name} leaves no "
            f"memory for the KV cache ({cost.weights_bytes / 1e9:.1f} GB of weights per "
            f"device of {platform.main_memory.capacity_bytes / 1e9:.1f} GB, decimal); "
            "raise tp or pp, or lower the weight bits"
        )
    return Replica(model, platform, precision, parallelism, config, cost, capacity, decoder)


def _draft_cost(
    model: ModelConfig,
    platform: Platform,
    precision: Precision,
    parallelism: Parallelism,
    config: SchedulerConfig,
    runtime: RuntimeProfile | None,
    draft: str,
) -> StepCost | None:
    """The draft's decode step cost (`Speculation.draft`; None for n-gram drafting)."""
    if draft == "ngram":
        return None
    drafter = mtp_draft(model) if draft == "mtp" else load_model(draft)
    if drafter.vocab_size != model.vocab_size:
        raise InputError(
            f"the draft {drafter.name} has a vocabulary of {drafter.vocab_size} tokens, the "
            f"target {model.name} {model.vocab_size}: a draft must share the tokenizer"
        )
    return step_cost(
        drafter,
        platform,
        precision,
        parallelism,
        max_tokens=config.max_sequences,
        max_sequences=config.max_sequences,
        runtime=runtime,
    )


def _check_cost(
    cost: StepCost,
    model: ModelConfig,
    platform: Platform,
    runtime: RuntimeProfile | None,
    tokens: int,
    sequences: int,
    offload: tuple[float, float],
) -> None:
    """Refuse a reused step cost built for another replica, other table sizes or other
    ``(weight, kv)`` offload shares."""
    wanted = (model.name, platform.name, "ideal" if runtime is None else runtime.name)
    if (cost.model, cost.platform, cost.runtime) != wanted:
        raise InputError(
            f"the step cost given is of {cost.model} on {cost.platform} ({cost.runtime}), "
            f"not {wanted[0]} on {wanted[1]} ({wanted[2]})"
        )
    if cost.capacity_bytes != platform.main_memory.capacity_bytes:
        raise InputError(
            f"the step cost given is of a device of {cost.capacity_bytes:g} bytes, "
            f"not {platform.main_memory.capacity_bytes:g}"
        )
    if (cost.max_tokens, cost.max_sequences) != (tokens, sequences):
        raise InputError(
            f"the step cost given covers {cost.max_tokens} tokens and {cost.max_sequences} "
            f"sequences per step; this workload and scheduler need {tokens} and {sequences}"
        )
    weight_offload, kv_offload = offload
    if cost.kv_offload != kv_offload or bool(cost.offloaded_weights_bytes) != bool(weight_offload):
        raise InputError("the step cost given was built with other offload shares")


class _StaticReplica:
    """One replica under static batching, fed requests as they are routed to it
    (`routing.Routable`); writes first token, finish and rejection into the shared
    per-request arrays."""

    def __init__(
        self,
        workload: Workload,
        replica: Replica,
        first: np.ndarray,
        finish: np.ndarray,
        rejected: np.ndarray,
    ) -> None:
        self.workload, self.replica = workload, replica
        self.first, self.finish, self.rejected = first, finish, rejected
        self.clients = Clients(
            workload.arrival_s.tolist(),
            workload.max_concurrency,
            replica.config.request_overhead_s,
        )
        self.arrival = self.clients.arrival  # engine times (sent + front end)
        self.admitted = np.full(len(self.arrival), math.nan)
        self.inbox: list[int] = []
        self.done_at: list[float] = []  # times requests left, sorted
        self.window = replica.cost.window_tokens > 0
        self.next = 0  # first request of the inbox not yet batched
        self.t = 0.0
        self.steps = 0
        self.timeline: list[tuple[float, int, int, float]] = []
        self.work = StepLog()
        self.emissions = Emissions()

    def load(self, at: float) -> int:
        """Requests routed here and not finished by ``at``."""
        return len(self.inbox) - bisect_right(self.done_at, at)

    def held(self, tokens: Any) -> Any:
        """Full-attention-token equivalents of a row of ``tokens`` on a windowed model:
        its windowed layers' share keeps at most the kept window ``w'`` (padded rows are
        not paged: no block rounding)."""
        cost = self.replica.cost
        past = np.maximum(tokens - cost.window_tokens, 0)
        return tokens - cost.window_kv_bytes_per_token / cost.kv_bytes_per_token * past

    def send(self, times: list[float]) -> None:
        """Closed loop: one request sent per request that left at ``times`` (sorted)."""
        for t in times:
            self.clients.send_next(t)

    def advance(self, limit: float, progress: Callable[[int], None] | None = None) -> None:
        """Run the batches that start before ``limit`` (every request arriving by
        then has been routed)."""
        cost, config = self.replica.cost, self.replica.config
        inbox, workload = self.inbox, self.workload
        while self.next < len(inbox):
            start = self.next
            t = max(self.t, self.arrival[inbox[start]])
            if t >= limit:
                break
            ready = bisect_right(inbox, t, lo=start, key=self.arrival.__getitem__)
            ids = np.asarray(inbox[start : min(ready, start + config.max_sequences)])
            inputs, outputs = workload.input_tokens[ids], workload.output_tokens[ids]
            padded = np.maximum.accumulate(inputs + outputs)
            if self.window:  # windowed layers keep the last w' tokens (`occupancy`)
                padded = self.held(padded)
            width = padded * np.arange(1, len(ids) + 1)
            fits = int(np.searchsorted(width, self.replica.kv_capacity_tokens, side="right"))
            self.t = t
            if fits == 0:
                self.rejected[ids[0]] = True
                self.done_at.append(t)
                self.send([t])
                self.next += 1
                continue
            ids, inputs, outputs = ids[:fits], inputs[:fits], outputs[:fits]
            self.admitted[ids] = t
            size, prompt, longest = fits, int(inputs.max()), int(outputs.max())
            held = self.held(prompt + longest) if self.window else prompt + longest
            self.timeline.append((t, ready - start - fits, size, size * held))
            pairs = size * (prompt * prompt - prompt * (prompt - 1) / 2)
            seconds = cost.step_time(size * prompt, size * prompt, pairs, 0, 0, size, size)
            if cost.vision_s is not None:  # every request of the batch starts its prefill
                seconds += cost.vision_s[size]
                self.work.tower(size)
            self.work.add(seconds, size * prompt, size * prompt, pairs, 0, 0, size)
            t += seconds
            self.first[ids] = t
            if longest > 1:
                j = np.arange(1, longest, dtype=float)
                contexts = size * (prompt + j)
                times = cost.decode_times(size, contexts)
                self.work.extend_decode(times, size, contexts)
                ends = np.cumsum(times)
                # decode step j streams a token to the rows of at least j + 1 tokens
                sending = size - np.searchsorted(np.sort(outputs), j, side="right")
                self.emissions.extend(times, sending.astype(float))
                self.finish[ids] = t + np.where(outputs > 1, ends[np.maximum(outputs - 2, 0)], 0.0)
                t += float(ends[-1])
            else:
                self.finish[ids] = t
            left = sorted(self.finish[ids].tolist())
            self.done_at.extend(left)
            self.send(left)
            self.steps += longest
            if progress is not None:
                progress(fits)
            self.next = start + fits
            self.t = t


def simulate_static(
    workload: Workload,
    replica: Replica,
    progress: Callable[[int], None] | None = None,
    replicas: int = 1,
    routing: str = "least-loaded",
) -> RunRecord:
    """Static batching on ``replicas`` replicas (requests routed by ``routing``,
    `routing.route`): when a replica is idle it takes up to ``max_sequences`` waiting
    requests (as many as the KV cache holds at their padded final length), prefills
    them in one step padded to the longest prompt, and decodes every row until the
    longest output ends. A request is returned at its own last token. Prefixes are
    not cached (every prompt is prefilled whole)."""
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise InputError(f"replicas must be an integer >= 1, got {replicas!r}")
    refuse_closed_pool(workload, replicas)
    refuse_modes(workload, "static batching")
    n = len(workload)
    first, finish = np.full(n, math.nan), np.full(n, math.nan)
    rejected = np.zeros(n, bool)
    engines = [_StaticReplica(workload, replica, first, finish, rejected) for _ in range(replicas)]
    if replicas == 1:
        engines[0].inbox = list(range(n))
        engines[0].advance(math.inf, progress)
    else:
        route(engines[0].arrival, engines, routing)
    for engine in engines:
        engine.timeline.append((engine.t, 0, 0, 0.0))
    clients = engines[0].clients
    line = merged_timeline([engine.timeline for engine in engines])
    seconds, flop, moved = StepLog.joined([engine.work for engine in engines], replica.cost)
    itl, counts = Emissions.joined([engine.emissions for engine in engines])
    return RunRecord(
        first_token_s=first,
        finish_s=finish,
        preemptions=np.zeros(n, np.int64),
        rejected=rejected,
        timeline_s=line[:, 0],
        waiting=line[:, 1].astype(np.int64),
        running=line[:, 2].astype(np.int64),
        kv_tokens=line[:, 3],
        kv_capacity_tokens=replica.kv_capacity_tokens * replicas,
        steps=sum(engine.steps for engine in engines),
        prefix_hits=np.full(n, -1, np.int8),
        step_s=seconds,
        step_flop=flop,
        step_bytes=moved,
        itl_s=itl,
        itl_count=counts,
        arrival_s=None if clients.sent is None else np.asarray(clients.sent),
        admitted_s=np.fmin.reduce([engine.admitted for engine in engines]),
        engine_arrival_s=clients.engine_arrivals(),
    )


def refuse_modes(workload: Workload, what: str) -> None:
    """Samples and beams are simulated with continuous batching (chunked or not) only."""
    if workload.sequences > 1:
        label = "samples" if workload.samples > 1 else "beams"
        raise InputError(
            f"{label} > 1 is simulated with the continuous or chunked policy, not {what}"
        )


def simulate_replica(
    workload: Workload,
    replica: Replica,
    progress: Callable[[int], None] | None = None,
    replicas: int = 1,
    routing: str = "least-loaded",
) -> RunRecord:
    """Run ``workload`` on ``replicas`` copies of ``replica`` with its configured policy,
    requests routed by ``routing`` (`routing.route`; least-loaded by default)."""
    if replica.config.policy == "static":
        return simulate_static(workload, replica, progress, replicas, routing)
    return simulate_pool(
        workload,
        replica.cost,
        replica.config,
        replica.kv_capacity_tokens,
        replicas=replicas,
        progress=progress,
        routing=routing,
        speculative=replica.speculative,
    )


@dataclass(frozen=True)
class KVLink:
    """The path a prompt's KV cache takes from a prefill to a decode replica: per-device
    bandwidth after efficiency, bytes/s, and latency per transfer, s."""

    bandwidth_bytes_per_s: float
    latency_s: float

    def __post_init__(self) -> None:
        require_positive("link bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        require_non_negative("link latency_s", self.latency_s)


def kv_link(
    prefill: Replica,
    decode: Replica,
    prefill_replicas: int = 1,
    decode_replicas: int = 1,
    bandwidth_bytes_per_s: float | None = None,
) -> KVLink:
    """The KV link between the pools from the platforms' interconnects
    (`roofline.link_parameters`): on one platform, the pools' devices together form the
    group (within ``devices_per_node`` the scale-up link, else the scale-out network);
    on two platforms the transfer crosses nodes. With two, the slower bandwidth and the
    longer latency apply. ``bandwidth_bytes_per_s`` replaces the bandwidth (taken as
    achieved); the latency then comes from the interconnects where they are given."""
    platforms = (prefill.platform, decode.platform)
    if prefill.platform == decode.platform:
        group = prefill.devices * prefill_replicas + decode.devices * decode_replicas
    else:
        group = 1 + max(p.interconnect.devices_per_node if p.interconnect else 1 for p in platforms)
    missing = [p.name for p in platforms if p.interconnect is None]
    if missing and bandwidth_bytes_per_s is None:
        raise InputError(f"{missing[0]} has no interconnect; give the KV link bandwidth")
    bandwidths, latencies = [], []
    for platform in platforms:
        if platform.interconnect is not None:
            bandwidth, latency = link_parameters(platform, group)
            bandwidths.append(float(bandwidth))
            latencies.append(float(latency))
    return KVLink(
        bandwidth_bytes_per_s if bandwidth_bytes_per_s is not None else min(bandwidths),
        max(latencies, default=0.0),
    )


def kv_transfer(
    workload: Workload, prefill: Replica, decode: Replica, link: KVLink
) -> tuple[np.ndarray, np.ndarray]:
    """Bytes of each prompt's KV cache (all layers, the model's KV bits) and the
    seconds it takes over ``link``: every device of the prefill replica sends its shard
    while every decode device receives its own, so the larger per-device share (KV
    bytes per token per device, `genz.StepCost`) sets the time: ``tokens x share /
    bandwidth + latency``. Windowed layers send their kept window only (``min(tokens,
    w')``)."""
    tokens = workload.input_tokens.astype(float)
    model = prefill.model
    per_layer = model.kv_elements_per_token_per_layer * (prefill.precision.kv_bits / 8)
    per_token = model.num_attention_layers * per_layer
    share = max(prefill.cost.kv_bytes_per_token, decode.cost.kv_bytes_per_token)
    if not model.num_window_layers:
        return tokens * per_token, tokens * share / link.bandwidth_bytes_per_s + link.latency_s
    # windowed layers send only the kept window w' (the rest has slid out)
    past = np.maximum(tokens - model.kept_window_tokens, 0.0)
    size = tokens * per_token - model.num_window_layers * per_layer * past
    windowed = max(c.window_kv_bytes_per_token for c in (prefill.cost, decode.cost))
    seconds = (tokens * share - windowed * past) / link.bandwidth_bytes_per_s + link.latency_s
    return size, seconds


@dataclass(frozen=True)
class DisaggregatedRun:
    """Both pools of a disaggregated run and the per-request outcome (absolute times,
    workload order). ``combined`` is the record to summarise: per-request figures of
    both pools (rejected in either, preemptions of both, the prefill pool's prefix
    hits) with the decode pool's timeline and KV capacity."""

    prefill: RunRecord
    decode: RunRecord
    first_token_s: np.ndarray
    finish_s: np.ndarray
    kv_transfer_s: np.ndarray
    kv_transfer_bytes: np.ndarray
    combined: RunRecord


def prefill_pool(
    workload: Workload,
    prefill: Replica,
    replicas: int = 1,
    progress: Callable[[int], None] | None = None,
    routing: str = "least-loaded",
) -> RunRecord:
    """The prefill pool's run: every prompt with an output of one token; its
    ``finish_s`` is each request's first token."""
    one_token = Workload(
        workload.arrival_s,
        workload.input_tokens,
        np.ones(len(workload), np.int64),
        workload.prefix_tokens,
        workload.source,
        workload.prefixes,
    )
    # No decode step runs there: speculation (a decode-pool matter) is left out.
    return simulate_replica(
        one_token, replace(prefill, speculative=None), progress, replicas, routing
    )


def simulate_disaggregated(
    workload: Workload,
    prefill: Replica,
    decode: Replica,
    *,
    link: KVLink,
    prefill_replicas: int = 1,
    decode_replicas: int = 1,
    progress: Callable[[int], None] | None = None,
    prefilled: RunRecord | None = None,
    routing: str = "least-loaded",
) -> DisaggregatedRun:
    """A pool of ``prefill_replicas`` prefill replicas feeding a pool of
    ``decode_replicas`` decode replicas (Splitwise / DistServe style).

    The prefill pool runs every prompt (`prefill_pool`: continuous batching, prefix
    caching per replica); each request's whole prompt KV cache then crosses ``link``
    (`kv_transfer`), and a decode replica admits it with the cache in place and
    generates the other tokens. Each pool routes a request as it arrives there, by
    ``routing`` (`routing.route`: least-loaded by default). TTFT is when the prefill pool emits the first token.
    ``prefilled`` reuses a `prefill_pool` run of this workload and pool (open-loop
    clients only). Closed-loop clients (``workload.max_concurrency``) couple the pools
    (a client sends its next request when the last one leaves the decode pool): both
    then run in one event loop (`closed_pools.simulate_closed_pools`), and
    ``combined.arrival_s`` holds the send times.
    """
    refuse_modes(workload, "disaggregated pools")
    if decode.model.name != prefill.model.name:
        raise InputError(
            f"the pools must serve one model, got {prefill.model.name} and {decode.model.name}"
        )
    size, transfer = kv_transfer(workload, prefill, decode, link)
    if workload.max_concurrency is not None:
        if prefilled is not None:
            raise InputError(
                "a prefill pool run cannot be reused with closed-loop clients (its "
                "arrivals depend on the decode pool)"
            )
        first_pool, second = simulate_closed_pools(
            workload,
            (prefill.cost, prefill.config, prefill.kv_capacity_tokens),
            (decode.cost, decode.config, decode.kv_capacity_tokens),
            transfer,
            prefill_replicas=prefill_replicas,
            decode_replicas=decode_replicas,
            routing=routing,
            speculative=decode.speculative,
        )
        order = np.arange(len(workload))
    else:
        first_pool = prefilled or prefill_pool(
            workload, prefill, prefill_replicas, progress, routing
        )
        ready = first_pool.finish_s + transfer
        done = np.isfinite(ready)
        order = np.argsort(np.where(done, ready, np.inf), kind="stable")[: int(done.sum())]
        arrivals = Workload(
            ready[order],
            workload.input_tokens[order],
            workload.output_tokens[order],
            np.zeros(len(order), np.int64),
            workload.source,
        )
        second = simulate_pool(
            arrivals,
            decode.cost,
            decode.config,
            decode.kv_capacity_tokens,
            replicas=decode_replicas,
            prefilled=True,
            routing=routing,
            speculative=decode.speculative,
        )
    finish = np.full(len(workload), math.nan)
    finish[order] = second.finish_s
    finish = np.where(workload.output_tokens == 1, first_pool.finish_s, finish)
    rejected = first_pool.rejected.copy()
    rejected[order] |= second.rejected
    preemptions = first_pool.preemptions.copy()
    preemptions[order] += second.preemptions
    combined = RunRecord(
        first_token_s=first_pool.finish_s,
        finish_s=finish,
        preemptions=preemptions,
        rejected=rejected,
        timeline_s=second.timeline_s,
        waiting=second.waiting,
        running=second.running,
        kv_tokens=second.kv_tokens,
        kv_capacity_tokens=second.kv_capacity_tokens,
        steps=first_pool.steps + second.steps,
        prefix_hits=first_pool.prefix_hits,
        step_s=np.concatenate([first_pool.step_s, second.step_s]),
        step_flop=np.concatenate([first_pool.step_flop, second.step_flop]),
        step_bytes=np.concatenate([first_pool.step_bytes, second.step_bytes]),
        itl_s=second.itl_s,
        itl_count=second.itl_count,
        arrival_s=first_pool.arrival_s,
        admitted_s=first_pool.admitted_s,
        engine_arrival_s=first_pool.engine_arrival_s,
    )
    return DisaggregatedRun(
        first_pool, second, first_pool.finish_s, finish, transfer, size, combined
    )
