"""Energy and money per token: device-hour cost, joules and dollars per token of a
prediction or a simulated serving run (`costs`); a hardware design's speed, cost and
$ per token on a workload (`designs`). Used by `search.sizing`,
`search.serving` and the CLI's ``predict``."""

from .costs import (
    CostModel,
    DeviceHourCost,
    Economics,
    device_hour_cost,
    economics,
    power_basis,
    serving_energy_j,
)
from .designs import (
    DESIGN_ELECTRICITY_USD_PER_KWH,
    DESIGN_LIFETIME_YEARS,
    DesignEvaluation,
    design_hourly_usd,
    evaluate_design,
)

__all__ = [
    "DESIGN_ELECTRICITY_USD_PER_KWH",
    "DESIGN_LIFETIME_YEARS",
    "CostModel",
    "DesignEvaluation",
    "DeviceHourCost",
    "Economics",
    "design_hourly_usd",
    "device_hour_cost",
    "economics",
    "evaluate_design",
    "power_basis",
    "serving_energy_j",
]
