"""Energy and cost of the tokens a simulated deployment generates.

Energy follows genz's power model step by step (`search.economics.serving_energy_j`): on a
platform with a ``power_model`` every step of a replica draws the activity power of its
per-device FLOP and main-memory bytes over its time, capped at TDP, and devices draw
idle power between steps; otherwise every device draws ``power_fraction`` of its board
power (TDP) for the whole run. The run lasts from the first arrival to the last finish
(the span throughput is measured over). Dollars are the platform's device-hour price
(`search.economics.device_hour_cost`) over the same span.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from roofline import require_fraction, require_positive
from search.economics import device_hour_cost, power_basis, serving_energy_j

from .engine import RunRecord
from .schedulers import Replica


@dataclass(frozen=True)
class ServingEconomics:
    """Cost and energy of generated tokens at a simulated operating point.

    ``energy_j`` (J) of every device over ``span_s`` (s); ``mean_power_w`` the
    deployment's mean draw (W, all devices); ``power_basis`` names the power model of
    each platform. None where a platform lists no power or price.
    """

    devices: int
    output_tokens_per_s: float
    span_s: float
    energy_j: float | None
    mean_power_w: float | None
    j_per_output_token: float | None
    output_tokens_per_j: float | None
    power_basis: str
    output_tokens_per_usd: float | None
    usd_per_million_output_tokens: float | None

    def to_dict(self) -> dict[str, object]:
        """Plain values (JSON-ready)."""
        return asdict(self)


#: One pool of a deployment: its replica, how many, and the record of their run.
Pool = tuple[Replica, int, RunRecord]


def pool_economics(
    pools: Sequence[Pool], span_s: float, output_tokens: float, power_fraction: float = 1.0
) -> ServingEconomics:
    """Energy, tokens per joule and per dollar of a deployment of ``(replica, count,
    record)`` pools that generated ``output_tokens`` tokens over ``span_s`` seconds
    (module doc): ``J/token = sum of pool energies / output_tokens``, mean power
    ``= energy / span_s``, ``$/token = sum(device-hour price x devices) x span_s / 3600
    / output_tokens``."""
    require_fraction("power_fraction", power_fraction)
    require_positive("span_s", span_s)
    require_positive("output_tokens", output_tokens)
    devices = sum(replica.devices * count for replica, count, _ in pools)
    joules: float | None = 0.0
    usd_per_hour: float | None = 0.0
    bases: list[str] = []
    for replica, count, record in pools:
        platform = replica.platform
        energy = serving_energy_j(
            platform,
            replica.devices,
            count,
            span_s,
            record.step_s,
            record.step_flop,
            record.step_bytes,
            power_fraction,
        )
        joules = None if joules is None or energy is None else joules + energy
        basis = f"{platform.name}: {power_basis(platform, power_fraction)}"
        if basis not in bases:
            bases.append(basis)
        price = device_hour_cost(platform)
        usd_per_hour = (
            None
            if usd_per_hour is None or price is None
            else usd_per_hour + price.usd_per_hour * replica.devices * count
        )
    usd_per_token = None if usd_per_hour is None else usd_per_hour * span_s / 3600 / output_tokens
    return ServingEconomics(
        devices=devices,
        output_tokens_per_s=output_tokens / span_s,
        span_s=span_s,
        energy_j=joules,
        mean_power_w=None if joules is None else joules / span_s,
        j_per_output_token=None if joules is None else joules / output_tokens,
        output_tokens_per_j=None if not joules else output_tokens / joules,
        power_basis="; ".join(bases),
        output_tokens_per_usd=None if usd_per_token is None else 1 / usd_per_token,
        usd_per_million_output_tokens=None if usd_per_token is None else usd_per_token * 1e6,
    )
