"""LLM workload model: architectures, prefill/decode operator graphs, predictions.

The public face of genz: ``search/``, ``app/``, benchmarks and notebooks import only the
names in ``__all__``. Typical use::

    from genz import Scenario, load_model, predict
    from roofline import load_platform

    result = predict(load_model("llama-3.1-8b"), load_platform("h100-sxm"), Scenario(batch=8))
    print(result.ttft_s, result.tpot_s, result.decode.bound)

The numpy-backed modules (graphs, costing, prediction, serving) load on first use of one
of their names (``roofline.lazy_exports``): the scenario axes, model configs and presets
import without numpy, so a CLI can build its parser quickly.
"""

from typing import TYPE_CHECKING

from roofline import lazy_exports

from .axes import (
    AXES,
    BITS_AXES,
    DEFAULT_BATCH,
    DEFAULT_BITS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    GRID_AXES,
    MESH_AXES,
    REPLICA_AXES,
    SCALE_AXES,
    WORKLOAD_AXES,
    Axis,
)
from .economics import (
    CostModel,
    DeviceHourCost,
    Economics,
    device_hour_cost,
    economics,
    power_basis,
    serving_energy_j,
)
from .measurements import RUNTIMES as MEASUREMENT_RUNTIMES
from .measurements import Measurement, load_measurements, parse_measurements, write_measurements
from .model import (
    MAX_CONFIG_BYTES,
    ModelConfig,
    list_models,
    load_model,
    model_from_hf_config,
    models_dir,
)
from .params import WEIGHT_GROUPS, ParameterCount, parameter_count
from .scaled_models import model_from_spec, scale_model, with_gqa, with_mla
from .scenario import Parallelism, Precision, Scenario
from .use_cases import UseCase, load_use_cases, use_case

if TYPE_CHECKING:
    from .advice import (
        capacity_suggestions,
        footprint_bytes,
        splits_whole_heads,
        tensor_parallel_degrees,
    )
    from .batch import (
        SCENARIO_OUTPUTS,
        ScenarioRow,
        load_scenarios,
        output_columns,
        parse_scenarios,
        predict_scenarios,
    )
    from .bits_file import (
        WeightBitsSummary,
        load_precision,
        precision_from_dict,
        precision_to_dict,
        summarise_weight_bits,
    )
    from .calibrate import (
        Calibration,
        calibrate_runtime,
        calibration_rows,
        load_formats,
        load_kv_formats,
        recalibrate,
    )
    from .calibration_data import measured_metrics
    from .costing import PassCost
    from .cross_validation import fit_runtime
    from .memory import kv_cache_bytes_per_device, weight_bytes_per_device
    from .physics_check import (
        PhysicsCheck,
        RowCheck,
        batch_latency_bound,
        check_measurements,
        fewest_experts_model,
        ideal_platform,
    )
    from .predictor import (
        BREAKDOWN_AXES,
        CostBreakdown,
        check_parallelism,
        cost_breakdown,
        evaluate_grid,
        predict,
    )
    from .profile_io import write_profile
    from .result import GridResult, OperatorCost, PhaseCost, Prediction
    from .runtime import (
        MIN_METRIC_ROWS,
        KVFormat,
        PhaseProfile,
        RuntimeProfile,
        WeightFormat,
        list_runtimes,
        load_runtime,
        runtime_from_dict,
    )
    from .runtime_cost import stored_weight_bits
    from .serving import (
        DisaggregatedEstimate,
        SpeculativeEstimate,
        disaggregated_serving,
        speculative_decoding,
    )
    from .serving_steps import StepCost
    from .step_probes import step_activation_bytes, step_cost
    from .uncertainty import (
        INTERVAL_KINDS,
        METRIC_LABELS,
        Interval,
        prediction_interval,
        prediction_intervals,
    )

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "AXES",
    "BITS_AXES",
    "BREAKDOWN_AXES",
    "DEFAULT_BATCH",
    "DEFAULT_BITS",
    "DEFAULT_INPUT_TOKENS",
    "DEFAULT_OUTPUT_TOKENS",
    "GRID_AXES",
    "INTERVAL_KINDS",
    "MAX_CONFIG_BYTES",
    "MEASUREMENT_RUNTIMES",
    "MESH_AXES",
    "METRIC_LABELS",
    "MIN_METRIC_ROWS",
    "REPLICA_AXES",
    "SCALE_AXES",
    "SCENARIO_OUTPUTS",
    "WEIGHT_GROUPS",
    "WORKLOAD_AXES",
    "Axis",
    "Calibration",
    "CostBreakdown",
    "CostModel",
    "DeviceHourCost",
    "DisaggregatedEstimate",
    "Economics",
    "GridResult",
    "Interval",
    "KVFormat",
    "Measurement",
    "ModelConfig",
    "OperatorCost",
    "Parallelism",
    "ParameterCount",
    "PassCost",
    "PhaseCost",
    "PhaseProfile",
    "PhysicsCheck",
    "Precision",
    "Prediction",
    "RowCheck",
    "RuntimeProfile",
    "Scenario",
    "ScenarioRow",
    "SpeculativeEstimate",
    "StepCost",
    "UseCase",
    "WeightBitsSummary",
    "WeightFormat",
    "batch_latency_bound",
    "calibrate_runtime",
    "calibration_rows",
    "capacity_suggestions",
    "check_measurements",
    "check_parallelism",
    "cost_breakdown",
    "device_hour_cost",
    "disaggregated_serving",
    "economics",
    "evaluate_grid",
    "fewest_experts_model",
    "fit_runtime",
    "footprint_bytes",
    "ideal_platform",
    "kv_cache_bytes_per_device",
    "list_models",
    "list_runtimes",
    "load_formats",
    "load_kv_formats",
    "load_measurements",
    "load_model",
    "load_precision",
    "load_runtime",
    "load_scenarios",
    "load_use_cases",
    "measured_metrics",
    "model_from_hf_config",
    "model_from_spec",
    "models_dir",
    "output_columns",
    "parameter_count",
    "parse_measurements",
    "parse_scenarios",
    "power_basis",
    "precision_from_dict",
    "precision_to_dict",
    "predict",
    "predict_scenarios",
    "prediction_interval",
    "prediction_intervals",
    "recalibrate",
    "runtime_from_dict",
    "scale_model",
    "serving_energy_j",
    "speculative_decoding",
    "splits_whole_heads",
    "step_activation_bytes",
    "step_cost",
    "stored_weight_bits",
    "summarise_weight_bits",
    "tensor_parallel_degrees",
    "use_case",
    "weight_bytes_per_device",
    "with_gqa",
    "with_mla",
    "write_measurements",
    "write_profile",
]
