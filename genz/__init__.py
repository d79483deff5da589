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
    ARCHITECTURE_AXES,
    AXES,
    BITS_AXES,
    DEFAULT_BATCH,
    DEFAULT_BITS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    GRID_AXES,
    MESH_AXES,
    MODE_AXES,
    REPLICA_AXES,
    SCALE_AXES,
    WORKLOAD_AXES,
    Axis,
)
from .hf_config import (
    MAX_CONFIG_BYTES,
    list_models,
    load_model,
    model_from_hf_config,
    models_dir,
)
from .layer_mix import variant_refusal, with_layer_mix
from .model import LORA_TARGETS, ModelConfig, with_lora
from .mtp import mtp_draft, mtp_parameters
from .params import WEIGHT_GROUPS, ParameterCount, parameter_count
from .partial_offload import PartialOffload, predict_partial_offload
from .profile_domain import ProfileDomain, domain_from_dict, outside_domain
from .scaled_models import (
    model_from_spec,
    scale_model,
    with_gqa,
    with_mla,
    with_sliding_window,
)
from .scenario import Parallelism, Precision, Scenario
from .use_cases import UseCase, load_use_cases, use_case

if TYPE_CHECKING:
    from .advice import (
        capacity_suggestions,
        footprint_bytes,
        splits_whole_heads,
        tensor_parallel_degrees,
    )
    from .bits_file import (
        WeightBitsSummary,
        load_precision,
        precision_from_dict,
        precision_to_dict,
        summarise_weight_bits,
    )
    from .costing import PassCost
    from .grid import evaluate_grid
    from .memory import kv_cache_bytes_per_device, weight_bytes_per_device
    from .predictor import BREAKDOWN_AXES, CostBreakdown, cost_breakdown, predict
    from .resolved import stored_weight_bits
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
    from .scenario_checks import check_parallelism
    from .serving import (
        DisaggregatedEstimate,
        SpeculativeEstimate,
        disaggregated_serving,
        speculative_decoding,
    )
    from .serving_steps import StepCost
    from .step_probes import step_activation_bytes, step_cost
    from .vision import image_tokens
    from .vision_steps import VisionSteps, vision_step_costs

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "ARCHITECTURE_AXES",
    "AXES",
    "BITS_AXES",
    "BREAKDOWN_AXES",
    "DEFAULT_BATCH",
    "DEFAULT_BITS",
    "DEFAULT_INPUT_TOKENS",
    "DEFAULT_OUTPUT_TOKENS",
    "GRID_AXES",
    "LORA_TARGETS",
    "MAX_CONFIG_BYTES",
    "MESH_AXES",
    "MIN_METRIC_ROWS",
    "MODE_AXES",
    "REPLICA_AXES",
    "SCALE_AXES",
    "WEIGHT_GROUPS",
    "WORKLOAD_AXES",
    "Axis",
    "CostBreakdown",
    "DisaggregatedEstimate",
    "GridResult",
    "KVFormat",
    "ModelConfig",
    "OperatorCost",
    "Parallelism",
    "ParameterCount",
    "PartialOffload",
    "PassCost",
    "PhaseCost",
    "PhaseProfile",
    "Precision",
    "Prediction",
    "ProfileDomain",
    "RuntimeProfile",
    "Scenario",
    "SpeculativeEstimate",
    "StepCost",
    "UseCase",
    "VisionSteps",
    "WeightBitsSummary",
    "WeightFormat",
    "capacity_suggestions",
    "check_parallelism",
    "cost_breakdown",
    "disaggregated_serving",
    "domain_from_dict",
    "evaluate_grid",
    "footprint_bytes",
    "image_tokens",
    "kv_cache_bytes_per_device",
    "list_models",
    "list_runtimes",
    "load_model",
    "load_precision",
    "load_runtime",
    "load_use_cases",
    "model_from_hf_config",
    "model_from_spec",
    "models_dir",
    "mtp_draft",
    "mtp_parameters",
    "outside_domain",
    "parameter_count",
    "precision_from_dict",
    "precision_to_dict",
    "predict",
    "predict_partial_offload",
    "runtime_from_dict",
    "scale_model",
    "speculative_decoding",
    "splits_whole_heads",
    "step_activation_bytes",
    "step_cost",
    "stored_weight_bits",
    "summarise_weight_bits",
    "tensor_parallel_degrees",
    "use_case",
    "variant_refusal",
    "vision_step_costs",
    "weight_bytes_per_device",
    "with_gqa",
    "with_layer_mix",
    "with_lora",
    "with_mla",
    "with_sliding_window",
]
