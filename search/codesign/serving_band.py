"""The serving side of the joint band: each frontier design's TPOT over the base model's
under every serving scenario, and a verdict that combines it with the loss band.

A loss does not depend on how a design is served, but whether a design beats the base
model at its speed does: the per-kernel overhead (a prior, 5 us on the presets, never
calibrated per board) and the serving stack (the shipped runtime profiles, each fitted on
other hardware) move every TPOT, and not in proportion (small, deep designs pay more
overhead). The serving scenarios, equally likely (the same set
`benchmarks/codesign_orin.py` samples):

- the space's own serving set-up with the kernel overhead of every platform set to each
  of `OVERHEADS_S` (0, 2, 5, 10 us);
- every shipped runtime profile (`genz.list_runtimes`) at the presets' overhead.

A profile carries its own fitted overheads and ignores the per-kernel prior, so in a space
served under a profile the four overhead scenarios coincide.

Columns added to the frontier (ratios: design over the base model at the same weight
bits, hardware, mesh and workload, paired scenario by scenario):

``tpot_vs_base``
    under the space's own serving set-up (what the search ranked by).
``tpot_vs_base_low``, ``tpot_vs_base_high``
    smallest and largest over the serving scenarios (an envelope of a handful of
    scenarios, not a percentile).
``verdict``
    against the joint band (loss: law bootstrap x PTQ constant sets, `intervals`; TPOT:
    the serving scenarios; independent factors, so the joint band's extent on each axis
    is that axis' band): ``better`` when the whole perplexity band is below 1 and the
    design is no slower in any scenario; ``worse`` when the whole perplexity band is above
    1 and it is no faster in any; ``trade-off`` when the perplexity band excludes 1 and
    the design is slower (if lower perplexity) or faster (if higher) in every scenario;
    ``lower ppl, TPOT unsure`` / ``higher ppl, TPOT unsure`` when the perplexity band
    excludes 1 but the TPOT band spans 1 (which side of the base it serves on depends on
    the serving scenario); ``indistinguishable`` when the perplexity band includes 1 (the
    law cannot tell the design from the base, whatever its speed).

TPOTs are recomputed only for the frontier: per scenario, one genz grid call per distinct
(platform variant, architecture), every design of it at once, and one for the base model per
platform variant.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from genz import RuntimeProfile, evaluate_grid, list_runtimes, load_runtime
from roofline import Platform, derive_platform

from .evaluate import UNLIMITED_CAPACITY
from .frame import design_platform, row_fields
from .model import base_fields, model_config
from .space import HARDWARE_AXES, MESH_AXES, PRECISION_AXES, WORKLOAD_AXES, DesignSpace

#: Kernel-overhead priors of the serving scenarios, seconds (the presets' is 5 us).
OVERHEADS_S = (0.0, 2e-6, 5e-6, 10e-6)
SERVING_COLUMNS = ("tpot_vs_base", "tpot_vs_base_low", "tpot_vs_base_high", "verdict")
VERDICTS = (
    "better",
    "worse",
    "trade-off",
    "lower ppl, TPOT unsure",
    "higher ppl, TPOT unsure",
    "indistinguishable",
)
#: Relative TPOT difference treated as equal (the base against itself, float noise).
TPOT_RTOL = 1e-9
SCENARIO_COLUMNS = (*PRECISION_AXES, *MESH_AXES, *WORKLOAD_AXES)
HARDWARE_COLUMNS = ["platform", *HARDWARE_AXES]


@dataclasses.dataclass(frozen=True)
class ServingScenario:
    """One serving set-up: a label, the kernel overhead set on every platform (None: the
    preset's own) and the runtime profile (None: the space's)."""

    label: str
    kernel_overhead_s: float | None
    runtime: RuntimeProfile | None


def serving_scenarios(space: DesignSpace) -> tuple[ServingScenario, ...]:
    """The space's serving set-up at each of `OVERHEADS_S`, then every shipped profile
    (``ideal`` left out when the space has no profile: it is the physics at the presets'
    overhead again)."""
    own = space.hardware.runtime
    scenarios = [ServingScenario(f"{s * 1e6:g} us overhead", s, own) for s in OVERHEADS_S]
    scenarios += [
        ServingScenario(name, None, _runtime(name))
        for name in list_runtimes()
        if not (own is None and name == "ideal")
    ]
    return tuple(scenarios)


@functools.cache
def _runtime(name: str) -> RuntimeProfile:
    """A shipped profile, parsed once per process."""
    return load_runtime(name)


def add_serving_band(space: DesignSpace, frontier: pd.DataFrame) -> pd.DataFrame:
    """``frontier`` with the `SERVING_COLUMNS` (needs the loss band's
    ``ratio_vs_base_low``/``_high`` columns of `search.codesign.intervals`)."""
    table = frontier.copy()
    if table.empty:
        for name in SERVING_COLUMNS:
            table[name] = pd.Series(dtype=object if name == "verdict" else float)
        return table
    ratios = tpot_ratios(space, table)
    table["tpot_vs_base"] = ratios[:, 0]
    table["tpot_vs_base_low"] = ratios[:, 1:].min(axis=1)
    table["tpot_vs_base_high"] = ratios[:, 1:].max(axis=1)
    table["verdict"] = verdicts(
        table["ratio_vs_base_low"].to_numpy(float),
        table["ratio_vs_base_high"].to_numpy(float),
        table["tpot_vs_base_low"].to_numpy(float),
        table["tpot_vs_base_high"].to_numpy(float),
    )
    return table


def tpot_ratios(space: DesignSpace, table: pd.DataFrame) -> np.ndarray:
    """Design TPOT over the base model's, shape ``(rows, 1 + scenarios)``: column 0 under
    the space's own set-up (the presets' overhead), then one per `serving_scenarios`.

    The overhead scenarios come from two genz calls per design (0 and the largest of
    `OVERHEADS_S`): with a fixed serving set-up a step's time is affine in the per-kernel
    overhead (every kernel adds it once; `tests/test_codesign_serving_band.py` checks it
    against direct evaluation)."""
    table = table.reset_index(drop=True)
    scenarios = serving_scenarios(space)
    own = space.hardware.runtime
    ends = (
        ServingScenario("low", OVERHEADS_S[0], own),
        ServingScenario("high", OVERHEADS_S[-1], own),
    )
    profiles = [s for s in scenarios if s.kernel_overhead_s is None]
    design = np.empty((len(table), 2 + len(profiles)))
    base = np.empty_like(design)
    overhead = np.empty(len(table))
    base_row = {name: float(values[0]) for name, values in base_fields(space.model).items()}
    base_model = model_config(space.model, base_row, "base")
    fields = list(row_fields(table.iloc[0].to_dict()))
    for _, rows in table.groupby(HARDWARE_COLUMNS, observed=True, sort=False):
        platform = design_platform(space, rows.iloc[0].to_dict())
        overhead[rows.index] = platform.kernel_overhead_s
        variants = [_platform(platform, s) for s in (*ends, *profiles)]
        runtimes = [s.runtime for s in (*ends, *profiles)]
        axes = {name: rows[name].to_numpy(float) for name in SCENARIO_COLUMNS}
        for column, (variant, runtime) in enumerate(zip(variants, runtimes, strict=True)):
            base[rows.index, column] = _tpot(base_model, variant, runtime, axes)
        for _, same in rows.groupby(fields, sort=False):
            model = model_config(space.model, row_fields(same.iloc[0].to_dict()))
            same_axes = {name: same[name].to_numpy(float) for name in SCENARIO_COLUMNS}
            for column, (variant, runtime) in enumerate(zip(variants, runtimes, strict=True)):
                design[same.index, column] = _tpot(model, variant, runtime, same_axes)
    span = OVERHEADS_S[-1] - OVERHEADS_S[0]

    def at(times: np.ndarray, seconds: np.ndarray | float) -> np.ndarray:
        return (
            times[:, 0]
            + (times[:, 1] - times[:, 0]) * (np.asarray(seconds) - OVERHEADS_S[0]) / span
        )

    columns = [at(design, overhead) / at(base, overhead)]
    columns += [at(design, s) / at(base, s) for s in OVERHEADS_S]
    columns += [design[:, 2 + i] / base[:, 2 + i] for i in range(len(profiles))]
    return np.column_stack(columns)


def verdicts(
    ppl_low: np.ndarray, ppl_high: np.ndarray, tpot_low: np.ndarray, tpot_high: np.ndarray
) -> np.ndarray:
    """Per design, one of `VERDICTS` from its perplexity and TPOT bands over the base's."""
    lower, higher = ppl_high < 1.0, ppl_low > 1.0
    never_slower = tpot_high <= 1.0 + TPOT_RTOL
    never_faster = tpot_low >= 1.0 - TPOT_RTOL
    always_slower = tpot_low > 1.0 + TPOT_RTOL
    always_faster = tpot_high < 1.0 - TPOT_RTOL
    out = np.full(len(ppl_low), "indistinguishable", dtype=object)
    out[lower] = "lower ppl, TPOT unsure"
    out[higher] = "higher ppl, TPOT unsure"
    out[(lower & always_slower) | (higher & always_faster)] = "trade-off"
    out[lower & never_slower] = "better"
    out[higher & never_faster] = "worse"
    return out


def _tpot(
    model: Any, platform: Platform, runtime: RuntimeProfile | None, axes: Mapping[str, np.ndarray]
) -> np.ndarray:
    """genz TPOT (seconds) of ``model`` at every row's precision, mesh and workload."""
    return np.asarray(evaluate_grid(model, platform, runtime=runtime, **axes).tpot_s, float)


def _platform(platform: Platform, scenario: ServingScenario) -> Platform:
    """``platform`` with unlimited capacity (TPOT only; the frontier already fits) and the
    scenario's kernel overhead."""
    overrides: dict[str, Any] = {}
    if scenario.kernel_overhead_s is not None:
        overrides["kernel_overhead_s"] = scenario.kernel_overhead_s
    return derive_platform(
        platform, name=platform.name, memory_capacity_scale=UNLIMITED_CAPACITY, **overrides
    )
