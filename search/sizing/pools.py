"""The results of the prefill/decode design-pair search and its pool sizing.

`pool_ratio` sizes the two pools of a pair (hand-checkable: 10 and 2.5 requests/s per
replica at equal cost give 1:4); `PhasePool`, `ColocatedDesign` and `DesignPair` are the
frozen results `search.sizing.design_pair` returns (SI units, US$).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from roofline import AcceleratorDesign, DesignCost, require_positive

#: Pools within this fraction of the least cost per request count as equal (fewest
#: devices wins).
POOL_TOLERANCE = 0.02


def pool_ratio(
    prefill_rate: float,
    decode_rate: float,
    prefill_hourly_usd: float,
    decode_hourly_usd: float,
    prefill_devices: int,
    decode_devices: int,
    max_devices: int,
    min_requests_per_s: float | None = None,
    tolerance: float = POOL_TOLERANCE,
) -> tuple[int, int, float, float] | None:
    """(N, M, requests/s, US$ per hour) of the pools of least cost per request.

    Rates in requests/s per replica, hourly US$ per replica. Without a floor: among
    every N, M with ``N n_P + M n_D <= max_devices``, the fewest devices whose cost per
    request ``(N c_P + M c_D) / min(N r_P, M r_D)`` is within ``tolerance`` of the
    least (a 3:1 pool, not 42:13, when the two differ by under 2%). With
    ``min_requests_per_s``: the fewest replicas of each pool reaching it. None when no
    pools fit the device cap.
    """
    for label, value in (
        ("prefill_rate", prefill_rate),
        ("decode_rate", decode_rate),
        ("prefill_devices", prefill_devices),
        ("decode_devices", decode_devices),
        ("max_devices", max_devices),
    ):
        require_positive(label, value)
    if min_requests_per_s is not None:
        n = max(1, math.ceil(min_requests_per_s / prefill_rate - 1e-12))
        m = max(1, math.ceil(min_requests_per_s / decode_rate - 1e-12))
        if n * prefill_devices + m * decode_devices > max_devices:
            return None
        hourly = n * prefill_hourly_usd + m * decode_hourly_usd
        return n, m, min(n * prefill_rate, m * decode_rate), hourly
    most_n = (max_devices - decode_devices) // prefill_devices
    most_m = (max_devices - prefill_devices) // decode_devices
    if most_n < 1 or most_m < 1:
        return None
    counts_n = np.arange(1, most_n + 1)[:, None]
    counts_m = np.arange(1, most_m + 1)[None, :]
    devices = counts_n * prefill_devices + counts_m * decode_devices
    served = np.minimum(counts_n * prefill_rate, counts_m * decode_rate)
    bills = counts_n * prefill_hourly_usd + counts_m * decode_hourly_usd
    per_request = np.where(devices <= max_devices, bills / served, np.inf)
    near = per_request <= per_request.min() * (1 + tolerance)
    flat = np.lexsort((per_request.ravel(), np.where(near, devices, np.inf).ravel()))[0]
    i, j = np.unravel_index(flat, per_request.shape)
    return int(counts_n[i, 0]), int(counts_m[0, j]), float(served[i, j]), float(bills[i, j])


@dataclass(frozen=True)
class PhasePool:
    """One pool: its design, mesh of one replica, replicas and per-replica figures.

    ``seconds`` is the prefill of one prompt (prefill pool) or one decode step (decode
    pool); ``requests_per_s`` and ``hourly_usd`` are per replica.
    """

    design: AcceleratorDesign
    cost: DesignCost
    tp: int
    pp: int
    ep: int
    replicas: int
    seconds: float
    requests_per_s: float
    hourly_usd: float
    bound: str

    @property
    def devices_per_replica(self) -> int:
        """Devices of one replica."""
        return self.tp * self.pp * self.ep

    def to_dict(self) -> dict[str, object]:
        """JSON-ready values."""
        return {
            "name": self.design.name,
            "compute_tflops_bf16": self.design.tensor_tflops,
            "memory_technology": self.design.memory.technology,
            "memory_units": self.design.memory.units,
            "node": self.design.node,
            "tp": self.tp,
            "pp": self.pp,
            "ep": self.ep,
            "replicas": self.replicas,
            "devices": self.replicas * self.devices_per_replica,
            "seconds": self.seconds,
            "requests_per_s_per_replica": self.requests_per_s,
            "hourly_usd_per_replica": self.hourly_usd,
            "device_cost_usd": self.cost.device_cost_usd,
            "bound": self.bound,
        }


@dataclass(frozen=True)
class ColocatedDesign:
    """The best single design serving both phases (continuous batching, module doc)."""

    design: AcceleratorDesign
    cost: DesignCost
    tp: int
    pp: int
    ep: int
    replicas: int
    ttft_s: float
    tpot_s: float
    throughput_tokens_per_s: float
    usd_per_million_output_tokens: float

    def to_dict(self) -> dict[str, object]:
        """JSON-ready values."""
        return {
            "name": self.design.name,
            "tp": self.tp,
            "pp": self.pp,
            "ep": self.ep,
            "replicas": self.replicas,
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "throughput_tokens_per_s": self.throughput_tokens_per_s,
            "device_cost_usd": self.cost.device_cost_usd,
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
        }


@dataclass(frozen=True)
class DesignPair:
    """The chosen prefill and decode pools, the KV transfer and the colocated best."""

    prefill: PhasePool
    decode: PhasePool
    kv_transfer_bytes: float
    kv_transfer_s: float
    ttft_s: float
    tpot_s: float
    requests_per_s: float
    output_tokens: int
    usd_per_million_output_tokens: float
    colocated: ColocatedDesign | None
    pairs_considered: int

    @property
    def key(self) -> tuple[object, ...]:
        """(prefill design name, tp, pp, ep, decode design name, tp, pp, ep): what
        `search.sizing.design_pair`'s ``exclude`` takes."""
        return tuple(
            item
            for pool in (self.prefill, self.decode)
            for item in (pool.design.name, pool.tp, pool.pp, pool.ep)
        )

    @property
    def ratio_text(self) -> str:
        """``'1:4'`` (prefill replicas : decode replicas)."""
        return f"{self.prefill.replicas}:{self.decode.replicas}"

    @property
    def saving(self) -> float | None:
        """Colocated $/Mtok over the pair's (> 1: the pair is cheaper per token)."""
        if self.colocated is None:
            return None
        return self.colocated.usd_per_million_output_tokens / self.usd_per_million_output_tokens

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            "prefill": self.prefill.to_dict(),
            "decode": self.decode.to_dict(),
            "pool_ratio": self.ratio_text,
            "kv_transfer_bytes": self.kv_transfer_bytes,
            "kv_transfer_s": self.kv_transfer_s,
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s": self.requests_per_s * self.output_tokens,
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            "colocated": None if self.colocated is None else self.colocated.to_dict(),
            "colocated_over_pair_usd_per_mtok": self.saving,
            "pairs_considered": self.pairs_considered,
        }
