"""Energy and money per token: device-hour cost, joules and dollars per token of a
prediction or a simulated serving run (`costs`). Used by `search.sizing`,
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

__all__ = [
    "CostModel",
    "DeviceHourCost",
    "Economics",
    "device_hour_cost",
    "economics",
    "power_basis",
    "serving_energy_j",
]
