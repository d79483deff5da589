"""Sizing: SLO -> platform requirements, and OI/CF reports across workloads.

Public face of ``search.sizing``.
"""

from .oicf import DEFAULT_BITS, DEFAULT_MODELS, OicfReport, oicf_report
from .requirements import AXES, METHODS, Requirement, find_requirement
from .slo import ServiceLevel, format_seconds

__all__ = [
    "AXES",
    "DEFAULT_BITS",
    "DEFAULT_MODELS",
    "METHODS",
    "OicfReport",
    "Requirement",
    "ServiceLevel",
    "find_requirement",
    "format_seconds",
    "oicf_report",
]
