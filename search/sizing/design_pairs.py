"""Prefill and decode accelerators designed together: a design pair and its N:M pools.

The OI/CF question (specialised prefill and decode parts): from one design space,
`design_pair` picks a prefill design and mesh, a decode design and mesh and the pool
ratio N:M that give the least US$ per million output tokens under TTFT and TPOT
ceilings, and compares it with the best colocated design of the same space.

Per (design, mesh) row, two vectorised predictions of the space
(`search.sizing.design_space`): ``prefill_s``, the prefill of one prompt per EP rank
(batch ``ep``: one prompt without expert parallelism), and ``tpot_s``, one decode step
at the workload's concurrency B. With o output tokens
per request, hourly cost c per replica (devices x device-hour, `design_hourly_usd`):

- KV transfer: the prompt's whole KV cache ``K`` (bytes, all layers) leaves the
  prefill replica's ``n_P`` devices and reaches the decode replica's ``n_D``, each over
  its own off-node link (`roofline.link_parameters` at a group beyond one node, as the
  serving simulator's KV link: a design's scale-out path is its PCIe lanes, after the
  interconnect efficiency), so ``t_kv = max(K / (n_P b_P), K / (n_D b_D)) + max(l_P,
  l_D)``.
- Disaggregated: TTFT ``= prefill_s + t_kv`` (the request streams from the decode pool
  once its cache has arrived), TPOT ``= tpot_s`` of the decode design; a prefill
  replica serves ``r_P = ep / max(prefill_s, t_kv)`` requests/s (transfers overlap the
  next prefill), a decode replica ``r_D = B / ((o - 1) tpot_s)``. N prefill and M
  decode replicas serve ``min(N r_P, M r_D)`` requests/s at ``N c_P + M c_D`` per hour.
- Colocated (continuous batching on one design): a new prompt's prefill stalls the B
  running sequences, about B prompts per o steps (B / ep prefill passes), so TPOT ``=
  tpot_s + B prefill_s / (ep o)``,
  TTFT ``= prefill_s`` and a replica makes ``B / TPOT`` output tokens/s.

The pair is chosen over every feasible (prefill row, decode row) with the fluid cost
per request ``c_P / r_P + c_D / r_D``; the best pairs then get the integer N:M (within
``max_devices`` devices, or the fewest meeting a throughput floor) that minimises the
cost per token.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from genz import ModelConfig, Scenario
from roofline import (
    AcceleratorDesign,
    InputError,
    Platform,
    link_parameters,
    require_positive,
)

from .design_space import SpaceTable, evaluate_space
from .pools import ColocatedDesign, DesignPair, PhasePool, pool_ratio
from .slo import ServiceLevel, format_seconds

#: Pairs (by fluid cost) whose integer pool ratio is searched.
TOP_PAIRS = 32


def kv_link(platform: Platform) -> tuple[float, float]:
    """(bandwidth bytes/s, latency s) of a device's KV path to another node: the link model
    at a group one device beyond a node (`roofline.link_parameters`)."""
    link = platform.interconnect
    if link is None:
        raise InputError(
            f"{platform.name} has no link for the KV transfer; give --kv-link-gb-per-s"
        )
    bandwidth, latency = link_parameters(platform, link.devices_per_node + 1)
    return float(bandwidth), float(latency)


def phase_tables(
    model: ModelConfig,
    scenario: Scenario,
    designs: list[AcceleratorDesign],
    *,
    max_devices: int,
    lifetime_years: float,
    electricity_usd_per_kwh: float,
) -> tuple[SpaceTable, SpaceTable]:
    """(prefill table: one prompt per EP rank, one token; decode table: the scenario),
    same rows."""
    options = {
        "max_devices": max_devices,
        "lifetime_years": lifetime_years,
        "electricity_usd_per_kwh": electricity_usd_per_kwh,
        "mesh_batch": scenario.batch,
    }
    single = dataclasses.replace(scenario, batch=1, output_tokens=1)
    return (
        evaluate_space(model, single, designs, batch_per_ep_rank=True, **options),  # type: ignore[arg-type]
        evaluate_space(model, scenario, designs, **options),  # type: ignore[arg-type]
    )


def colocated_best(
    prefill: SpaceTable, decode: SpaceTable, scenario: Scenario, slo: ServiceLevel, max_devices: int
) -> ColocatedDesign | None:
    """Least $/Mtok single design under continuous batching (module doc), or None."""
    batch, out = scenario.batch, scenario.output_tokens
    tpot = decode.tpot_s + batch * prefill.ttft_s / (prefill.ep * out)
    ttft = prefill.ttft_s
    rate = batch / tpot
    ok = decode.fits & prefill.fits
    if slo.max_ttft_s is not None:
        ok &= ttft <= slo.max_ttft_s
    if slo.max_tpot_s is not None:
        ok &= tpot <= slo.max_tpot_s
    replicas = np.ones(len(decode), np.int64)
    if slo.min_throughput_tokens_per_s is not None:
        replicas = np.maximum(1, np.ceil(slo.min_throughput_tokens_per_s / rate - 1e-12))
    ok &= replicas * decode.devices <= max_devices
    if not ok.any():
        return None
    usd = decode.devices * decode.hourly_usd / 3600 / rate * 1e6
    row = int(np.argmin(np.where(ok, usd, np.inf)))
    index = int(decode.design[row])
    return ColocatedDesign(
        design=decode.designs[index],
        cost=decode.costs[index],
        tp=int(decode.tp[row]),
        pp=int(decode.pp[row]),
        ep=int(decode.ep[row]),
        replicas=int(replicas[row]),
        ttft_s=float(ttft[row]),
        tpot_s=float(tpot[row]),
        throughput_tokens_per_s=float(rate[row] * replicas[row]),
        usd_per_million_output_tokens=float(usd[row]),
    )


def design_pair(
    model: ModelConfig,
    scenario: Scenario,
    slo: ServiceLevel,
    designs: list[AcceleratorDesign],
    *,
    max_devices: int = 64,
    lifetime_years: float = 4.0,
    electricity_usd_per_kwh: float = 0.10,
    kv_link_gb_per_s: float | None = None,
    exclude: frozenset[tuple[object, ...]] = frozenset(),
) -> DesignPair:
    """The least-cost-per-token prefill/decode design pair and pools (module doc);
    pairs whose `DesignPair.key` is in ``exclude`` are skipped (the next candidate)."""
    out = scenario.output_tokens
    if out < 2:
        raise InputError(f"--output must be >= 2 for a prefill/decode pair (got {out})")
    if kv_link_gb_per_s is not None:
        require_positive("kv_link_gb_per_s (GB/s)", kv_link_gb_per_s)
    prefill, decode = phase_tables(
        model,
        scenario,
        designs,
        max_devices=max_devices,
        lifetime_years=lifetime_years,
        electricity_usd_per_kwh=electricity_usd_per_kwh,
    )
    links = [kv_link(platform) for platform in prefill.platforms]
    link = np.array(
        [kv_link_gb_per_s * 1e9 if kv_link_gb_per_s is not None else bw for bw, _ in links]
    )
    latency = np.array([lat for _, lat in links])
    # One prompt's cache: KV heads over TP, layers over PP (each EP rank holds its own).
    sharded = prefill.tp * prefill.pp
    kv_total = prefill.kv_cache_bytes * sharded
    send = kv_total / (sharded * link[prefill.design])
    p_ok = prefill.fits.copy()
    d_ok = decode.fits.copy()
    if slo.max_tpot_s is not None:
        d_ok &= decode.tpot_s <= slo.max_tpot_s
    if slo.max_ttft_s is not None:
        p_ok &= prefill.ttft_s + send <= slo.max_ttft_s
    if not p_ok.any() or not d_ok.any():
        raise InputError(_infeasible(prefill, decode, slo, p_ok, d_ok))
    d_rows = np.nonzero(d_ok)[0]
    d_rate = scenario.batch / ((out - 1) * decode.tpot_s[d_rows])
    d_hourly = decode.devices[d_rows] * decode.hourly_usd[d_rows]
    d_receive = decode.tp[d_rows] * decode.pp[d_rows] * link[decode.design[d_rows]]
    # The receive bandwidth and latency are all the decode side adds to the transfer: keep
    # the cheapest decode row per (bandwidth, latency), then pair every prefill row with them.
    keep = []
    d_latency = latency[decode.design[d_rows]]
    for value, lag in sorted(
        {(float(a), float(b)) for a, b in zip(d_receive, d_latency, strict=True)}
    ):
        group = np.nonzero((d_receive == value) & (d_latency == lag))[0]
        keep.append(group[np.argmin(d_hourly[group] / d_rate[group])])
    d_keep = np.array(keep)
    p_rows = np.nonzero(p_ok)[0]
    total = kv_total[p_rows][:, None]
    transfer = np.maximum(send[p_rows][:, None], total / d_receive[d_keep][None, :]) + np.maximum(
        latency[prefill.design[p_rows]][:, None], d_latency[d_keep][None, :]
    )
    ttft = prefill.ttft_s[p_rows][:, None] + transfer
    p_rate = prefill.ep[p_rows][:, None] / np.maximum(prefill.ttft_s[p_rows][:, None], transfer)
    p_hourly = (prefill.devices[p_rows] * prefill.hourly_usd[p_rows])[:, None]
    fluid = p_hourly / p_rate + (d_hourly[d_keep] / d_rate[d_keep])[None, :]
    if slo.max_ttft_s is not None:
        fluid = np.where(ttft <= slo.max_ttft_s, fluid, np.inf)
    floor = slo.min_throughput_tokens_per_s
    best: tuple[float, int, int, tuple[int, int, float, float]] | None = None
    for flat in np.argsort(fluid, axis=None)[:TOP_PAIRS]:
        i, j = np.unravel_index(flat, fluid.shape)
        if not np.isfinite(fluid[i, j]):
            break
        if exclude and _key(prefill, int(p_rows[i]), decode, int(d_rows[d_keep[j]])) in exclude:
            continue
        pools = pool_ratio(
            float(p_rate[i, j]),
            float(d_rate[d_keep[j]]),
            float(p_hourly[i, 0]),
            float(d_hourly[d_keep[j]]),
            int(prefill.devices[p_rows[i]]),
            int(decode.devices[d_rows[d_keep[j]]]),
            max_devices,
            None if floor is None else floor / out,
        )
        if pools is None:
            continue
        per_token = pools[3] / 3600 / (pools[2] * out) * 1e6
        if best is None or per_token < best[0]:
            best = (per_token, int(i), int(j), pools)
    if best is None:
        raise InputError(
            f"no prefill/decode pools fit within {max_devices} devices (--max-devices)"
            + ("" if floor is None else f" at --min-throughput {floor:.4g} tok/s")
        )
    per_token, i, j, (n, m, requests, _) = best
    p_row, d_row = int(p_rows[i]), int(d_rows[d_keep[j]])
    return DesignPair(
        prefill=_pool(
            prefill, p_row, n, float(prefill.ttft_s[p_row]), float(p_rate[i, j]), "prefill"
        ),
        decode=_pool(
            decode, d_row, m, float(decode.tpot_s[d_row]), float(d_rate[d_keep[j]]), "decode"
        ),
        kv_transfer_bytes=float(kv_total[p_row]),
        kv_transfer_s=float(transfer[i, j]),
        ttft_s=float(ttft[i, j]),
        tpot_s=float(decode.tpot_s[d_row]),
        requests_per_s=requests,
        output_tokens=out,
        usd_per_million_output_tokens=per_token,
        colocated=colocated_best(prefill, decode, scenario, slo, max_devices),
        pairs_considered=int(np.isfinite(fluid).sum()),
    )


def _key(prefill: SpaceTable, p_row: int, decode: SpaceTable, d_row: int) -> tuple[object, ...]:
    """`DesignPair.key` of a (prefill row, decode row)."""
    return tuple(
        item
        for table, row in ((prefill, p_row), (decode, d_row))
        for item in (
            table.designs[int(table.design[row])].name,
            int(table.tp[row]),
            int(table.pp[row]),
            int(table.ep[row]),
        )
    )


def _pool(
    table: SpaceTable, row: int, replicas: int, seconds: float, rate: float, phase: str
) -> PhasePool:
    index = int(table.design[row])
    bounds = table.prefill_bound if phase == "prefill" else table.decode_bound
    return PhasePool(
        design=table.designs[index],
        cost=table.costs[index],
        tp=int(table.tp[row]),
        pp=int(table.pp[row]),
        ep=int(table.ep[row]),
        replicas=replicas,
        seconds=seconds,
        requests_per_s=rate,
        hourly_usd=float(table.devices[row] * table.hourly_usd[row]),
        bound=str(bounds[row]),
    )


def _infeasible(
    prefill: SpaceTable,
    decode: SpaceTable,
    slo: ServiceLevel,
    p_ok: NDArray[np.bool_],
    d_ok: NDArray[np.bool_],
) -> str:
    if not d_ok.any():
        if not decode.fits.any():
            return "no design of the space holds the model and the decode batch's KV cache"
        best = float(decode.tpot_s[decode.fits].min())
        return (
            f"--max-tpot-ms {slo.max_tpot_s * 1e3:.4g} ms cannot be met by any decode design "  # type: ignore[operator]
            f"of the space: the best achievable is {format_seconds(best)}"
        )
    if not prefill.fits.any():
        return "no design of the space holds the model for prefill"
    best = float(prefill.ttft_s[prefill.fits].min())
    return (
        f"--max-ttft-s {slo.max_ttft_s:.4g} s cannot be met by any prefill design of the "
        f"space with its KV transfer: the best prefill alone is {format_seconds(best)}"
    )
