"""Joint hardware-model co-design: design spaces, vectorised evaluation, Pareto fronts,
feasible regions, recommendations and the optional Ray backend.

Public face of ``search.codesign``.
"""

from .evaluate import Plan
from .frame import row_fields
from .ilp import allocation_precision
from .model import (
    base_fields,
    design_loss_samples,
    hf_config,
    law_architecture,
    resolve_forms,
    resolve_law,
)
from .objectives import CONSTRAINT_FIELDS, OBJECTIVES, Constraints
from .pareto import pareto_mask
from .recommend import (
    design_files,
    folder_name,
    platform_to_dict,
    write_recommendations,
    zip_design,
)
from .serving_band import VERDICTS, add_serving_band, serving_scenarios
from .space import MAX_SPACE_BYTES, DesignSpace, load_space, space_from_dict
from .sweep import METHODS, CodesignResult, search_designs

__all__ = [
    "CONSTRAINT_FIELDS",
    "MAX_SPACE_BYTES",
    "METHODS",
    "OBJECTIVES",
    "VERDICTS",
    "CodesignResult",
    "Constraints",
    "DesignSpace",
    "Plan",
    "add_serving_band",
    "allocation_precision",
    "base_fields",
    "design_files",
    "design_loss_samples",
    "folder_name",
    "hf_config",
    "law_architecture",
    "load_space",
    "pareto_mask",
    "platform_to_dict",
    "resolve_forms",
    "resolve_law",
    "row_fields",
    "search_designs",
    "serving_scenarios",
    "space_from_dict",
    "write_recommendations",
    "zip_design",
]
