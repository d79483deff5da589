"""Architecture-to-loss scaling laws: fit, predict, uncertainty, low-precision penalty.

Hardware-independent; imports only ``roofline.errors`` and ``roofline.userfiles`` (errors and
safe file reading) from the rest of the project.
Typical use (the same functions the ``codesign fit`` / ``codesign loss`` commands call)::

    from scaling_law import Architecture, fit_law, load_scaling_csv, predict_loss_interval

    result = fit_law(load_scaling_csv("chinchilla"), "chinchilla", drop_highest_loss=5)
    print(result.params, result.intervals)
    prediction = predict_loss_interval(result.law, Architecture(layers=24, hidden=2048), 1e11)

Shape-aware laws are fitted on the Gemstones width x depth runs
(``load_scaling_csv("gemstones_cooldown_end")``; forms ``gemstones-wdt``,
``gemstones-wdpt``, ``chinchilla-shape``) and selected by leave-one-architecture-out
cross-validation (``cross_validation="architecture"``, ``bootstrap_unit="architecture"``).
Every fitted law records its data domain; predictions outside it are flagged
(`extrapolation`, ``LossPrediction.extrapolated``). Serving-time weight bits add the
post-training quantisation term (`ptq_loss_penalty`); `training_flops` and
`training_seconds` estimate training cost from a peak FLOP/s and an MFU; `MfuModel`
(`load_mfu_model`, fitted on the Gemstones step times) makes the MFU follow width and depth.
The vocabulary term (`fit_vocab_term` on Tao et al.'s sweep, `load_vocab_runs`;
`attach_vocab_term` adds it to a shape law as form ``chinchilla-shape-vocab``) prices the
vocabulary inside the sweep's range.
"""

from .architecture import Architecture, ParameterCounts, count_parameters
from .compute_optimal import ComputeOptimal, compute_optimal
from .data import (
    COLUMNS,
    MAX_FILE_BYTES,
    ScalingData,
    dataset_path,
    list_datasets,
    load_scaling_csv,
    scaling_dir,
)
from .diagnostics import CrossValidationReport, ResidualReport
from .domain import ARCHITECTURE_DIMENSIONS, unpriced_dimensions
from .fit import FitResult, fit_law
from .forms import (
    CHINCHILLA,
    CHINCHILLA_SHAPE,
    FEATURE_NAMES,
    LawForm,
    get_form,
    list_forms,
    register_form,
)
from .law import (
    LossPrediction,
    ScalingLaw,
    architecture_dimensions,
    extrapolation,
    law_inputs,
    precision_loss_penalty,
    predict_loss,
    predict_loss_interval,
)
from .law_io import check_output_path, law_from_dict, law_to_dict, load_law, save_law
from .mfu import MfuModel, fit_mfu, load_mfu_model, mfu_leave_one_out, save_mfu_model
from .objective import SUPPORTED_METHODS
from .pooled import fit_pooled_law, per_dataset_form, pool_tables, reference_law
from .power_sum import GEMSTONES_WDPT, GEMSTONES_WDT, power_sum_form
from .precision import (
    DEFAULT_REFERENCE_BITS,
    KUMAR_GAMMA_W,
    effective_parameter_fraction,
    effective_parameters,
)
from .ptq import (
    DEFAULT_PTQ,
    KUMAR_PTQ,
    PTQ_FORM,
    QUANTISED_TRAINING_FORM,
    PtqConstants,
    ptq_degradation,
    ptq_loss_penalty,
)
from .ptq_data import PtqRows, load_ptq_constants, load_ptq_ensemble, load_ptq_rows
from .ptq_fit import PtqErrors, PtqFit, fit_ptq, leave_one_model_out, predict_delta, ptq_errors
from .token_prior import BESIROGLU_BETA, CHINCHILLA_SHAPE_BETA_PRIOR
from .training_time import (
    architecture_training_flops,
    implied_mfu,
    training_flops,
    training_seconds,
)
from .vocab_fit import (
    VocabRuns,
    VocabTerm,
    bootstrap_terms,
    fit_vocab_term,
    held_out_errors,
    load_vocab_runs,
)
from .vocab_form import CHINCHILLA_SHAPE_VOCAB, optimal_vocab, vocab_term
from .vocab_law import attach_vocab_term

__all__ = [
    "ARCHITECTURE_DIMENSIONS",
    "BESIROGLU_BETA",
    "CHINCHILLA",
    "CHINCHILLA_SHAPE",
    "CHINCHILLA_SHAPE_BETA_PRIOR",
    "CHINCHILLA_SHAPE_VOCAB",
    "COLUMNS",
    "DEFAULT_PTQ",
    "DEFAULT_REFERENCE_BITS",
    "FEATURE_NAMES",
    "GEMSTONES_WDPT",
    "GEMSTONES_WDT",
    "KUMAR_GAMMA_W",
    "KUMAR_PTQ",
    "MAX_FILE_BYTES",
    "PTQ_FORM",
    "QUANTISED_TRAINING_FORM",
    "SUPPORTED_METHODS",
    "Architecture",
    "ComputeOptimal",
    "CrossValidationReport",
    "FitResult",
    "LawForm",
    "LossPrediction",
    "MfuModel",
    "ParameterCounts",
    "PtqConstants",
    "PtqErrors",
    "PtqFit",
    "PtqRows",
    "ResidualReport",
    "ScalingData",
    "ScalingLaw",
    "VocabRuns",
    "VocabTerm",
    "architecture_dimensions",
    "architecture_training_flops",
    "attach_vocab_term",
    "bootstrap_terms",
    "check_output_path",
    "compute_optimal",
    "count_parameters",
    "dataset_path",
    "effective_parameter_fraction",
    "effective_parameters",
    "extrapolation",
    "fit_law",
    "fit_mfu",
    "fit_pooled_law",
    "fit_ptq",
    "fit_vocab_term",
    "get_form",
    "held_out_errors",
    "implied_mfu",
    "law_from_dict",
    "law_inputs",
    "law_to_dict",
    "leave_one_model_out",
    "list_datasets",
    "list_forms",
    "load_law",
    "load_mfu_model",
    "load_ptq_constants",
    "load_ptq_ensemble",
    "load_ptq_rows",
    "load_scaling_csv",
    "load_vocab_runs",
    "mfu_leave_one_out",
    "optimal_vocab",
    "per_dataset_form",
    "pool_tables",
    "power_sum_form",
    "precision_loss_penalty",
    "predict_delta",
    "predict_loss",
    "predict_loss_interval",
    "ptq_degradation",
    "ptq_errors",
    "ptq_loss_penalty",
    "reference_law",
    "register_form",
    "save_law",
    "save_mfu_model",
    "scaling_dir",
    "training_flops",
    "training_seconds",
    "unpriced_dimensions",
    "vocab_term",
]
