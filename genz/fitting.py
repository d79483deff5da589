"""The face genz shows the calibration layer: the terms a fit of a runtime profile needs.

`calibration` (profile fitting, cross-validation, intervals) sits above genz and imports
only `genz` and this module (an import-linter contract). Everything here is a pure
function or a constant of the workload model or the runtime-profile schema; nothing
imports the calibration layer back.
"""

from .ffn_ops import expected_experts_touched
from .inputs import GridInputs
from .op_terms import Array
from .predictor import evaluate
from .runtime import (
    ACCURACY_METRICS,
    FORMAT_KEYS,
    INHERITABLE,
    INHERITED,
    KV_FORMAT_KEYS,
    MAX_PROFILE_BYTES,
    PHASE_KEYS,
    PHASES,
    Accuracy,
    ClassAccuracy,
    DeviceOverride,
    kv_formats_from_dict,
    weight_format_from_dict,
)
from .runtime_cost import EXPERT_GROUP, kv_format_memory_s, scaled_terms

__all__ = [
    "ACCURACY_METRICS",
    "EXPERT_GROUP",
    "FORMAT_KEYS",
    "INHERITABLE",
    "INHERITED",
    "KV_FORMAT_KEYS",
    "MAX_PROFILE_BYTES",
    "PHASES",
    "PHASE_KEYS",
    "Accuracy",
    "Array",
    "ClassAccuracy",
    "DeviceOverride",
    "GridInputs",
    "evaluate",
    "expected_experts_touched",
    "kv_format_memory_s",
    "kv_formats_from_dict",
    "scaled_terms",
    "weight_format_from_dict",
]
