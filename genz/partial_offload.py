"""llama.cpp ``-ngl`` partial offload: ``n`` of the model's ``L`` layers on the device,
the other ``L - n`` computed by the host CPU from host memory.

Unlike FlexGen-style offload (`genz.offload`, weights streamed to the device each
pass), nothing is streamed: each layer runs where its weights and KV cache live, and
the layers run one after the other, so a pass takes

    t = t_model(device) + n / L * t_layers(device) + (L - n) / L * t_layers(host)
        + hand-off

- ``t_layers`` is the time of every per-layer operator of the pass (attention or SSM,
  FFN or MoE, their norms and collectives) of the whole model on that platform, and
  ``t_model`` the per-model operators (embedding, final norm, LM head), which stay on
  the device once any layer is (llama.cpp's output layer; with ``n = 0`` everything,
  per-model operators and activations included, runs on the host);
  layers are taken as equal (exact for uniform stacks; a hybrid's mix is averaged).
- the hand-off: one crossing of the pass's activations, ``tokens x hidden x
  activation bits / 8`` bytes, over the device's host link (none when ``n`` is 0 or
  ``L``; not charged when the device has no ``host`` section, and the result says so).
- device memory holds the per-model weights plus ``n / L`` of the layer weights and of
  the KV cache; host memory the rest, checked against the host platform's capacity.

The host is a `roofline.Platform` of its own (a CPU preset such as ``xeon-8480``): its
compute peaks, memory bandwidth and efficiencies cost the host layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline import InputError, Platform

from .costing import PassCost
from .model import ModelConfig
from .params import parameter_count
from .predictor import predict
from .result import Prediction, end_to_end_s
from .runtime import RuntimeProfile
from .scenario import Scenario


@dataclass(frozen=True)
class PartialOffload:
    """One scenario with ``gpu_layers`` layers on the device and the rest on the host
    (seconds, bytes decimal, per replica). ``device`` and ``host`` are the whole-model
    predictions on each platform the split is taken from."""

    gpu_layers: int
    cpu_layers: int
    ttft_s: float
    tpot_s: float
    e2e_s: float
    decode_tokens_per_s: float
    prefill_tokens_per_s: float
    device_prefill_s: float
    host_prefill_s: float
    device_decode_s: float
    host_decode_s: float
    handoff_charged: bool
    device_bytes: float
    host_bytes: float
    device_fits: bool
    host_fits: bool
    device: Prediction
    host: Prediction

    def to_dict(self) -> dict[str, object]:
        """The scalar fields (SI units), without the two underlying predictions."""
        return {
            name: getattr(self, name)
            for name in self.__dataclass_fields__
            if name not in ("device", "host")
        }


def _split(cost: PassCost) -> tuple[float, float]:
    """(per-model, per-layer) seconds of a pass's first scenario."""
    times = np.asarray(cost.first_scenario(cost.time_s), float)
    model_level = np.array([block == "model" for block in cost.blocks])
    return float(times[model_level].sum()), float(times[~model_level].sum())


def predict_partial_offload(
    model: ModelConfig,
    device: Platform,
    host: Platform,
    scenario: Scenario,
    gpu_layers: int,
    *,
    runtime: RuntimeProfile | None = None,
    host_runtime: RuntimeProfile | None = None,
) -> PartialOffload:
    """``scenario`` with ``gpu_layers`` of the model's layers on ``device`` and the rest
    on ``host`` (module doc). ``runtime`` / ``host_runtime`` are the serving-stack
    profiles of each side (None: physics only)."""
    layers = model.num_layers
    if isinstance(gpu_layers, bool) or not isinstance(gpu_layers, int):
        raise InputError(f"--gpu-layers must be an integer in [0, {layers}], got {gpu_layers!r}")
    if not 0 <= gpu_layers <= layers:
        raise InputError(
            f"--gpu-layers must be an integer in [0, {layers}] (layers of {model.name}), "
            f"got {gpu_layers}"
        )
    if scenario.weight_offload or scenario.kv_offload:
        raise InputError("--gpu-layers cannot be combined with --weight-offload / --kv-offload")
    if scenario.parallelism.devices_per_replica != 1:
        raise InputError("--gpu-layers models one device and its host: use tp = pp = ep = 1")
    on_device = predict(model, device, scenario, runtime=runtime)
    on_host = predict(model, host, scenario, runtime=host_runtime)
    share = gpu_layers / layers
    handoff = 0 < gpu_layers < layers and device.host is not None
    phases = {}
    for phase, tokens in (
        ("prefill", scenario.batch * scenario.input_tokens),
        ("decode", scenario.batch * scenario.sequences_per_request),
    ):
        device_model_s, device_layers_s = _split(getattr(on_device, phase).pass_cost)
        host_model_s, host_layers_s = _split(getattr(on_host, phase).pass_cost)
        model_s = device_model_s if gpu_layers else host_model_s
        crossing = tokens * model.hidden_size * scenario.precision.activation_bits / 8
        link_s = crossing / device.host.link_bandwidth_bytes_per_s if handoff else 0.0  # type: ignore[union-attr]
        device_s = share * device_layers_s + link_s + (model_s if gpu_layers else 0.0)
        host_s = (1 - share) * host_layers_s + (0.0 if gpu_layers else model_s)
        phases[phase] = (device_s, host_s)
    footprint = on_device.footprint
    params = parameter_count(model)
    model_weights = footprint.weights_bytes * params.embedding / params.total
    layer_weights = footprint.weights_bytes - model_weights
    on_gpu = model_weights + footprint.activation_bytes if gpu_layers else 0.0
    device_bytes = on_gpu + share * (layer_weights + footprint.kv_cache_bytes)
    host_bytes = (1 - share) * (layer_weights + footprint.kv_cache_bytes) + (
        0.0 if gpu_layers else model_weights + footprint.activation_bytes
    )
    ttft = sum(phases["prefill"])
    tpot = sum(phases["decode"])
    return PartialOffload(
        gpu_layers=gpu_layers,
        cpu_layers=layers - gpu_layers,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=float(end_to_end_s(ttft, tpot, scenario.output_tokens)),
        decode_tokens_per_s=scenario.batch * scenario.sequences_per_request / tpot,
        prefill_tokens_per_s=scenario.batch * scenario.input_tokens / ttft,
        device_prefill_s=phases["prefill"][0],
        host_prefill_s=phases["prefill"][1],
        device_decode_s=phases["decode"][0],
        host_decode_s=phases["decode"][1],
        handoff_charged=handoff,
        device_bytes=device_bytes,
        host_bytes=host_bytes,
        device_fits=device_bytes <= device.main_memory.capacity_bytes,
        host_fits=host_bytes <= host.main_memory.capacity_bytes,
        device=on_device,
        host=on_host,
    )
