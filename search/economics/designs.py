"""A hardware design scored on a workload: speed, area, TDP, cost and $ per token.

`evaluate_design` is the one function the CLI (``codesign hw design --model ...``), the
benchmarks and a dashboard page call: it builds the design's `roofline.Platform`
(`roofline.design_platform`), predicts the scenario with genz and prices it with
`economics` (the modelled manufacturing cost amortised over ``lifetime_years`` plus
electricity at the activity-model draw). ``perf_per_cost`` is output tokens per second
per device over the device cost (tokens/s per US$): the LLMCompass-style figure of merit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from roofline import design_cost, design_platform, require_non_negative, require_positive

from .costs import economics

if TYPE_CHECKING:
    from genz import ModelConfig, RuntimeProfile, Scenario
    from roofline import AcceleratorDesign

#: Straight-line depreciation term and an electricity price for designs (no rental
#: price exists for a device that does not): 4 years, US$0.10 per kWh.
DESIGN_LIFETIME_YEARS = 4.0
DESIGN_ELECTRICITY_USD_PER_KWH = 0.10
HOURS_PER_YEAR = 365.25 * 24


def design_hourly_usd(
    device_cost_usd: float,
    power_w: float,
    lifetime_years: float = DESIGN_LIFETIME_YEARS,
    electricity_usd_per_kwh: float = DESIGN_ELECTRICITY_USD_PER_KWH,
) -> float:
    """US$ per device-hour of a design: ``cost / (lifetime x 8766 h) + W / 1000 x $/kWh``
    (straight-line depreciation plus electricity at ``power_w``)."""
    require_positive("lifetime_years", lifetime_years)
    require_non_negative("electricity_usd_per_kwh", electricity_usd_per_kwh)
    return (
        device_cost_usd / (lifetime_years * HOURS_PER_YEAR)
        + power_w / 1000 * electricity_usd_per_kwh
    )


@dataclass(frozen=True)
class DesignEvaluation:
    """One design on one scenario; SI units and US$ (None where capacity is exceeded)."""

    name: str
    area_mm2: float
    die_area_mm2: float
    yield_fraction: float
    tdp_w: float
    device_cost_usd: float
    die_usd: float
    memory_usd: float
    package_usd: float
    board_usd: float
    fits: bool
    devices: int
    ttft_s: float
    tpot_s: float
    throughput_tokens_per_s: float
    throughput_tokens_per_s_per_device: float
    usd_per_million_output_tokens: float | None
    j_per_output_token: float | None
    perf_per_cost: float

    def to_dict(self) -> dict[str, object]:
        """Plain values (JSON-ready)."""
        return asdict(self)


def evaluate_design(
    design: AcceleratorDesign,
    model: ModelConfig,
    scenario: Scenario,
    *,
    runtime: RuntimeProfile | None = None,
    lifetime_years: float = DESIGN_LIFETIME_YEARS,
    electricity_usd_per_kwh: float = DESIGN_ELECTRICITY_USD_PER_KWH,
    utilization: float = 1.0,
) -> DesignEvaluation:
    """Speed, cost and $ per million output tokens of ``design`` serving ``scenario``."""
    from genz import predict

    require_positive("lifetime_years", lifetime_years)
    require_non_negative("electricity_usd_per_kwh", electricity_usd_per_kwh)
    cost = design_cost(design)
    platform = design_platform(design, cost)
    prediction = predict(model, platform, scenario, runtime)
    money = economics(
        prediction,
        platform,
        utilization=utilization,
        lifetime_years=lifetime_years,
        electricity_usd_per_kwh=electricity_usd_per_kwh,
    )
    per_device = prediction.throughput_tokens_per_s_per_device
    return DesignEvaluation(
        name=design.name,
        area_mm2=cost.area_mm2,
        die_area_mm2=cost.die_area_mm2,
        yield_fraction=cost.yield_fraction,
        tdp_w=cost.tdp_w,
        device_cost_usd=cost.device_cost_usd,
        die_usd=cost.die_usd,
        memory_usd=cost.memory_usd,
        package_usd=cost.package_usd,
        board_usd=cost.board_usd,
        fits=prediction.capacity.fits,
        devices=scenario.parallelism.devices,
        ttft_s=prediction.ttft_s,
        tpot_s=prediction.tpot_s,
        throughput_tokens_per_s=prediction.throughput_tokens_per_s,
        throughput_tokens_per_s_per_device=per_device,
        usd_per_million_output_tokens=money.usd_per_million_output_tokens,
        j_per_output_token=money.j_per_output_token,
        perf_per_cost=per_device / cost.device_cost_usd,
    )
