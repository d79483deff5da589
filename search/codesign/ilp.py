"""Mixed-precision refinement of frontier designs (``precision: {weight_bits: ilp}``).

The grid evaluates each candidate format's bits as uniform weight bits. The best
ranked frontier designs then get an ILP allocation (`search.quantize`, HAWQ-V3
style, weight-free proxy sensitivity) with budgets equal to the design's own
uniform-bit TPOT and memory footprint (tightened by the user's bounds), costed with
the space's runtime profile like the grid (``hardware.runtime``); groups the
ILP does not choose (router, norms, embedding) keep the design's uniform bits, so
the uniform allocation is always feasible and the ILP's total sensitivity is no
higher. The allocation's loss follows the space's precision model. Default, post-training
quantisation (`scaling_law.PTQ_FORM`): ``L(N, D) + sum_u (N_u / N) delta_PTQ(N, D, b_u)``,
the parameter-weighted mean of Kumar et al.'s PTQ degradation at each group's bits (an
assumption: their fit is for uniform bits). With ``precision_model: quantised-training``
(`scaling_law.QUANTISED_TRAINING_FORM`): parameter-weighted effective parameters,
``N_eff = sum_u N_u f(b_u) / f(16)``. Both are convex in the bits, so at equal mean
bits the law rates a mixed allocation slightly *worse* than a uniform one: the law
knows no per-layer sensitivity, the ILP's proxy does. The ILP runs once per
candidate, never per grid point.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from genz import ModelConfig, Parallelism, Precision, Scenario, parameter_count
from scaling_law import effective_parameters, predict_loss, ptq_loss_penalty
from search.bits import QuantizationResult, QuantizeBudgets, quantize

from .evaluate import Plan
from .frame import design_model, design_platform, row_fields
from .model import law_architecture, training_tokens

logger = logging.getLogger(__name__)

#: ILP settings per candidate: relative optimality gap and CBC time limit (seconds).
MIP_GAP = 0.01
TIME_LIMIT_S = 20.0
#: Slack on the design's own TPOT and footprint when used as budgets (float rounding).
BUDGET_SLACK = 1e-6
ILP_COLUMNS = (
    "ilp_status",
    "ilp_mean_weight_bits",
    "ilp_loss",
    "ilp_perplexity",
    "ilp_tpot_s",
    "ilp_ttft_s",
    "ilp_footprint_bytes",
)


def design_scenario(row: Mapping[str, Any], weight_bits: float) -> Scenario:
    """The design's serving scenario (uniform ``weight_bits``)."""
    return Scenario(
        batch=int(row["batch"]),
        input_tokens=int(row["input_tokens"]),
        output_tokens=int(row["output_tokens"]),
        precision=Precision(
            weight_bits=weight_bits,
            activation_bits=float(row["activation_bits"]),
            kv_bits=float(row["kv_bits"]),
        ),
        parallelism=Parallelism(
            tp=int(row["tp"]), pp=int(row["pp"]), ep=int(row["ep"]), dp=int(row["dp"])
        ),
        parallel_samples=int(row.get("parallel_samples", 1)),
        beam_width=int(row.get("beam_width", 1)),
        images=int(row.get("images", 0)),
        weight_offload=float(row.get("weight_offload", 0.0)),
        kv_offload=float(row.get("kv_offload", 0.0)),
    )


def allocate(plan: Plan, row: Mapping[str, Any]) -> tuple[ModelConfig, QuantizationResult]:
    """The ILP allocation of one design within its own TPOT and footprint."""
    space, constraints = plan.space, plan.constraints
    model = design_model(space, row, str(row.get("design", "design")))
    platform = design_platform(space, row)
    memory = [float(row["footprint_bytes"]) * (1 + BUDGET_SLACK)]
    tpot = [float(row["tpot_s"]) * (1 + BUDGET_SLACK)]
    if constraints.max_memory_bytes is not None:
        memory.append(constraints.max_memory_bytes)
    if constraints.max_tpot_s is not None:
        tpot.append(constraints.max_tpot_s)
    budgets = QuantizeBudgets(
        max_memory_bytes=min(memory),
        max_tpot_s=min(tpot),
        max_ttft_s=constraints.max_ttft_s,
    )
    scenario = design_scenario(row, float(row["weight_bits"]))
    result = quantize(
        model,
        platform,
        scenario,
        space.precision.ilp_formats or "16,8,4",
        budgets,
        kv_formats=f"{float(row['kv_bits']):g}",
        method="ilp",
        time_limit_s=TIME_LIMIT_S,
        mip_gap=MIP_GAP,
        runtime=space.hardware.runtime,
    )
    return model, result


def allocation_loss(
    plan: Plan, model: ModelConfig, row: Mapping[str, Any], result: QuantizationResult
) -> tuple[float, float]:
    """Loss of the allocation (the space's precision model, see the module docstring) and
    its parameter-weighted mean weight bits."""
    law = plan.law
    rows = result.rows()
    total = parameter_count(model).total
    rest = max(total - sum(float(r["params"]) for r in rows), 0.0)
    base_bits = float(row["weight_bits"])
    unit_params = np.array([*(r["params"] for r in rows), rest], float)
    unit_bits = np.array([*(r["bits"] for r in rows), base_bits], float)
    mean_bits = float((unit_params * unit_bits).sum()) / total
    fields = {name: np.asarray([value]) for name, value in row_fields(row).items()}
    architecture = law_architecture(plan.space.model, fields)
    tokens = training_tokens(plan.space.law, law, architecture)
    if plan.space.law.precision_model == "quantised-training":
        effective = effective_parameters(
            unit_params, unit_bits, law.gamma_w, law.reference_bits
        ).sum()
        count = architecture.counts().select(law.include_embeddings, law.moe_parameters)
        loss = predict_loss(law, architecture, tokens, params=count * (effective / total))
        return float(loss[0]), mean_bits
    penalties = ptq_loss_penalty(law, architecture, tokens, unit_bits)
    penalty = float((unit_params / total * penalties).sum())
    return float(predict_loss(law, architecture, tokens)[0]) + penalty, mean_bits


def allocation_precision(plan: Plan, row: Mapping[str, Any]) -> Precision | None:
    """The ILP `Precision` of one design (None when the ILP finds none)."""
    _, result = allocate(plan, row)
    return result.precision if result.success else None


def refine_with_ilp(plan: Plan, frontier: pd.DataFrame, candidates: int) -> pd.DataFrame:
    """``frontier`` with the `ILP_COLUMNS` filled for its ``candidates`` best-ranked rows."""
    frame = frontier.copy()
    for name in ILP_COLUMNS:
        frame[name] = "" if name == "ilp_status" else np.nan
    for index in frame.index[frame["rank"] <= candidates]:
        row = frame.loc[index].to_dict()
        model, result = allocate(plan, row)
        frame.loc[index, "ilp_status"] = result.result.status
        if not result.success or result.prediction is None:
            logger.info("ILP for %s: %s", row["design"], result.result.message)
            continue
        loss, mean_bits = allocation_loss(plan, model, row, result)
        prediction = result.prediction
        frame.loc[index, list(ILP_COLUMNS[1:])] = [
            mean_bits,
            loss,
            float(np.exp(loss)),
            prediction.tpot_s,
            prediction.ttft_s,
            prediction.footprint.total_bytes,
        ]
    return frame
