"""The vision tower of a VLM in a serving step (`genz.vision`, `genz.vision_ops`): each
request carrying ``images`` images runs the ViT tower and projector on them once, in the
step that starts its prefill (a chunked prefill: with its first chunk), ahead of the
decoder's pass over its prompt (text plus ``images x tokens_per_image`` image tokens).

`vision_step_costs` tabulates, for ``k`` requests starting their prefill in one step, the
tower's time, FLOP and bytes over their ``k x images`` images, costed as `genz.predict`
costs the tower in a prefill pass (same operators, the resolved runtime profile's prefill terms;
the step's fixed cost is the step's, counted once by `genz.StepCost`)."""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from roofline import InputError, Platform

from .graph import PassOps
from .inputs import pass_shape, scenario_inputs
from .model import ModelConfig
from .resolved import resolve
from .runtime import RuntimeProfile
from .runtime_cost import cost_phase
from .scenario import Parallelism, Precision, Scenario
from .vision import image_tokens
from .vision_ops import vision_ops


@dataclasses.dataclass(frozen=True)
class VisionSteps:
    """The vision tower of a step in which ``k`` requests start their prefill, by ``k =
    0 .. max_starts`` (0 at ``k = 0``): ``seconds`` (s), per-device ``flop`` and
    main-memory ``bytes`` (the tower's operators, all their runs), for the step's time
    and its energy (`search.serving.energy`)."""

    seconds: NDArray[np.float64]
    flop: NDArray[np.float64]
    bytes: NDArray[np.float64]


def vision_step_costs(
    model: ModelConfig,
    platform: Platform,
    images: int,
    max_starts: int,
    precision: Precision | None = None,
    parallelism: Parallelism | None = None,
    runtime: RuntimeProfile | None = None,
) -> VisionSteps:
    """Time and work of the tower in a step in which ``k`` requests of ``images`` images
    each start their prefill, for ``k = 0 .. max_starts`` (module doc)."""
    image_tokens(model, images)
    if model.vision is None or not images:
        raise InputError("the vision tower's steps need a VLM and --images >= 1")
    scenario = Scenario(
        precision=precision or Precision(), parallelism=parallelism or Parallelism()
    )
    nominal = scenario_inputs(scenario)
    resolved = resolve(platform, runtime, nominal)
    inputs = resolved.stored(nominal)
    starts = np.arange(max_starts + 1, dtype=float)
    shape = pass_shape(
        inputs,
        query_tokens=np.ones(1),
        context=np.ones(1),
        prefill=True,
        head_share=1.0,
        routing_independence=resolved.phases["prefill"].routing_independence,
    )
    batch = starts * images
    shape = dataclasses.replace(shape, batch=batch)
    tower = vision_ops(model.vision, shape, 1.0)
    ops = PassOps(tuple(tower), ("model",) * len(tower))
    cost = cost_phase(resolved, "prefill", ops, 0.0, batch)

    def summed(per_operator: NDArray[np.float64]) -> NDArray[np.float64]:
        # The tower's operators only: the step's fixed cost is counted by the step.
        rows = np.asarray(per_operator, float)[: len(tower)]
        table = np.broadcast_to(rows.reshape(len(tower), -1), (len(tower), len(starts)))
        return np.where(starts > 0, table.sum(axis=0), 0.0)

    return VisionSteps(summed(cost.time_s), summed(cost.flop), summed(cost.bytes))
