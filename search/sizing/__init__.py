"""Sizing: SLO -> platform requirements (a preset scaled or replicated, or the cheapest
parametric design and prefill/decode design pair, checked on the serving simulator), and OI/CF reports across workloads.

Public face of ``search.sizing``.
"""

from .cheapest import OBJECTIVES as DESIGN_OBJECTIVES
from .cheapest import CheapestDesign, DesignChoice, cheapest_design
from .design_pairs import design_pair
from .design_space import (
    DEFAULT_COMPUTE_TFLOPS,
    DEFAULT_LINKS,
    DEFAULT_MEMORIES,
    DEFAULT_NODES,
    DEFAULT_SRAM_MB,
    DesignGrid,
    SpaceTable,
    designs_from_file,
    evaluate_space,
)
from .oicf import DEFAULT_BITS, DEFAULT_MODELS, OicfReport, oicf_report
from .pair_simulation import (
    SIMULATED_REQUESTS,
    PairSimulation,
    SimulatedRun,
    simulate_pair,
)
from .pools import ColocatedDesign, DesignPair, PhasePool, pool_ratio
from .requirements import AXES, METHODS, Requirement, find_requirement
from .simulated_pairs import SimulatedPair, simulated_design_pair
from .slo import ServiceLevel, format_seconds

__all__ = [
    "AXES",
    "DEFAULT_BITS",
    "DEFAULT_COMPUTE_TFLOPS",
    "DEFAULT_LINKS",
    "DEFAULT_MEMORIES",
    "DEFAULT_MODELS",
    "DEFAULT_NODES",
    "DEFAULT_SRAM_MB",
    "DESIGN_OBJECTIVES",
    "METHODS",
    "SIMULATED_REQUESTS",
    "CheapestDesign",
    "ColocatedDesign",
    "DesignChoice",
    "DesignGrid",
    "DesignPair",
    "OicfReport",
    "PairSimulation",
    "PhasePool",
    "Requirement",
    "ServiceLevel",
    "SimulatedPair",
    "SimulatedRun",
    "SpaceTable",
    "cheapest_design",
    "design_pair",
    "designs_from_file",
    "evaluate_space",
    "find_requirement",
    "format_seconds",
    "oicf_report",
    "pool_ratio",
    "simulate_pair",
    "simulated_design_pair",
]
