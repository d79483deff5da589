"""Energy and cost per token of a prediction: joules per token, dollars per million tokens.

Assumptions (stated once, used everywhere):

- Power of one device during a phase (prefill or one decode step), watts:

  - where the platform has a `roofline.PowerModel` (preset key ``power_model``), the
    activity model ``min(power_w, idle_w + j_per_flop * FLOP/s + j_per_byte * bytes/s)``
    (`roofline.activity_power_w`), the rates being the phase's per-device FLOP and
    main-memory bytes (`PhaseCost.flop`, `PhaseCost.bytes`) over its predicted time
    (``ttft_s`` or ``tpot_s``); ``power_fraction`` is then not used;
  - otherwise ``power_fraction`` of the board power ``Platform.power_w`` (TDP), busy or
    waiting (pipeline bubbles and collectives included). ``power_fraction = 1`` is the
    TDP upper bound; measured inference draw is often 50-95 % of TDP.

  Every device of the mesh (``tp * pp * ep * dp`` of them) draws it for the whole phase.
- Energy per token of a phase = ``phase power * devices * phase time / tokens of that
  phase``. Prefill tokens are the prompt tokens of the batch
  (``dp * batch * input_tokens`` in ``ttft_s``); decode tokens are one per sequence
  per step (``dp * batch`` in ``tpot_s``). Host CPUs, networking and cooling (PUE)
  are not counted.
- A device-hour costs ``Platform.price_usd_per_hour`` (on-demand rental, power
  included) or, when the platform gives only a purchase price or ``lifetime_years``
  is passed, ``price_usd / (lifetime_years * 8766 h)`` plus, optionally, the
  electricity it draws at ``electricity_usd_per_kwh``.
- ``utilization`` is the share of paid device-hours spent serving; cost per token
  divides by it (idle paid hours are spread over the tokens served).

- A simulated serving run (`serving_energy_j`) applies the same rule step by step:
  each step of a replica draws ``min(power_w, idle_w + j_per_flop * FLOP/s + j_per_byte
  * bytes/s)`` over its time (the step's per-device FLOP and bytes,
  `genz.StepCost.step_work`), and a device between steps draws ``idle_w``; without a
  power model every device draws ``power_fraction * power_w`` for the whole run.

Derived (what-if) platforms keep the base device's power and price.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from roofline import (
    InputError,
    activity_power_w,
    require_fraction,
    require_non_negative,
    require_positive,
)

if TYPE_CHECKING:
    from genz import Prediction
    from roofline import Platform

HOURS_PER_YEAR = 365.25 * 24
SECONDS_PER_HOUR = 3600.0
#: Years a purchase price is spread over when the platform lists no hourly price
#: and no ``lifetime_years`` is given (a common straight-line depreciation term).
DEFAULT_LIFETIME_YEARS = 4.0


@dataclass(frozen=True)
class DeviceHourCost:
    """Dollars per device-hour and where the figure comes from."""

    usd_per_hour: float
    basis: str


@dataclass(frozen=True)
class Economics:
    """Energy (J) and cost (US$) per token of one prediction; None where unknown.

    ``*_usd_per_million_tokens`` count prompt tokens for prefill and generated
    tokens for decode; ``output_tokens_per_usd`` and ``j_per_output_token`` charge
    the whole request (prefill plus decode) to the generated tokens.
    ``prefill_power_w`` and ``decode_power_w`` are one device's modelled draw during
    each phase (W); ``power_basis`` names the power model used.
    """

    devices: int
    power_w_per_device: float | None
    power_fraction: float
    power_basis: str
    prefill_power_w: float | None
    decode_power_w: float | None
    usd_per_device_hour: float | None
    price_basis: str
    prefill_j_per_token: float | None
    decode_j_per_token: float | None
    j_per_output_token: float | None
    prefill_usd_per_million_tokens: float | None
    decode_usd_per_million_tokens: float | None
    usd_per_million_output_tokens: float | None
    output_tokens_per_usd: float | None

    def to_dict(self) -> dict[str, object]:
        """Plain values (JSON-ready)."""
        return asdict(self)


@dataclass(frozen=True)
class CostModel:
    """The assumptions of `economics` bundled, so searches can carry them around.

    ``power_fraction`` and ``utilization`` in (0, 1]; ``lifetime_years`` > 0 or
    None; ``electricity_usd_per_kwh`` >= 0 (see module doc). ``power_fraction``
    applies only to platforms without a ``power_model``.
    """

    power_fraction: float = 1.0
    utilization: float = 1.0
    lifetime_years: float | None = None
    electricity_usd_per_kwh: float = 0.0

    def __post_init__(self) -> None:
        require_fraction("power_fraction", self.power_fraction)
        require_fraction("utilization", self.utilization)
        if self.lifetime_years is not None:
            require_positive("lifetime_years", self.lifetime_years)
        require_non_negative("electricity_usd_per_kwh", self.electricity_usd_per_kwh)

    def evaluate(self, prediction: Prediction, platform: Platform) -> Economics:
        """`economics` of ``prediction`` on ``platform`` under these assumptions."""
        return economics(
            prediction,
            platform,
            power_fraction=self.power_fraction,
            utilization=self.utilization,
            lifetime_years=self.lifetime_years,
            electricity_usd_per_kwh=self.electricity_usd_per_kwh,
        )


def device_hour_cost(
    platform: Platform,
    lifetime_years: float | None = None,
    electricity_usd_per_kwh: float = 0.0,
    power_fraction: float = 1.0,
) -> DeviceHourCost | None:
    """Dollars per device-hour of ``platform``, or None when it lists no price.

    With ``lifetime_years`` the purchase price ``price_usd`` is amortised over it
    (an error if the platform has none); otherwise the on-demand
    ``price_usd_per_hour`` is used, falling back to the purchase price over
    `DEFAULT_LIFETIME_YEARS`. Electricity is added to amortised prices only
    (rental prices include it).
    """
    require_non_negative("electricity_usd_per_kwh", electricity_usd_per_kwh)
    require_fraction("power_fraction", power_fraction)
    if lifetime_years is not None:
        require_positive("lifetime_years", lifetime_years)
        if platform.price_usd is None:
            raise InputError(
                f"{platform.name} lists no price_usd to amortise over lifetime_years; "
                "add price_usd to its YAML or drop lifetime_years"
            )
    elif platform.price_usd_per_hour is not None:
        return DeviceHourCost(platform.price_usd_per_hour, "on-demand price_usd_per_hour")
    if platform.price_usd is None:
        return None
    years = DEFAULT_LIFETIME_YEARS if lifetime_years is None else lifetime_years
    hourly = platform.price_usd / (years * HOURS_PER_YEAR)
    basis = f"price_usd over {years:g} years"
    if electricity_usd_per_kwh > 0:
        if platform.power_w is None:
            raise InputError(f"{platform.name} lists no power_w to price electricity")
        hourly += platform.power_w * power_fraction / 1000 * electricity_usd_per_kwh
        basis += f" + electricity at ${electricity_usd_per_kwh:g}/kWh"
    return DeviceHourCost(hourly, basis)


def phase_tokens(prediction: Prediction, phase: str) -> float:
    """Tokens one pass of ``phase`` handles: the prompt (prefill) or one step (decode)."""
    scenario = prediction.scenario
    sequences = scenario.parallelism.dp * scenario.batch
    if phase == "prefill":
        return float(sequences * scenario.input_tokens)
    if phase == "decode":
        return float(sequences)
    raise InputError(f"phase must be 'prefill' or 'decode', got {phase!r}")


def phase_time_s(prediction: Prediction, phase: str) -> float:
    """Time of one pass of ``phase``: TTFT (prefill) or TPOT (one decode step), seconds."""
    phase_tokens(prediction, phase)
    return prediction.ttft_s if phase == "prefill" else prediction.tpot_s


def power_basis(platform: Platform, power_fraction: float = 1.0) -> str:
    """Which power model `phase_power_w` uses for ``platform``, in words."""
    if platform.power_model is not None:
        return "activity model: idle + energy per FLOP + energy per byte, capped at TDP"
    if platform.power_w is None:
        return "no power listed"
    return f"{power_fraction:g} x TDP"


def serving_energy_j(
    platform: Platform,
    devices: int,
    replicas: int,
    wall_s: float,
    step_s: ArrayLike,
    step_flop: ArrayLike,
    step_bytes: ArrayLike,
    power_fraction: float = 1.0,
) -> float | None:
    """Joules drawn by ``replicas`` replicas of ``devices`` devices each over a serving
    run of ``wall_s`` seconds, None when the platform lists no power (module doc).

    ``step_s``, ``step_flop`` and ``step_bytes`` are every step the replicas ran (time,
    s; per-device FLOP and main-memory bytes). With a power model: ``devices x
    (replicas x idle_w x wall_s + sum over steps of min((power_w - idle_w) x step_s,
    j_per_flop x FLOP + j_per_byte x bytes))``, i.e. each step's power capped at TDP
    (no cap when ``power_w`` is None) and idle draw between steps. Without one:
    ``power_fraction x power_w x devices x replicas x wall_s``.
    """
    require_fraction("power_fraction", power_fraction)
    require_non_negative("wall_s", wall_s)
    if platform.power_model is None:
        if platform.power_w is None:
            return None
        return platform.power_w * power_fraction * devices * replicas * wall_s
    power = platform.power_model
    seconds = np.asarray(step_s, float)
    dynamic = power.j_per_flop * np.asarray(step_flop, float)
    dynamic = dynamic + power.j_per_byte * np.asarray(step_bytes, float)
    if platform.power_w is not None:
        dynamic = np.minimum(dynamic, (platform.power_w - power.idle_w) * seconds)
    return devices * (replicas * power.idle_w * wall_s + float(dynamic.sum()))


def phase_power_w(
    prediction: Prediction, platform: Platform, phase: str, power_fraction: float = 1.0
) -> float | None:
    """Modelled draw of one device during ``phase``, watts (see module doc).

    The activity model where the platform has a ``power_model``; else
    ``power_fraction * power_w``; None when the platform lists neither.
    """
    require_fraction("power_fraction", power_fraction)
    seconds = phase_time_s(prediction, phase)
    if platform.power_model is not None:
        cost = prediction.prefill if phase == "prefill" else prediction.decode
        if seconds <= 0:
            return activity_power_w(platform.power_model, 0.0, 0.0, platform.power_w)
        return activity_power_w(
            platform.power_model, cost.flop / seconds, cost.bytes / seconds, platform.power_w
        )
    if platform.power_w is None:
        return None
    return platform.power_w * power_fraction


def energy_per_token_j(
    prediction: Prediction, platform: Platform, phase: str, power_fraction: float = 1.0
) -> float | None:
    """Joules per token of ``phase``: ``phase power * devices * time / tokens``.

    None when the platform lists no power.
    """
    watts = phase_power_w(prediction, platform, phase, power_fraction)
    if watts is None:
        return None
    devices = prediction.scenario.parallelism.devices
    return watts * devices * phase_time_s(prediction, phase) / phase_tokens(prediction, phase)


def request_energy_j(
    prediction: Prediction, platform: Platform, power_fraction: float = 1.0
) -> float | None:
    """Joules of the whole request on every device: prefill power x TTFT plus decode
    power x the decode steps after the first token (None when no power is listed)."""
    prefill = phase_power_w(prediction, platform, "prefill", power_fraction)
    decode = phase_power_w(prediction, platform, "decode", power_fraction)
    if prefill is None or decode is None:
        return None
    devices = prediction.scenario.parallelism.devices
    return devices * (prefill * prediction.ttft_s + decode * prediction.decode_s)


def _drawn_fraction(
    prediction: Prediction, platform: Platform, phase: str | None, power_fraction: float
) -> float:
    """Share of TDP drawn (the phase's, or the request's mean for ``phase=None``), for
    pricing electricity; ``power_fraction`` where the platform has no power model."""
    if platform.power_model is None or platform.power_w is None:
        return power_fraction
    if phase is not None:
        watts = phase_power_w(prediction, platform, phase)
    else:
        joules = request_energy_j(prediction, platform)
        seconds = prediction.ttft_s + prediction.decode_s
        devices = prediction.scenario.parallelism.devices
        watts = None if joules is None or seconds <= 0 else joules / seconds / devices
    if watts is None:
        return power_fraction
    return min(1.0, max(watts / platform.power_w, 1e-9))


def usd_per_million_tokens(
    prediction: Prediction,
    platform: Platform,
    phase: str,
    *,
    lifetime_years: float | None = None,
    electricity_usd_per_kwh: float = 0.0,
    power_fraction: float = 1.0,
    utilization: float = 1.0,
) -> float | None:
    """US$ per million tokens of ``phase`` (None when the platform lists no price)."""
    require_fraction("utilization", utilization)
    require_fraction("power_fraction", power_fraction)
    drawn = _drawn_fraction(prediction, platform, phase, power_fraction)
    hourly = device_hour_cost(platform, lifetime_years, electricity_usd_per_kwh, drawn)
    if hourly is None:
        return None
    devices = prediction.scenario.parallelism.devices
    dollars = hourly.usd_per_hour * devices * phase_time_s(prediction, phase) / SECONDS_PER_HOUR
    return dollars / utilization / phase_tokens(prediction, phase) * 1e6


def economics(
    prediction: Prediction,
    platform: Platform,
    *,
    power_fraction: float = 1.0,
    utilization: float = 1.0,
    lifetime_years: float | None = None,
    electricity_usd_per_kwh: float = 0.0,
) -> Economics:
    """Energy and cost per token of ``prediction`` on ``platform`` (see module doc)."""
    require_fraction("power_fraction", power_fraction)
    require_fraction("utilization", utilization)
    scenario = prediction.scenario
    devices = scenario.parallelism.devices
    generated = scenario.parallelism.dp * scenario.batch * scenario.output_tokens
    drawn = _drawn_fraction(prediction, platform, None, power_fraction)
    hourly = device_hour_cost(platform, lifetime_years, electricity_usd_per_kwh, drawn)
    request_j = request_energy_j(prediction, platform, power_fraction)
    request_usd = None
    if hourly is not None:
        request_usd = hourly.usd_per_hour * devices * prediction.e2e_s / SECONDS_PER_HOUR
        request_usd /= utilization

    def phase_usd(phase: str) -> float | None:
        return usd_per_million_tokens(
            prediction,
            platform,
            phase,
            lifetime_years=lifetime_years,
            electricity_usd_per_kwh=electricity_usd_per_kwh,
            power_fraction=power_fraction,
            utilization=utilization,
        )

    return Economics(
        devices=devices,
        power_w_per_device=platform.power_w,
        power_fraction=power_fraction,
        power_basis=power_basis(platform, power_fraction),
        prefill_power_w=phase_power_w(prediction, platform, "prefill", power_fraction),
        decode_power_w=phase_power_w(prediction, platform, "decode", power_fraction),
        usd_per_device_hour=None if hourly is None else hourly.usd_per_hour,
        price_basis="no price listed" if hourly is None else hourly.basis,
        prefill_j_per_token=energy_per_token_j(prediction, platform, "prefill", power_fraction),
        decode_j_per_token=energy_per_token_j(prediction, platform, "decode", power_fraction),
        j_per_output_token=None if request_j is None else request_j / generated,
        prefill_usd_per_million_tokens=phase_usd("prefill"),
        decode_usd_per_million_tokens=phase_usd("decode"),
        usd_per_million_output_tokens=None
        if request_usd is None
        else request_usd / generated * 1e6,
        output_tokens_per_usd=None if request_usd is None else generated / request_usd,
    )
