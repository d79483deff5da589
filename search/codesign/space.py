"""Co-design spaces: a YAML file read into frozen dataclasses (``yaml.safe_load``).

Every axis is a single value, a list, ``{values: [...]}`` or a range ``{min, max,
steps}`` (``spacing: log`` for geometric steps; integer axes round and drop repeats).
Sections and keys (unknown keys are refused by name; paths are relative to the file)::

    name: orin-0.5b
    hardware:    {presets: [jetson-agx-orin-64gb], design: {...} (parametric accelerators,
                  `search.codesign.designs`), compute_scale: 1, bandwidth_scale: 1,
                  capacity_scale: 1, link_bandwidth_scale: 1, devices: [1, 2],
                  runtime: vllm (a data/runtimes profile or .yaml; default none;
                  `codesign search --runtime` replaces it)}
    model:       {base: qwen2.5-0.5b, layers: ..., hidden: ..., ffn_ratio: ...,
                  ffn_multiple: 64, head_dim: 64 (or heads: ...), kv_heads: ...,
                  experts: 1, top_k: 1, vocab: ..., sliding_window: [0, 4096] (tokens;
                  0 full attention; default the base's, `genz.with_sliding_window`),
                  attention_layers: [4, 8, 16] (hybrid bases only: attention layers of
                  the attention / SSM or linear-attention mix, `genz.with_layer_mix`)}
    precision:   {weight_bits: [16, 8, 4] (or ilp), formats: "16,8,4", kv_bits: 16,
                  activation_bits: 16}
    parallelism: {tp: 1, pp: 1, ep: 1, dp: 1}
    workload:    {batch: 1, input_tokens: 512, output_tokens: 128, parallel_samples: 1,
                  beam_width: 1, images: 0, weight_offload: 0, kv_offload: 0}
    law:         {path: law.json, training_tokens: 18.0e+12 (or tokens_per_parameter: 20),
                  precision_model: ptq (or quantised-training), within_data: false,
                  forms: [other_law.json, ...]}
    training:    {platform: h100-sxm, devices: 1, mfu: width-depth (or 0.4, or a
                  model .json), sequence_length: 2048}
    objectives:  [loss, tpot]
    constraints: {max_memory_gb: 8, max_training_hours: 30000, ...}
    sampling:    {samples: 4096, method: lhs, refine_rounds: 3, seed: 0}

``law.precision_model``: serving-time weight bits are quantised after training (``ptq``,
default: Kumar et al.'s post-training degradation term) or the weights were trained at
that precision (``quantised-training``: effective parameters). ``within_data: true`` keeps
only designs inside the law's data domain. ``forms`` lists other validated law files whose
spread is reported beside the bootstrap interval (default, with the shipped law: the files
of ``data/scaling/gemstones_forms/``). ``training`` names the platform, device count and MFU
of the training-time estimate (defaults `DEFAULT_TRAINING`); ``mfu: width-depth`` (default)
makes the MFU follow each design's width and depth (`scaling_law.MfuModel`, fitted on the
Gemstones step times: 7.8% leave-one-architecture-out error, against 30% for one MFU), a
number fixes one MFU for every design, a ``.json`` path names another fitted model.

Model axes not given keep the base model's value (``base`` is a model preset or a
``config.json``; default a Llama-style base). ``intermediate_size`` is
``ffn_ratio * hidden`` rounded to a multiple of ``ffn_multiple``; ``experts: 1``
is a dense FFN. ``devices`` keeps only meshes with ``tp*pp*ep*dp`` in the list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from genz import AXES, MESH_AXES, MODE_AXES, WORKLOAD_AXES
from roofline import InputError, load_user_document

from .axes import Values, declared_axis, scenario_counts, section
from .objectives import Constraints, Objective, parse_objectives
from .space_hardware import HARDWARE_AXES, HardwareSpace, parse_hardware
from .space_law import PRECISION_MODELS, LawSpec, parse_law
from .space_model import (
    DEFAULT_BASE,
    MODEL_AXES,
    VARIANT_AXES,
    ModelSpace,
    base_ffn_size,
    parse_model,
    parse_variants,
)
from .space_precision import PRECISION_AXES, PrecisionSpace, parse_precision
from .space_sampling import SamplingSpec, parse_sampling
from .space_training import DEFAULT_TRAINING, WIDTH_DEPTH_MFU, TrainingSpec, parse_training

__all__ = [
    "AXIS_NAMES",
    "DEFAULT_BASE",
    "DEFAULT_TRAINING",
    "HARDWARE_AXES",
    "MAX_SPACE_BYTES",
    "MAX_SPACE_POINTS",
    "MESH_AXES",
    "MODEL_AXES",
    "PRECISION_AXES",
    "PRECISION_MODELS",
    "SPACE_WORKLOAD_AXES",
    "TOP_KEYS",
    "VARIANT_AXES",
    "WIDTH_DEPTH_MFU",
    "WORKLOAD_AXES",
    "DesignSpace",
    "HardwareSpace",
    "LawSpec",
    "ModelSpace",
    "PrecisionSpace",
    "SamplingSpec",
    "TrainingSpec",
    "Values",
    "base_ffn_size",
    "declared_axis",
    "load_space",
    "scenario_counts",
    "space_from_dict",
]

MAX_SPACE_BYTES = 256_000
#: Spaces above this many points cannot be enumerated even for sampling (int64 keys).
MAX_SPACE_POINTS = 1e15
TOP_KEYS = (
    "name",
    "hardware",
    "model",
    "precision",
    "parallelism",
    "workload",
    "law",
    "training",
    "objectives",
    "constraints",
    "sampling",
)
#: Workload axes of a space: tokens and batch, decoding modes, images, offload fractions.
SPACE_WORKLOAD_AXES = (*WORKLOAD_AXES, *MODE_AXES)
#: Axis order of a design point's index vector (`DesignSpace.axes`).
AXIS_NAMES = (
    "preset",
    *HARDWARE_AXES,
    *MODEL_AXES,
    *PRECISION_AXES,
    *MESH_AXES,
    *SPACE_WORKLOAD_AXES,
    *VARIANT_AXES,
)


@dataclass(frozen=True)
class DesignSpace:
    """A whole co-design space (see module doc); ``axes`` gives every axis's values."""

    name: str
    hardware: HardwareSpace
    model: ModelSpace
    precision: PrecisionSpace
    mesh: Mapping[str, tuple[int, ...]]
    workload: Mapping[str, tuple[float, ...]]
    law: LawSpec
    objectives: tuple[Objective, ...]
    constraints: Constraints
    sampling: SamplingSpec
    training: TrainingSpec
    origin: str = "<space>"
    #: `VARIANT_AXES` values given in the ``model`` section (absent: the model's own).
    variants: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def axes(self) -> dict[str, Values]:
        """Axis name -> values, in `AXIS_NAMES` order (``preset`` indexes platforms)."""
        hardware, model, precision = self.hardware, self.model, self.precision
        values: dict[str, Values] = {
            "preset": tuple(float(i) for i in range(len(hardware.platforms)))
        }
        values.update({name: getattr(hardware, name) for name in HARDWARE_AXES})
        values.update({name: getattr(model, name) for name in MODEL_AXES})
        values.update({name: getattr(precision, name) for name in PRECISION_AXES})
        values.update({name: tuple(map(float, self.mesh[name])) for name in MESH_AXES})
        values.update(
            {name: tuple(map(float, self.workload[name])) for name in SPACE_WORKLOAD_AXES}
        )
        values.update(
            {name: tuple(map(float, self.variants.get(name, (math.nan,)))) for name in VARIANT_AXES}
        )
        return values

    @property
    def size(self) -> int:
        """Points of the full product of the axes (before invalid ones are dropped)."""
        return math.prod(len(values) for values in self.axes.values())


def load_space(path: str | Path) -> DesignSpace:
    """Read a space YAML file (at most `MAX_SPACE_BYTES`)."""
    source = Path(path)
    document = load_user_document(source, kind="space file", max_bytes=MAX_SPACE_BYTES, fmt="yaml")
    return space_from_dict(document, origin=str(source), root=source.resolve().parent)


def space_from_dict(
    document: Any, origin: str = "<space>", root: str | Path | None = None
) -> DesignSpace:
    """Build a `DesignSpace` from a mapping in the file format (paths relative to ``root``)."""
    base_dir = Path(root) if root is not None else Path.cwd()
    document = section(document, origin, TOP_KEYS)
    hardware = parse_hardware(
        section(document.get("hardware"), f"{origin}: hardware", None), base_dir
    )
    model = parse_model(section(document.get("model") or {}, f"{origin}: model", None), base_dir)
    precision = parse_precision(
        section(document.get("precision") or {}, f"{origin}: precision", None)
    )
    mesh_doc = section(document.get("parallelism") or {}, f"{origin}: parallelism", MESH_AXES)
    mesh = {name: scenario_counts(mesh_doc, name, f"{origin}: parallelism") for name in MESH_AXES}
    where = f"{origin}: workload"
    work_doc = section(document.get("workload") or {}, where, SPACE_WORKLOAD_AXES)
    workload = {
        name: scenario_counts(work_doc, name, where)
        if AXES[name].integer
        else declared_axis(work_doc, AXES[name], where)
        for name in SPACE_WORKLOAD_AXES
    }
    name = document.get("name", Path(origin).stem)
    if not isinstance(name, str) or not name:
        raise InputError(f"{origin}: name must be a non-empty string")
    constraints = document.get("constraints") or {}
    if not isinstance(constraints, dict):
        raise InputError(f"{origin}: constraints must be a mapping")
    space = DesignSpace(
        name=name,
        hardware=hardware,
        model=model,
        precision=precision,
        mesh=MappingProxyType(mesh),
        workload=MappingProxyType(workload),
        law=parse_law(section(document.get("law") or {}, f"{origin}: law", None), base_dir),
        objectives=parse_objectives(document.get("objectives", ["loss", "tpot"])),
        constraints=Constraints.from_human(constraints, f"{origin}: constraints"),
        sampling=parse_sampling(
            section(document.get("sampling") or {}, f"{origin}: sampling", None)
        ),
        training=parse_training(
            section(document.get("training") or {}, f"{origin}: training", None), base_dir
        ),
        origin=origin,
        variants=MappingProxyType(parse_variants(document.get("model") or {}, f"{origin}: model")),
    )
    if space.size > MAX_SPACE_POINTS:
        raise InputError(f"{origin}: {space.size:.3g} points; at most {MAX_SPACE_POINTS:.0e}")
    return space
