"""What the sidebar selected, how it maps to genz/roofline inputs and to one CLI call.

`Selection` holds only plain values (preset names, scale factors, scenario
numbers), so it is a cheap, stable `st.cache_data` key. Every number a page shows
comes from `prediction` or `sweep` of a `Selection`, and `predict_command` prints
the ``codesign predict`` call that reproduces it.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
import yaml

from calibration import Interval
from genz import (
    ARCHITECTURE_AXES,
    AXES,
    DEFAULT_BATCH,
    DEFAULT_BITS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    MODE_AXES,
    ModelConfig,
    Parallelism,
    Precision,
    Prediction,
    RuntimeProfile,
    Scenario,
    UseCase,
    evaluate_grid,
    load_model,
    load_runtime,
    load_use_cases,
    model_from_hf_config,
    predict,
    with_layer_mix,
    with_lora,
)
from roofline import Platform, derive_platform, load_platform, platform_from_dict

from ..cli.runtime_output import intervals

#: Key under which the dashboard entry stores the current `Selection` (None on bad input).
SELECTION_KEY = "selection"
#: Name the CLI command uses for an uploaded model config.
UPLOADED_CONFIG_NAME = "config.json"
#: The sidebar's "custom hardware" choice, and the file name the CLI command gives the
#: typed platform (`custom_platform_yaml`; ``--hw custom-hw.yaml`` loads it).
CUSTOM_HW_FILE = "custom-hw.yaml"


@dataclass(frozen=True)
class Selection:
    """Hardware, model and scenario chosen in the sidebar (plain values only).

    ``model_json`` is the canonical JSON text of an uploaded ``config.json``
    (None for a preset, then ``model`` is the preset name). ``hw_yaml`` is the preset
    YAML of custom hardware typed in absolute numbers (then ``hw`` is `CUSTOM_HW_FILE`).
    Scale factors multiply the preset's peaks, memory bandwidth, capacity and link
    bandwidth.
    """

    hw: str = "h100-sxm"
    model: str = "llama-3.1-8b"
    model_json: str | None = None
    compute_scale: float = 1.0
    bw_scale: float = 1.0
    capacity_scale: float = 1.0
    link_bw_scale: float = 1.0
    batch: int = DEFAULT_BATCH
    input_tokens: int = DEFAULT_INPUT_TOKENS
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    weight_bits: float = DEFAULT_BITS
    activation_bits: float = DEFAULT_BITS
    kv_bits: float = DEFAULT_BITS
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    #: Serving-stack profile (`genz.list_runtimes`); ``ideal``: physics only.
    runtime: str = "ideal"
    hw_yaml: str | None = None
    #: Decoding mode, images and offload (`genz.MODE_AXES`, the `Scenario` fields).
    parallel_samples: int = 1
    beam_width: int = 1
    images: int = 0
    weight_offload: float = 0.0
    kv_offload: float = 0.0
    #: Architecture variants (`genz.ARCHITECTURE_AXES`); None: the model's own.
    sliding_window: int | None = None
    attention_layers: int | None = None
    #: Multi-LoRA serving (`genz.with_lora`): rank (0: none), adapters, comma-joined targets.
    lora_rank: int = 0
    lora_adapters: int = 1
    lora_targets: str = "qkv,o"

    @property
    def devices(self) -> int:
        """Devices used: tp * pp * ep * dp."""
        return self.tp * self.pp * self.ep * self.dp

    @property
    def is_scaled(self) -> bool:
        """True when any what-if scale factor differs from 1."""
        return any(
            s != 1.0
            for s in (self.compute_scale, self.bw_scale, self.capacity_scale, self.link_bw_scale)
        )


@st.cache_data(show_spinner=False, max_entries=64)
def preset_platform(name: str) -> Platform:
    """`roofline.load_platform`, cached (parsing the YAML costs more than a prediction)."""
    return load_platform(name)


@st.cache_data(show_spinner=False, max_entries=64)
def custom_platform(text: str) -> Platform:
    """The platform of a `custom_platform_yaml` text (`roofline.platform_from_dict`)."""
    return platform_from_dict(yaml.safe_load(text), origin=CUSTOM_HW_FILE)


def custom_platform_yaml(
    peak_tflops: float,
    bandwidth_gb_per_s: float,
    capacity_gb: float,
    link_gb_per_s: float,
    devices_per_node: int,
    efficiency: float,
) -> str:
    """A hardware preset (the ``data/hardware`` format) from absolute numbers: 16-bit
    dense peak (8-bit twice it, 32-bit half), one memory level, one link per device and
    ``efficiency`` as the achievable fraction of peak, bandwidth and link bandwidth."""
    document = {
        "name": "custom-hw",
        "display_name": "custom hardware (typed in the dashboard)",
        "kind": "gpu",
        "source": "typed in the dashboard sidebar (absolute numbers)",
        "peak_tflops": {
            "fp32": peak_tflops / 2,
            "bf16": peak_tflops,
            "fp16": peak_tflops,
            "fp8": 2 * peak_tflops,
            "int8": 2 * peak_tflops,
        },
        "memory": [
            {"name": "main", "bandwidth_gb_per_s": bandwidth_gb_per_s, "capacity_gb": capacity_gb}
        ],
        "interconnect": {
            "link_bandwidth_gb_per_s": link_gb_per_s,
            "link_latency_us": 2.0,
            "devices_per_node": devices_per_node,
        },
        "efficiency": {"compute": efficiency, "memory": efficiency, "interconnect": efficiency},
    }
    return yaml.safe_dump(document, sort_keys=False)


def build_platform(selection: Selection) -> Platform:
    """The preset (or the typed custom platform) with the selection's scale factors
    applied (as ``--*-scale`` does)."""
    if selection.hw == CUSTOM_HW_FILE and selection.hw_yaml is not None:
        base = custom_platform(selection.hw_yaml)
    else:
        base = preset_platform(selection.hw)
    return derive_platform(
        base,
        compute_scale=selection.compute_scale,
        memory_bandwidth_scale=selection.bw_scale,
        memory_capacity_scale=selection.capacity_scale,
        link_bandwidth_scale=selection.link_bw_scale,
    )


def lora_flags(selection: Selection) -> list[str]:
    """``--lora-rank/--lora-adapters/--lora-targets`` of the selection's adapters (none
    without a rank), as `predict` and `serve` take them."""
    if not selection.lora_rank:
        return []
    return [
        "--lora-rank",
        str(selection.lora_rank),
        "--lora-adapters",
        str(selection.lora_adapters),
        "--lora-targets",
        selection.lora_targets,
    ]


def build_model(selection: Selection) -> ModelConfig:
    """The preset model, or the uploaded config (`model_from_hf_config`), with the
    selection's window size and attention layer count (`genz.with_layer_mix`)."""
    if selection.model_json is None:
        model = load_model(selection.model)
    else:
        model = model_from_hf_config(
            json.loads(selection.model_json), default_name="uploaded", origin=UPLOADED_CONFIG_NAME
        )
    model = with_layer_mix(
        model, sliding_window=selection.sliding_window, attention_layers=selection.attention_layers
    )
    if not selection.lora_rank:
        return model
    targets = tuple(selection.lora_targets.split(","))
    return with_lora(model, selection.lora_rank, selection.lora_adapters, targets)


def build_scenario(selection: Selection) -> Scenario:
    """The `Scenario` the CLI builds from the same flags (uniform weight bits)."""
    return Scenario(
        batch=selection.batch,
        input_tokens=selection.input_tokens,
        output_tokens=selection.output_tokens,
        precision=Precision(
            weight_bits=selection.weight_bits,
            activation_bits=selection.activation_bits,
            kv_bits=selection.kv_bits,
        ),
        parallelism=Parallelism(tp=selection.tp, pp=selection.pp, ep=selection.ep, dp=selection.dp),
        **{name: getattr(selection, name) for name in MODE_AXES},
    )


@st.cache_data(show_spinner=False)
def use_cases() -> dict[str, UseCase]:
    """`genz.use_cases.load_use_cases`, cached."""
    return load_use_cases()


@st.cache_data(show_spinner=False, max_entries=512)
def cached_model(name: str, model_json: str | None) -> ModelConfig:
    """`build_model` for a preset name or uploaded JSON text, cached."""
    return build_model(Selection(model=name, model_json=model_json))


@st.cache_resource(show_spinner=False, max_entries=32)
def runtime_profile(name: str) -> RuntimeProfile | None:
    """`genz.load_runtime` of a shipped profile, cached; None for ``ideal`` (physics)."""
    profile = load_runtime(name)
    return None if profile.is_ideal else profile


@st.cache_data(show_spinner=False, max_entries=512)
def prediction(selection: Selection) -> Prediction:
    """`genz.predictor.predict` of the selection (with its runtime profile), cached per
    distinct selection."""
    return predict(
        build_model(selection),
        build_platform(selection),
        build_scenario(selection),
        runtime=runtime_profile(selection.runtime),
    )


def prediction_intervals(selection: Selection) -> dict[str, Interval]:
    """80 % intervals of the selection's TTFT, TPOT, end-to-end latency (s) and
    throughput as ``codesign predict --runtime`` prints them (`intervals`); empty under
    ``ideal``."""
    profile = runtime_profile(selection.runtime)
    if profile is None:
        return {}
    return intervals(prediction(selection), profile, build_platform(selection))


@st.cache_data(show_spinner=False, max_entries=256)
def sweep(selection: Selection, axis: str, values: tuple[float, ...]) -> pd.DataFrame:
    """`genz.grid.evaluate_grid` along one scenario axis, other axes from ``selection``.

    ``axis`` is an `evaluate_grid` keyword (``'batch'``, ``'input_tokens'``...).
    One row per value; times in seconds, sizes in bytes, plus ``fits`` and bounds.
    """
    axes: dict[str, Any] = {
        "batch": selection.batch,
        "input_tokens": selection.input_tokens,
        "output_tokens": selection.output_tokens,
        "weight_bits": selection.weight_bits,
        "activation_bits": selection.activation_bits,
        "kv_bits": selection.kv_bits,
        "tp": selection.tp,
        "pp": selection.pp,
        "ep": selection.ep,
        "dp": selection.dp,
        **{name: getattr(selection, name) for name in MODE_AXES},
    }
    axes[axis] = np.asarray(values, float)
    grid = evaluate_grid(
        build_model(selection),
        build_platform(selection),
        runtime=runtime_profile(selection.runtime),
        **axes,
    )
    frame = pd.DataFrame({axis: np.asarray(values, float)})
    for key, column in grid.to_dict().items():
        frame[key] = column
    return frame


def with_preset_platform(selection: Selection, hw: str) -> Selection:
    """The same model and scenario on another preset, unscaled."""
    return dataclasses.replace(
        selection,
        hw=hw,
        hw_yaml=None,
        compute_scale=1.0,
        bw_scale=1.0,
        capacity_scale=1.0,
        link_bw_scale=1.0,
    )


def with_preset_model(selection: Selection, model: str) -> Selection:
    """The same platform and scenario with another model preset."""
    return dataclasses.replace(selection, model=model, model_json=None)


def predict_command(selection: Selection, **replace: object) -> str:
    """The ``codesign predict`` call that prints the selection's numbers.

    ``replace`` swaps a scenario field for a placeholder in sweeps, e.g.
    ``batch='<batch>'``.
    """
    values = {**dataclasses.asdict(selection), **replace}
    model = UPLOADED_CONFIG_NAME if selection.model_json is not None else selection.model
    parts = [
        "codesign",
        "predict",
        "--model",
        model,
        "--hw",
        selection.hw,
        *_scale_flags(selection),
    ]
    for flag, key in (
        ("--batch", "batch"),
        ("--input", "input_tokens"),
        ("--output", "output_tokens"),
        ("--wbits", "weight_bits"),
        ("--abits", "activation_bits"),
        ("--kvbits", "kv_bits"),
        ("--tp", "tp"),
        ("--pp", "pp"),
        ("--ep", "ep"),
        ("--dp", "dp"),
    ):
        parts += [flag, _number(values[key])]
    for name in MODE_AXES:  # decoding mode, images, offload: only when not the default
        if values[name] != AXES[name].default:
            parts += [AXES[name].flag, _number(values[name])]
    for name, axis in ARCHITECTURE_AXES.items():
        if values[name] is not None:
            parts += [axis.flag, _number(values[name])]
    parts += lora_flags(selection)
    parts += runtime_flags(selection)
    return " ".join(part if part.startswith("<") else shlex.quote(part) for part in parts)


def runtime_flags(selection: Selection) -> list[str]:
    """``--runtime NAME`` of a selection's serving stack; none for ``ideal``."""
    return [] if selection.runtime == "ideal" else ["--runtime", selection.runtime]


def hw_show_command(selection: Selection) -> str:
    """The ``codesign hw show`` call that prints the (scaled) platform and ridge points."""
    return " ".join(
        shlex.quote(p) for p in ["codesign", "hw", "show", selection.hw, *_scale_flags(selection)]
    )


def _scale_flags(selection: Selection) -> list[str]:
    flags = []
    for flag, value in (
        ("--compute-scale", selection.compute_scale),
        ("--bw-scale", selection.bw_scale),
        ("--capacity-scale", selection.capacity_scale),
        ("--link-bw-scale", selection.link_bw_scale),
    ):
        if value != 1.0:
            flags += [flag, _number(value)]
    return flags


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
