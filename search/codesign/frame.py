"""Tables of evaluated designs: columns in SI units, design labels, frontier ranking,
and the best design per budget (pandas at the edge of the numerical core).

Every row says how its loss was produced (``precision_model``: `scaling_law.PTQ_FORM` or
`scaling_law.QUANTISED_TRAINING_FORM`), whether it lies outside the law's data
(``extrapolated``, ``outside_domain`` naming the quantities out of range) and whether
it moves away from the base model along a dimension the law cannot price (``unpriced``,
``unpriced_axes`` e.g. ``gqa_ratio x1.71``, and ``unpriced_<dimension>`` = the design's
value over the base's for every dimension the law's data did not vary), whether
it sits on the edge of the space (``edge``, ``edge_axes``: a model or hardware-scale
axis with several values at its smallest or largest, e.g. ``layers=max``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from genz import AXES, ModelConfig, with_layer_mix
from roofline import BOUND_ORDER, Platform, derive_platform
from scaling_law import ARCHITECTURE_DIMENSIONS, ScalingLaw

from .evaluate import (
    AXIS,
    GENZ_METRICS,
    MODEL_COLUMNS,
    Points,
    axis_values,
)
from .model import (
    DOMAIN_QUANTITIES,
    FIELDS,
    LAYER_MIX_DIMENSION,
    PRECISION_MODEL_LABELS,
    architecture_fields,
    model_config,
    parameter_counts,
)
from .objectives import OBJECTIVES, Objective
from .space import (
    HARDWARE_AXES,
    MESH_AXES,
    MODEL_AXES,
    PRECISION_AXES,
    SPACE_WORKLOAD_AXES,
    VARIANT_AXES,
    DesignSpace,
)

#: Bound names of the metrics' bound codes (indices into `roofline.BOUND_ORDER`).
BOUND_CATEGORIES = [bound.value for bound in BOUND_ORDER]
INTEGER_FIELDS = tuple(name for name in FIELDS if name != "ffn_ratio")
METRIC_COLUMNS = (
    "loss",
    "perplexity",
    *GENZ_METRICS,
    "capacity_bytes",
    "fits",
    "training_time_s",
    "training_cost_usd",
    "device_cost_usd",
    "area_mm2",
    "tdp_w",
    "usd_per_mtok",
    "perf_per_cost",
)
#: Axes whose smallest or largest value flags a design as on the edge of the space.
EDGE_AXES = (*MODEL_AXES, *HARDWARE_AXES)
#: Short tags of the hardware scale factors in names.
SCALE_TAGS = {
    "compute_scale": "compute",
    "bandwidth_scale": "bw",
    "capacity_scale": "capacity",
    "link_bandwidth_scale": "link",
}
#: Axes shown in a design's label when the space gives them more than one value.
LABEL_AXES = {
    "compute_scale": "c",
    "bandwidth_scale": "b",
    "capacity_scale": "m",
    "link_bandwidth_scale": "l",
    "vocab": "V",
    "kv_bits": "kv",
    "activation_bits": "a",
    "tp": "tp",
    "pp": "pp",
    "ep": "ep",
    "dp": "dp",
    "batch": "B",
    "input_tokens": "in",
    "output_tokens": "out",
    "sliding_window": "sw",
    "attention_layers": "attn",
}


def design_frame(
    space: DesignSpace, law: ScalingLaw, points: Points, metrics: Mapping[str, NDArray]
) -> pd.DataFrame:
    """One row per point: hardware, architecture, precision, mesh, workload, metrics."""
    values = axis_values(space)
    names = [platform.name for platform in space.hardware.platforms]
    columns: dict[str, object] = {
        "platform": pd.Categorical.from_codes(points[:, AXIS["preset"]], categories=names)
    }
    for name in HARDWARE_AXES:
        columns[name] = values[AXIS[name]][points[:, AXIS[name]]]
    fields, _ = architecture_fields(space.model, points[:, MODEL_COLUMNS])
    for name in INTEGER_FIELDS:
        columns[name] = fields[name].astype(np.int64)
    columns["ffn_ratio"] = fields["ffn_ratio"]
    total, active = parameter_counts(law, space.model, fields)
    columns["params"] = np.asarray(total, float)
    columns["active_params"] = np.asarray(active, float)
    for name in PRECISION_AXES:
        columns[name] = values[AXIS[name]][points[:, AXIS[name]]]
    for name in (*MESH_AXES, *SPACE_WORKLOAD_AXES):
        column = values[AXIS[name]][points[:, AXIS[name]]]
        columns[name] = column.astype(np.int64) if AXES[name].integer else column
    for name in VARIANT_AXES:  # given in the space's model section, else the base's own
        if name in space.variants:
            columns[name] = values[AXIS[name]][points[:, AXIS[name]]].astype(np.int64)
    columns["devices"] = np.asarray(metrics.get("devices", np.zeros(len(points))), float).astype(
        np.int64
    )
    for name in METRIC_COLUMNS:
        columns[name] = metrics[name] if name in metrics else np.zeros(len(points))
    for name in ("prefill_bound", "decode_bound"):
        codes = metrics[name] if name in metrics else np.zeros(len(points), np.int8)
        columns[name] = pd.Categorical.from_codes(codes, categories=BOUND_CATEGORIES)
    columns["precision_model"] = PRECISION_MODEL_LABELS[space.law.precision_model]
    outside = {
        name: np.asarray(metrics[f"outside_{name}"], bool)
        for name in DOMAIN_QUANTITIES
        if f"outside_{name}" in metrics
    }
    columns["extrapolated"] = np.asarray(
        metrics.get("extrapolated", np.zeros(len(points))), float
    ).astype(bool)
    columns["outside_domain"] = _joined(outside, len(points))
    unpriced = np.asarray(metrics.get("unpriced", np.zeros(len(points))), bool)
    columns["unpriced"] = unpriced
    distances = {
        name: np.asarray(metrics[f"unpriced_{name}"], float)
        for name in (*ARCHITECTURE_DIMENSIONS, LAYER_MIX_DIMENSION)
        if f"unpriced_{name}" in metrics
    }
    columns.update({f"unpriced_{name}": ratio for name, ratio in distances.items()})
    columns["unpriced_axes"] = _distances(distances, unpriced)
    edges = edge_masks(space, points)
    columns["edge"] = np.logical_or.reduce([*edges.values(), np.zeros(len(points), bool)])
    columns["edge_axes"] = _joined(edges, len(points))
    return pd.DataFrame(columns)


def edge_masks(space: DesignSpace, points: Points) -> dict[str, NDArray[np.bool_]]:
    """``{'layers=max': mask, ...}``: points at the smallest or largest value of each
    `EDGE_AXES` axis that has more than one value."""
    masks: dict[str, NDArray[np.bool_]] = {}
    for name in EDGE_AXES:
        values = np.asarray(space.axes[name], float)
        if len(values) < 2:
            continue
        chosen = values[points[:, AXIS[name]]]
        tag = "head_dim" if name == "heads" and space.model.heads_from_head_dim else name
        masks[f"{tag}=min"] = chosen == values.min()
        masks[f"{tag}=max"] = chosen == values.max()
    return masks


def _joined(masks: Mapping[str, NDArray[np.bool_]], size: int) -> NDArray[np.object_]:
    """Per row, the names whose mask is True joined by commas ('' when none)."""
    names = np.array(list(masks), dtype=object)
    if not len(names):
        return np.full(size, "", dtype=object)
    table = np.column_stack([masks[name] for name in names])
    patterns, inverse = np.unique(table, axis=0, return_inverse=True)
    text = np.array([",".join(names[row]) for row in patterns], dtype=object)
    return text[inverse.ravel()]


def _distances(distances: Mapping[str, NDArray], moved: NDArray[np.bool_]) -> NDArray[np.object_]:
    """Per row, ``'gqa_ratio x1.71,ffn_ratio x0.49'``: the unpriced dimensions the design
    moves along, with its value over the base's ('' when it holds them all)."""
    size = len(moved)
    if not distances or not size:
        return np.full(size, "", dtype=object)
    names = list(distances)
    table = np.round(np.column_stack([distances[name] for name in names]), 3)
    table = np.column_stack([table, moved])
    patterns, inverse = np.unique(table, axis=0, return_inverse=True)
    text = np.array(
        [
            ",".join(
                f"{name} x{ratio:g}"
                for name, ratio in zip(names, row[:-1], strict=True)
                if ratio != 1
            )
            if row[-1]
            else ""
            for row in patterns
        ],
        dtype=object,
    )
    return text[inverse.ravel()]


def design_labels(space: DesignSpace, frame: pd.DataFrame) -> list[str]:
    """Short unique-ish names: the shape and weight bits, plus every axis that varies."""
    varying = [name for name, values in space.axes.items() if len(values) > 1]
    labels = []
    for row in frame.itertuples(index=False):
        parts = [
            f"L{row.layers}-H{row.hidden}-A{row.heads}-KV{row.kv_heads}-F{row.intermediate_size}"
        ]
        if row.experts > 1:
            parts.append(f"E{row.experts}k{row.top_k}")
        parts.append(f"w{row.weight_bits:g}")
        if "preset" in varying:
            parts.append(str(row.platform))
        for name, tag in LABEL_AXES.items():
            if name in varying:
                parts.append(f"{tag}{getattr(row, name):g}")
        labels.append("-".join(parts))
    return labels


def rank_designs(frame: pd.DataFrame, objectives: Sequence[Objective]) -> NDArray[np.int64]:
    """Rank 1 = closest to the ideal point after scaling every objective to [0, 1]
    over ``frame`` (0 = best); ties go to the better first objective."""
    if frame.empty:
        return np.zeros(0, np.int64)
    distance = np.zeros(len(frame))
    for objective in objectives:
        column = frame[objective.column].to_numpy(float)
        if objective.sense == "max":
            column = -column
        spread = column.max() - column.min()
        scaled = (column - column.min()) / spread if spread > 0 else np.zeros(len(column))
        distance += scaled**2
    first = frame[objectives[0].column].to_numpy(float)
    first = -first if objectives[0].sense == "max" else first
    order = np.lexsort((first, distance))
    ranks = np.empty(len(frame), np.int64)
    ranks[order] = np.arange(1, len(frame) + 1)
    return ranks


def best_per_budget(
    designs: pd.DataFrame,
    budget: str | Objective,
    objective: str | Objective,
    limits: Sequence[float] | None = None,
) -> pd.DataFrame:
    """For each limit on ``budget``, the design with the best ``objective`` within it.

    ``budget`` and ``objective`` are objective names (``'tpot'``, ``'loss'``...);
    ``limits`` are in SI units of the budget's column (default: every distinct
    value it takes). A limit bounds from above for minimised budgets and from below
    for maximised ones. Rows where no design is within the limit are left out.
    """
    budget = OBJECTIVES[budget] if isinstance(budget, str) else budget
    objective = OBJECTIVES[objective] if isinstance(objective, str) else objective
    if designs.empty:
        return designs.assign(budget_limit=[])
    sign = -1.0 if budget.sense == "max" else 1.0
    spend = sign * designs[budget.column].to_numpy(float)
    score = designs[objective.column].to_numpy(float)
    score = -score if objective.sense == "max" else score
    order = np.lexsort((score, spend))
    best_index = order[_running_argmin(score[order])]
    signed = np.unique(spend) if limits is None else sign * np.asarray(limits, float)
    position = np.searchsorted(spend[order], signed, side="right") - 1
    ok = position >= 0
    chosen = designs.iloc[best_index[position[ok]]].copy()
    chosen.insert(0, "budget_limit", sign * signed[ok])
    return chosen.reset_index(drop=True)


def _running_argmin(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """Index of the minimum of ``values[: i + 1]`` for every i (first one on ties)."""
    running = np.minimum.accumulate(values)
    is_new = np.concatenate(([True], values[1:] < running[:-1]))
    starts = np.flatnonzero(is_new)
    return starts[np.searchsorted(starts, np.arange(len(values)), side="right") - 1]


def row_fields(row: Mapping[str, Any]) -> dict[str, float]:
    """The architecture fields of one design row (as `architecture_fields` names them)."""
    return {name: float(row[name]) for name in (*INTEGER_FIELDS, "ffn_ratio")}


def design_model(space: DesignSpace, row: Mapping[str, Any], name: str = "design") -> ModelConfig:
    """The design's model: its architecture fields, with the row's window size and
    attention layer count where the space varies them (`genz.with_layer_mix`)."""
    model = model_config(space.model, row_fields(row), name)
    variants = {key: int(row[key]) for key in VARIANT_AXES if key in space.variants}
    if not variants:
        return model
    return with_layer_mix(
        model,
        sliding_window=variants.get("sliding_window"),
        attention_layers=variants.get("attention_layers"),
    )


def design_platform(space: DesignSpace, row: Mapping[str, Any]) -> Platform:
    """The design's platform: its preset with the row's four scale factors applied."""
    base = next(p for p in space.hardware.platforms if p.name == str(row["platform"]))
    scales = {name: float(row[name]) for name in HARDWARE_AXES}
    suffix = "-".join(
        f"{SCALE_TAGS[name]}{value:g}" for name, value in scales.items() if value != 1
    )
    return derive_platform(
        base,
        name=f"{base.name}-{suffix}" if suffix else base.name,
        compute_scale=scales["compute_scale"],
        memory_bandwidth_scale=scales["bandwidth_scale"],
        memory_capacity_scale=scales["capacity_scale"],
        link_bandwidth_scale=scales["link_bandwidth_scale"],
    )
