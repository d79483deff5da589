"""Replicas and policies: build a replica's step cost and KV capacity, run static
batching, continuous batching (with or without chunked prefill) and disaggregated
prefill/decode pools."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from genz import (
    ModelConfig,
    Parallelism,
    Precision,
    RuntimeProfile,
    StepCost,
    step_activation_bytes,
    step_cost,
)
from roofline import InputError, Platform, require_non_negative, require_positive

from .config import SchedulerConfig
from .engine import RunRecord, simulate_continuous
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

    @property
    def devices(self) -> int:
        """Devices of the replica (tp x pp x ep)."""
        return self.parallelism.devices_per_replica


def build_replica(
    model: ModelConfig,
    platform: Platform,
    workload: Workload,
    *,
    precision: Precision | None = None,
    parallelism: Parallelism | None = None,
    config: SchedulerConfig | None = None,
    runtime: RuntimeProfile | None = None,
) -> Replica:
    """A replica sized for ``workload``: step-cost tables cover its largest step and the
    KV cache gets the memory weights and the largest step's activations leave.
    ``runtime`` (`genz.load_runtime`) costs every step as `genz.predict` does with it."""
    precision = precision or Precision(weight_bits=model.default_weight_bits)
    parallelism = parallelism or Parallelism()
    if parallelism.dp != 1:
        raise InputError("dp must be 1 for one replica; use find-replicas for several")
    config = config or SchedulerConfig()
    longest = int(workload.input_tokens.max() + workload.output_tokens.max())
    if config.policy == "static":
        tokens = config.max_sequences * longest
    elif config.policy == "continuous":
        tokens = max(config.max_batched_tokens, longest + config.max_sequences)
    else:
        tokens = config.max_batched_tokens + config.max_sequences
    cost = step_cost(
        model,
        platform,
        precision,
        parallelism,
        max_tokens=tokens,
        max_sequences=config.max_sequences,
        runtime=runtime,
    )
    step_tokens = min(tokens, config.max_batched_tokens if config.policy == "chunked" else longest)
    activations = step_activation_bytes(model, precision, parallelism, step_tokens)
    capacity = cost.kv_capacity_tokens(config.memory_utilization, activations)
    if capacity <= config.block_tokens:
        raise InputError(
            f"{model.name} on {parallelism.devices_per_replica} x {platform.name} leaves no "
            f"memory for the KV cache ({cost.weights_bytes / 1e9:.1f} GB of weights per "
            f"device of {platform.main_memory.capacity_bytes / 1e9:.1f} GB, decimal); "
            "raise tp or pp, or lower the weight bits"
        )
    return Replica(model, platform, precision, parallelism, config, cost, capacity)


def simulate_static(
    workload: Workload, replica: Replica, progress: Callable[[int], None] | None = None
) -> RunRecord:
    """Static batching: when the replica is idle it takes up to ``max_sequences``
    waiting requests (as many as the KV cache holds at their padded final length),
    prefills them in one step padded to the longest prompt, and decodes every row until
    the longest output ends. A request is returned at its own last token."""
    cost, config = replica.cost, replica.config
    arrival = workload.arrival_s
    n = len(workload)
    first = np.full(n, math.nan)
    finish = np.full(n, math.nan)
    rejected = np.zeros(n, bool)
    timeline: list[tuple[float, int, int, float]] = []
    t, start, steps = 0.0, 0, 0
    while start < n:
        t = max(t, float(arrival[start]))
        ready = int(np.searchsorted(arrival, t, side="right"))
        stop = min(ready, start + config.max_sequences)
        inputs = workload.input_tokens[start:stop]
        outputs = workload.output_tokens[start:stop]
        width = np.maximum.accumulate(inputs + outputs) * np.arange(1, stop - start + 1)
        fits = int(np.searchsorted(width, replica.kv_capacity_tokens, side="right"))
        if fits == 0:
            rejected[start] = True
            start += 1
            continue
        stop = start + fits
        size, prompt = fits, int(inputs[:fits].max())
        longest = int(outputs[:fits].max())
        timeline.append((t, ready - stop, size, size * (prompt + longest)))
        t += cost.step_time(
            size * prompt,
            size * prompt,
            size * (prompt * prompt - prompt * (prompt - 1) / 2),
            0,
            0,
            size,
            size,
        )
        first[start:stop] = t
        if longest > 1:
            j = np.arange(1, longest, dtype=float)
            ones = np.ones_like(j)
            ends = np.cumsum(
                cost.step_times(
                    0 * j, 0 * j, 0 * j, size * ones, size * (prompt + j), size * ones, size * ones
                )
            )
            finish[start:stop] = t + np.where(
                outputs[:fits] > 1, ends[np.maximum(outputs[:fits] - 2, 0)], 0.0
            )
            t += float(ends[-1])
        else:
            finish[start:stop] = t
        steps += longest
        if progress is not None:
            progress(fits)
        start = stop
    timeline.append((t, 0, 0, 0.0))
    line = np.asarray(timeline, float).reshape(-1, 4)
    return RunRecord(
        first_token_s=first,
        finish_s=finish,
        preemptions=np.zeros(n, np.int64),
        rejected=rejected,
        timeline_s=line[:, 0],
        waiting=line[:, 1].astype(np.int64),
        running=line[:, 2].astype(np.int64),
        kv_tokens=line[:, 3],
        kv_capacity_tokens=replica.kv_capacity_tokens,
        steps=steps,
    )


def simulate_replica(
    workload: Workload, replica: Replica, progress: Callable[[int], None] | None = None
) -> RunRecord:
    """Run ``workload`` on one replica with its configured policy."""
    if replica.config.policy == "static":
        return simulate_static(workload, replica, progress)
    return simulate_continuous(
        workload, replica.cost, replica.config, replica.kv_capacity_tokens, progress=progress
    )


@dataclass(frozen=True)
class DisaggregatedRun:
    """Both pools of a disaggregated run and the per-request outcome (absolute times)."""

    prefill: RunRecord
    decode: RunRecord
    first_token_s: np.ndarray
    finish_s: np.ndarray
    kv_transfer_s: np.ndarray


def simulate_disaggregated(
    workload: Workload,
    prefill: Replica,
    decode: Replica,
    *,
    link_bytes_per_s: float,
    link_latency_s: float = 10e-6,
    progress: Callable[[int], None] | None = None,
) -> DisaggregatedRun:
    """Prefill pool then decode pool (Splitwise / DistServe style).

    The prefill replica runs every prompt (its continuous batching, output of one
    token); each request's KV cache (its own prompt tokens x KV bytes per token per
    device) then crosses the link at ``link_bytes_per_s`` per device, and the decode
    replica admits it with the cache in place and generates the other tokens. TTFT is
    when the prefill pool emits the first token.
    """
    require_positive("link_bytes_per_s", link_bytes_per_s)
    require_non_negative("link_latency_s", link_latency_s)
    one_token = Workload(
        workload.arrival_s,
        workload.input_tokens,
        np.ones(len(workload), np.int64),
        workload.cached_tokens,
        workload.source,
    )
    first_pool = simulate_replica(one_token, prefill, progress)
    own = workload.input_tokens - workload.cached_tokens
    transfer = own * prefill.cost.kv_bytes_per_token / link_bytes_per_s + link_latency_s
    ready = first_pool.finish_s + transfer
    done = np.isfinite(ready)
    order = np.argsort(np.where(done, ready, np.inf), kind="stable")[: int(done.sum())]
    arrivals = Workload(
        ready[order],
        workload.input_tokens[order],
        workload.output_tokens[order],
        workload.cached_tokens[order],
        workload.source,
    )
    second = simulate_continuous(
        arrivals, decode.cost, decode.config, decode.kv_capacity_tokens, prefilled=True
    )
    finish = np.full(len(workload), math.nan)
    finish[order] = second.finish_s
    finish = np.where(workload.output_tokens == 1, first_pool.finish_s, finish)
    return DisaggregatedRun(first_pool, second, first_pool.finish_s, finish, transfer)
