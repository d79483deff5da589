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

from genz import (
    ARCHITECTURE_AXES,
    AXES,
    MAX_CONFIG_BYTES,
    MESH_AXES,
    MODE_AXES,
    SCALE_AXES,
    WORKLOAD_AXES,
    Axis,
    ModelConfig,
    RuntimeProfile,
    load_runtime,
    model_from_hf_config,
    models_dir,
    with_layer_mix,
)
from roofline import DesignCost, InputError, Platform, load_platform, load_user_document
from scaling_law import MfuModel, load_mfu_model
from search.bits import parse_formats

from .axes import axis, check_keys, ints, number, section
from .designs import design_platforms, parse_design_section
from .objectives import Constraints, Objective, parse_objectives

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
HARDWARE_AXES = tuple(SCALE_AXES)
MODEL_AXES = ("layers", "hidden", "ffn_ratio", "heads", "kv_heads", "experts", "top_k", "vocab")
PRECISION_AXES = ("weight_bits", "kv_bits", "activation_bits")
#: Axis order of a design point's index vector (`DesignSpace.axes`).
#: Workload axes of a space: tokens and batch, decoding modes, images, offload fractions.
SPACE_WORKLOAD_AXES = (*WORKLOAD_AXES, *MODE_AXES)
#: Architecture variants of the ``model`` section (`genz.layer_mix`; NaN: unset). The
#: window leaves parameters (and so the loss law) unchanged; ``attention_layers`` (the
#: attention / state-space mix of a hybrid base) is costed by genz but no loss law has an
#: SSM term, so a design off the base's mix is flagged unpriced (`model.layer_mix_ratio`).
VARIANT_AXES = ("sliding_window", "attention_layers")
AXIS_NAMES = (
    "preset",
    *HARDWARE_AXES,
    *MODEL_AXES,
    *PRECISION_AXES,
    *MESH_AXES,
    *SPACE_WORKLOAD_AXES,
    *VARIANT_AXES,
)
DEFAULT_BASE = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "intermediate_size": 5632,
    "vocab_size": 32000,
    "tie_word_embeddings": False,
    "_name": "llama-style",
}

Values = tuple[float, ...]


@dataclass(frozen=True)
class HardwareSpace:
    """Platforms and what-if scale factors; ``devices`` None allows any mesh size;
    ``runtime`` a serving-stack profile applied to every design (None: the physics)."""

    platforms: tuple[Platform, ...]
    compute_scale: Values = (1.0,)
    bandwidth_scale: Values = (1.0,)
    capacity_scale: Values = (1.0,)
    link_bandwidth_scale: Values = (1.0,)
    devices: tuple[int, ...] | None = None
    runtime: RuntimeProfile | None = None
    #: Per platform, the modelled area / TDP / cost of a ``design`` entry (None: a preset).
    costs: tuple[DesignCost | None, ...] = ()

    def cost_of(self, index: int) -> DesignCost | None:
        """The design cost of platform ``index`` (None for a preset)."""
        return self.costs[index] if index < len(self.costs) else None


@dataclass(frozen=True)
class ModelSpace:
    """Architecture axes around ``base_config`` (a Hugging Face config mapping).

    ``heads_from_head_dim``: the ``heads`` axis holds head widths (the file gave
    ``head_dim``), so heads = hidden / value.
    """

    base_name: str
    base_config: Mapping[str, Any]
    layers: Values
    hidden: Values
    ffn_ratio: Values
    heads: Values
    heads_from_head_dim: bool
    kv_heads: Values
    experts: Values
    top_k: Values
    vocab: Values
    ffn_multiple: int = 64
    gated_ffn: bool = True
    tie_embeddings: bool = False


@dataclass(frozen=True)
class PrecisionSpace:
    """Uniform weight bits, or ``ilp``: the grid uses the bits of ``formats`` and the
    frontier candidates get a mixed-precision allocation (`search.quantize`)."""

    weight_bits: Values
    kv_bits: Values = (16.0,)
    activation_bits: Values = (16.0,)
    ilp_formats: str | None = None


PRECISION_MODELS = ("ptq", "quantised-training")
#: ``training.mfu`` value that selects the shipped width-depth MFU model.
WIDTH_DEPTH_MFU = "width-depth"
#: Training-time defaults: one H100 SXM (dense bf16 peak 989.4 TFLOP/s), the width-depth MFU
#: model fitted on the Gemstones step times (`scaling_law.load_mfu_model`; MI250X nodes, so
#: its level on an H100 is an assumption, its width and depth trend what the data supports),
#: and Gemstones' training context of 2048 tokens.
DEFAULT_TRAINING = {
    "platform": "h100-sxm",
    "devices": 1,
    "mfu": WIDTH_DEPTH_MFU,
    "sequence_length": 2048,
}


@dataclass(frozen=True)
class LawSpec:
    """Loss law file (None: the shipped shape-aware Gemstones fit), the training-token rule,
    the meaning of weight bits (``precision_model``), the domain restriction and the
    other validated forms (None: the shipped ones when ``path`` is None, else none)."""

    path: Path | None = None
    training_tokens: float | None = None
    tokens_per_parameter: float | None = 20.0
    precision_model: str = "ptq"
    within_data: bool = False
    forms: tuple[Path, ...] | None = None


@dataclass(frozen=True)
class TrainingSpec:
    """Training-time estimate: platform (its dense bf16 peak and hourly price), devices,
    model FLOP utilisation (one number in (0, 1], or None: ``mfu_model`` of each design's
    width and depth) and training context, tokens."""

    platform: Platform
    devices: int = 1
    mfu: float | None = None
    sequence_length: int = 2048
    mfu_model: MfuModel | None = None

    def mfu_of(self, width: Any, depth: Any) -> Any:
        """MFU of designs of these widths and depths: the fixed ``mfu`` or the model's."""
        if self.mfu is not None:
            return self.mfu
        model = self.mfu_model if self.mfu_model is not None else load_mfu_model()
        return model.mfu(width, depth)

    def describe_mfu(self) -> str:
        """``'0.4'`` or ``'width-depth model 0.0245 w^0.363 d^-0.104'`` for captions."""
        if self.mfu is not None:
            return f"{self.mfu:g}"
        model = self.mfu_model if self.mfu_model is not None else load_mfu_model()
        return (
            f"width-depth model {model.coefficient:.4g} x width^{model.width_exponent:.3f} x "
            f"depth^{model.depth_exponent:.3f}"
        )


@dataclass(frozen=True)
class SamplingSpec:
    """Sampled search: ``samples`` points (Latin hypercube or random), then
    ``refine_rounds`` rounds evaluating the axis neighbours of the frontier."""

    samples: int = 4096
    method: str = "lhs"
    refine_rounds: int = 3
    seed: int = 0


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
    hardware = _hardware(section(document.get("hardware"), f"{origin}: hardware", None), base_dir)
    model = _model(section(document.get("model") or {}, f"{origin}: model", None), base_dir)
    precision = _precision(section(document.get("precision") or {}, f"{origin}: precision", None))
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
        law=_law(section(document.get("law") or {}, f"{origin}: law", None), base_dir),
        objectives=parse_objectives(document.get("objectives", ["loss", "tpot"])),
        constraints=Constraints.from_human(constraints, f"{origin}: constraints"),
        sampling=_sampling(section(document.get("sampling") or {}, f"{origin}: sampling", None)),
        training=_training(
            section(document.get("training") or {}, f"{origin}: training", None), base_dir
        ),
        origin=origin,
        variants=MappingProxyType(_variants(document.get("model") or {}, f"{origin}: model")),
    )
    if space.size > MAX_SPACE_POINTS:
        raise InputError(f"{origin}: {space.size:.3g} points; at most {MAX_SPACE_POINTS:.0e}")
    return space


def _hardware(section: dict[str, Any], root: Path) -> HardwareSpace:
    where = "hardware"
    check_keys(section, ("presets", "design", *HARDWARE_AXES, "devices", "runtime"), where)
    presets = section.get("presets")
    if isinstance(presets, str):
        presets = [presets]
    if presets is None and section.get("design") is not None:
        presets = []
    if not isinstance(presets, list) or len(presets) > 64:
        raise InputError(f"{where}.presets must list 1 to 64 hardware presets or YAML files")
    if not presets and section.get("design") is None:
        raise InputError(f"{where}.presets must list 1 to 64 hardware presets or YAML files")
    platforms: list[Platform] = []
    for item in presets:
        if not isinstance(item, str):
            raise InputError(f"{where}.presets must hold names or paths, got {item!r}")
        path = root / item if item.endswith((".yaml", ".yml")) else item
        platforms.append(load_platform(path))
    costs: list[DesignCost | None] = [None] * len(platforms)
    if section.get("design") is not None:
        designed, design_costs = design_platforms(parse_design_section(section["design"]))
        platforms.extend(designed)
        costs.extend(design_costs)
    names = [platform.name for platform in platforms]
    if len(set(names)) != len(names):
        raise InputError(f"{where}.presets: platform names repeat ({', '.join(names)})")
    scales = {key: declared_axis(section, SCALE_AXES[key], where) for key in HARDWARE_AXES}
    devices = None
    if section.get("devices") is not None:
        devices = ints(section, "devices", where, 1, 1, 1_000_000)
    runtime = section.get("runtime")
    if runtime is not None and not isinstance(runtime, str):
        raise InputError(f"{where}.runtime must be a runtime profile name or YAML file")
    profile = None
    if runtime is not None:
        try:
            profile = load_runtime(
                root / runtime if runtime.endswith((".yaml", ".yml")) else runtime
            )
        except InputError as error:
            raise InputError(f"{where}.runtime: {error}") from None
    return HardwareSpace(
        platforms=tuple(platforms), devices=devices, runtime=profile, costs=tuple(costs), **scales
    )


def _base_config(name: Any, root: Path) -> tuple[str, dict[str, Any]]:
    if name is None:
        return "llama-style", dict(DEFAULT_BASE)
    if not isinstance(name, str):
        raise InputError(
            f"model.base must be a model preset name or a config.json path, got {name!r}"
        )
    path = root / name if name.endswith(".json") else models_dir() / f"{name.lower()}.json"
    if not path.is_file():
        raise InputError(f"model.base: no model preset or config file {name!r}")
    config = load_user_document(path, kind="config.json", max_bytes=MAX_CONFIG_BYTES, fmt="json")
    if not isinstance(config, dict):
        raise InputError(f"model.base: {path} must hold a JSON object")
    return str(config.get("_name", Path(name).stem)), config


def _model(section: dict[str, Any], root: Path) -> ModelSpace:
    where = "model"
    check_keys(section, ("base", "ffn_multiple", "head_dim", *MODEL_AXES, *VARIANT_AXES), where)
    base_name, config = _base_config(section.get("base"), root)
    base = model_from_hf_config(config, default_name=base_name, origin=f"{where}.base")
    _check_base(base, base_name)
    _check_hybrid(base, section, where)
    if "heads" in section and "head_dim" in section:
        raise InputError(f"{where}: give heads or head_dim, not both")
    multiple = section.get("ffn_multiple", 64)
    if isinstance(multiple, bool) or not isinstance(multiple, int) or not 1 <= multiple <= 4096:
        raise InputError(f"{where}.ffn_multiple must be an integer in [1, 4096], got {multiple!r}")
    by_head_dim = "heads" not in section
    if by_head_dim:
        heads = axis(section, "head_dim", where, base.head_dim, 1, 4096, True)
    else:
        heads = axis(section, "heads", where, base.num_heads, 1, 4096, True)
    return ModelSpace(
        base_name=base_name,
        base_config=MappingProxyType(config),
        layers=axis(section, "layers", where, base.num_layers, 1, 1024, True),
        hidden=axis(section, "hidden", where, base.hidden_size, 1, 1 << 18, True),
        ffn_ratio=axis(
            section, "ffn_ratio", where, base_ffn_size(base) / base.hidden_size, 0.05, 64, False
        ),
        heads=heads,
        heads_from_head_dim=by_head_dim,
        kv_heads=axis(section, "kv_heads", where, base.num_kv_heads, 1, 4096, True),
        experts=axis(section, "experts", where, max(base.num_experts, 1), 1, 4096, True),
        top_k=axis(section, "top_k", where, max(base.experts_per_token, 1), 1, 4096, True),
        vocab=axis(section, "vocab", where, base.vocab_size, 1, 1 << 22, True),
        ffn_multiple=multiple,
        gated_ffn=base.gated_ffn,
        tie_embeddings=base.tie_word_embeddings,
    )


def base_ffn_size(base: ModelConfig) -> int:
    """The FFN width per expert of the base (``moe_intermediate_size`` for MoE)."""
    return base.moe_intermediate_size if base.is_moe else base.intermediate_size


def _check_base(base: ModelConfig, name: str) -> None:
    unsupported = [
        (base.is_mla, "multi-head latent attention"),
        (base.num_shared_experts > 0, "shared experts"),
        (base.first_dense_layers > 0 or base.moe_layer_freq > 1, "mixed dense/MoE layers"),
        (_mixes_layers(base) and not base.num_attention_layers, "only state-space layers"),
        (base.num_parallel_layers > 0, "parallel attention and Mamba-2 in every layer"),
        (base.attention_output_gate, "gated attention output"),
        (base.vision is not None, "a vision tower"),
    ]
    for flag, what in unsupported:
        if flag:
            raise InputError(
                f"model.base {name!r} uses {what}, which the co-design search does not vary; "
                "use a dense or plain-MoE base (Llama, Qwen2, Mistral, Mixtral) or a "
                "sequential attention / SSM hybrid (nemotron-h-8b, bamba-9b)"
            )


def _mixes_layers(base: ModelConfig) -> bool:
    """Whether the base has state-space or linear-attention layers (a hybrid or pure SSM)."""
    return base.num_ssm_layers > 0 or base.num_linear_layers > 0


def _check_hybrid(base: ModelConfig, section: Mapping[str, Any], where: str) -> None:
    """A hybrid base (attention with SSM or linear-attention layers) keeps its shape, since
    its config's layer pattern cannot be rewritten per design: only its attention / SSM
    mix (``attention_layers``, each value checked by `genz.with_layer_mix`) and window vary.
    ``attention_layers`` on a base without that mix is refused the same way."""
    if _mixes_layers(base):
        given = [name for name in (*MODEL_AXES, "head_dim") if name in section]
        if given:
            raise InputError(
                f"{where}.{given[0]}: the hybrid base {base.name!r} keeps its shape (its "
                "layer pattern is fixed); vary model.attention_layers, its attention / SSM mix"
            )
    if "attention_layers" not in section:
        return
    spec = ARCHITECTURE_AXES["attention_layers"]
    label = f"{where}.attention_layers"
    for count in ints(section, "attention_layers", where, None, spec.low, spec.high):
        with_layer_mix(base, attention_layers=count, flags={"attention_layers": label})


def _precision(section: dict[str, Any]) -> PrecisionSpace:
    where = "precision"
    check_keys(section, (*PRECISION_AXES, "formats"), where)
    formats = None
    if section.get("weight_bits") == "ilp":
        formats = section.get("formats", "16,8,4")
        if not isinstance(formats, str):
            raise InputError(f"{where}.formats must be a string such as '16,8,4'")
        bits = tuple(sorted({fmt.bits for fmt in parse_formats(formats)}, reverse=True))
    else:
        if "formats" in section:
            raise InputError(f"{where}.formats is used only with weight_bits: ilp")
        bits = declared_axis(section, AXES["weight_bits"], where)
    return PrecisionSpace(
        weight_bits=bits,
        kv_bits=declared_axis(section, AXES["kv_bits"], where),
        activation_bits=declared_axis(section, AXES["activation_bits"], where),
        ilp_formats=formats,
    )


def _variants(section: Mapping[str, Any], where: str) -> dict[str, tuple[int, ...]]:
    """The `VARIANT_AXES` the ``model`` section gives (window tokens, attention layers)."""
    found = {}
    for name in VARIANT_AXES:
        if name in section:
            spec = ARCHITECTURE_AXES[name]
            found[name] = ints(section, name, where, None, spec.low, spec.high)
    return found


def scenario_counts(section: Mapping[str, Any], name: str, where: str) -> tuple[int, ...]:
    """Values of whole-number scenario axis ``name`` (`genz.AXES`: its default and range)."""
    spec = AXES[name]
    return ints(section, name, where, spec.default, spec.low, spec.high)


def declared_axis(section: Mapping[str, Any], spec: Axis, where: str) -> Values:
    """Values of the real-valued axis ``spec`` declares (its key, default and range)."""
    return axis(section, spec.name, where, spec.default, spec.low, spec.high, spec.integer)


def _law(section: dict[str, Any], root: Path) -> LawSpec:
    where = "law"
    check_keys(
        section,
        (
            "path",
            "training_tokens",
            "tokens_per_parameter",
            "precision_model",
            "within_data",
            "forms",
        ),
        where,
    )
    path = section.get("path")
    if path is not None and not isinstance(path, str):
        raise InputError(f"{where}.path must be a file path, got {path!r}")
    if "training_tokens" in section and "tokens_per_parameter" in section:
        raise InputError(f"{where}: give training_tokens or tokens_per_parameter, not both")
    tokens = per_parameter = None
    if "training_tokens" in section:
        tokens = number(section["training_tokens"], f"{where}.training_tokens")
        if tokens <= 0:
            raise InputError(f"{where}.training_tokens must be > 0, got {tokens:g}")
    else:
        per_parameter = number(
            section.get("tokens_per_parameter", 20), f"{where}.tokens_per_parameter"
        )
        if per_parameter <= 0:
            raise InputError(f"{where}.tokens_per_parameter must be > 0, got {per_parameter:g}")
    precision_model = section.get("precision_model", "ptq")
    if precision_model not in PRECISION_MODELS:
        raise InputError(
            f"{where}.precision_model must be one of {', '.join(PRECISION_MODELS)}, "
            f"got {precision_model!r}"
        )
    within = section.get("within_data", False)
    if not isinstance(within, bool):
        raise InputError(f"{where}.within_data must be true or false, got {within!r}")
    forms = section.get("forms")
    if forms is not None and (
        not isinstance(forms, list) or not all(isinstance(item, str) for item in forms)
    ):
        raise InputError(f"{where}.forms must list law files, got {forms!r}")
    return LawSpec(
        None if path is None else root / path,
        tokens,
        per_parameter,
        precision_model,
        within,
        None if forms is None else tuple(root / item for item in forms),
    )


def _training(section: dict[str, Any], root: Path) -> TrainingSpec:
    where = "training"
    check_keys(section, tuple(DEFAULT_TRAINING), where)
    name = section.get("platform", DEFAULT_TRAINING["platform"])
    if not isinstance(name, str):
        raise InputError(f"{where}.platform must be a hardware preset or YAML file, got {name!r}")
    platform = load_platform(root / name if name.endswith((".yaml", ".yml")) else name)
    devices = section.get("devices", DEFAULT_TRAINING["devices"])
    if isinstance(devices, bool) or not isinstance(devices, int) or not 1 <= devices <= 1 << 20:
        raise InputError(f"{where}.devices must be an integer in [1, 1048576], got {devices!r}")
    given = section.get("mfu", DEFAULT_TRAINING["mfu"])
    mfu: float | None = None
    model = None
    if given == WIDTH_DEPTH_MFU:
        model = load_mfu_model()
    elif isinstance(given, str) and given.endswith(".json"):
        try:
            model = load_mfu_model(root / given)
        except InputError as error:
            raise InputError(f"{where}.mfu: {error}") from None
    else:
        mfu = number(given, f"{where}.mfu")
        if not 0 < mfu <= 1:
            raise InputError(
                f"{where}.mfu must be in (0, 1], {WIDTH_DEPTH_MFU!r} or a model .json, got {mfu:g}"
            )
    length = section.get("sequence_length", DEFAULT_TRAINING["sequence_length"])
    if isinstance(length, bool) or not isinstance(length, int) or not 1 <= length <= 1 << 24:
        raise InputError(f"{where}.sequence_length must be an integer >= 1, got {length!r}")
    return TrainingSpec(platform, devices, mfu, length, model)


def _sampling(section: dict[str, Any]) -> SamplingSpec:
    where = "sampling"
    check_keys(section, ("samples", "method", "refine_rounds", "seed"), where)
    spec = SamplingSpec()
    values = {}
    for key, low, high in (
        ("samples", 1, 10_000_000),
        ("refine_rounds", 0, 100),
        ("seed", 0, 2**32),
    ):
        value = section.get(key, getattr(spec, key))
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InputError(f"{where}.{key} must be an integer in [{low}, {high}], got {value!r}")
        values[key] = value
    method = section.get("method", spec.method)
    if method not in ("lhs", "random"):
        raise InputError(f"{where}.method must be 'lhs' or 'random', got {method!r}")
    return SamplingSpec(method=method, **values)
