"""The calibration layer: measured runs, the physics check, fitting runtime profiles,
cross-validation and prediction intervals.

It sits above `genz` (whose workload model it fits) and below `search/` and `app/`;
genz never imports it. It uses only the faces `genz` and `genz.fitting` (import-linter
contracts in pyproject.toml). Typical use::

    from calibration import calibrate_runtime, load_measurements

    rows = load_measurements("data/validation/llm_inference_bench/normalized.csv")
    result = calibrate_runtime(rows, runtime="vllm")

The fitting modules load on first use of one of their names (``roofline.lazy_exports``);
the measurement schema imports without numpy.
"""

from typing import TYPE_CHECKING

from roofline import lazy_exports

from .measurements import RUNTIMES as MEASUREMENT_RUNTIMES
from .measurements import Measurement, load_measurements, parse_measurements, write_measurements

if TYPE_CHECKING:
    from .calibrate import (
        Calibration,
        calibrate_runtime,
        calibration_rows,
        load_formats,
        load_kv_formats,
        recalibrate,
    )
    from .cross_validation import fit_runtime
    from .held_out import (
        HeldOutRow,
        held_out_rows,
        read_held_out,
        shipped_held_out_path,
        write_held_out,
    )
    from .intervals import (
        INTERVAL_KINDS,
        METRIC_LABELS,
        Interval,
        prediction_interval,
        prediction_intervals,
    )
    from .physics_check import (
        PhysicsCheck,
        RowCheck,
        batch_latency_bound,
        check_measurements,
        fewest_experts_model,
        ideal_platform,
    )
    from .profile_io import write_profile
    from .rows import measured_metrics
    from .scenario_columns import SCENARIO_OUTPUTS, output_columns
    from .scenario_summary import source_summary
    from .scenarios import ScenarioRow, load_scenarios, parse_scenarios, predict_scenarios
    from .serving_cost_table import FamilyCosts, load_serving_costs, serving_costs_path
    from .serving_costs import (
        FAMILIES,
        Stack,
        adapt_profile,
        gemm_scale,
        newer,
        profile_stack,
        served,
        stack_of,
    )
    from .store import SourceInfo, StoredRow, load_store, load_tagged_measurements
    from .transfer_export import (
        TransferExport,
        export_transfer,
        rederive_transfer,
        transfer_profile_paths,
    )
    from .transfer_terms import parse_variant

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "FAMILIES",
    "INTERVAL_KINDS",
    "MEASUREMENT_RUNTIMES",
    "METRIC_LABELS",
    "SCENARIO_OUTPUTS",
    "Calibration",
    "FamilyCosts",
    "HeldOutRow",
    "Interval",
    "Measurement",
    "PhysicsCheck",
    "RowCheck",
    "ScenarioRow",
    "SourceInfo",
    "Stack",
    "StoredRow",
    "TransferExport",
    "adapt_profile",
    "batch_latency_bound",
    "calibrate_runtime",
    "calibration_rows",
    "check_measurements",
    "export_transfer",
    "fewest_experts_model",
    "fit_runtime",
    "gemm_scale",
    "held_out_rows",
    "ideal_platform",
    "load_formats",
    "load_kv_formats",
    "load_measurements",
    "load_scenarios",
    "load_serving_costs",
    "load_store",
    "load_tagged_measurements",
    "measured_metrics",
    "newer",
    "output_columns",
    "parse_measurements",
    "parse_scenarios",
    "parse_variant",
    "predict_scenarios",
    "prediction_interval",
    "prediction_intervals",
    "profile_stack",
    "read_held_out",
    "recalibrate",
    "rederive_transfer",
    "served",
    "serving_costs_path",
    "shipped_held_out_path",
    "source_summary",
    "stack_of",
    "transfer_profile_paths",
    "write_held_out",
    "write_measurements",
    "write_profile",
]
