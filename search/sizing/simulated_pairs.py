"""The rate model's prefill/decode pairs in order until one passes the simulator.

`simulated_design_pair` runs `design_pair`, checks its answer with `simulate_pair`, and
when no pools of that pair meet the SLO within ``max_devices`` in simulation, asks
`design_pair` again without it (``exclude``), up to ``MAX_CANDIDATES`` pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from genz import ModelConfig, Scenario
from roofline import AcceleratorDesign, InputError

from .design_pairs import design_pair
from .pair_simulation import SIMULATED_REQUESTS, PairSimulation, simulate_pair
from .pools import DesignPair
from .slo import ServiceLevel

#: Pairs tried in rate-model order before giving up on the simulator's sizing.
MAX_CANDIDATES = 3


@dataclass(frozen=True)
class SimulatedPair:
    """The pair the simulation accepts (or, when none does, the last one tried), its
    simulation, and every earlier candidate the simulation turned down."""

    pair: DesignPair
    simulation: PairSimulation
    rejected: tuple[tuple[DesignPair, PairSimulation], ...]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            **self.simulation.to_dict(),
            "fits": self.simulation.fits,
            "rejected_pairs": [
                {
                    "prefill": pair.prefill.design.name,
                    "decode": pair.decode.design.name,
                    "pool_ratio": pair.ratio_text,
                    "message": simulation.message,
                }
                for pair, simulation in self.rejected
            ],
        }


def simulated_design_pair(
    model: ModelConfig,
    scenario: Scenario,
    slo: ServiceLevel,
    designs: list[AcceleratorDesign],
    *,
    max_devices: int = 64,
    lifetime_years: float = 4.0,
    electricity_usd_per_kwh: float = 0.10,
    kv_link_gb_per_s: float | None = None,
    requests: int = SIMULATED_REQUESTS,
    candidates: int = MAX_CANDIDATES,
) -> SimulatedPair:
    """`design_pair`, then `simulate_pair`; a pair no pools of which meet the SLO in
    simulation within ``max_devices`` gives way to the next of the rate model's order,
    up to ``candidates`` pairs."""
    rejected: list[tuple[DesignPair, PairSimulation]] = []
    excluded: frozenset[tuple[object, ...]] = frozenset()
    while True:
        try:
            pair = design_pair(
                model,
                scenario,
                slo,
                designs,
                max_devices=max_devices,
                lifetime_years=lifetime_years,
                electricity_usd_per_kwh=electricity_usd_per_kwh,
                kv_link_gb_per_s=kv_link_gb_per_s,
                exclude=excluded,
            )
        except InputError:
            if not rejected:
                raise
            last_pair, last = rejected.pop()
            return SimulatedPair(last_pair, last, tuple(rejected))
        simulation = simulate_pair(
            model,
            scenario,
            slo,
            pair,
            max_devices=max_devices,
            kv_link_gb_per_s=kv_link_gb_per_s,
            requests=requests,
        )
        if simulation.fits or len(rejected) + 1 >= candidates:
            return SimulatedPair(pair, simulation, tuple(rejected))
        rejected.append((pair, simulation))
        excluded = excluded | {pair.key}
