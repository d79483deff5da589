"""Weights and KV cache offloaded to host memory, streamed over the host link each pass.

FlexGen / accelerate-style offload: a fraction ``f_w`` of the weights and ``f_kv`` of
the KV cache live in the platform's host memory (`roofline.HostMemory`) and cross its
link into device memory every time a pass needs them:

- prefill: ``chunks * f_w * W`` weight bytes plus ``f_kv * KV(prompt)`` written back;
- decode step: ``f_w * W`` plus ``f_kv * KV(mean context)`` read (and the new token's
  KV, negligible);
- a pass takes ``max(device time, link bytes / link bandwidth)``: the transfer of layer
  ``l + 1`` overlaps the compute of layer ``l`` (perfect prefetch; a serial offload
  would add the two), and is link-bound when the link term is larger;
- device memory holds ``(1 - f_w) W + (1 - f_kv) KV``; host memory the rest, which must
  fit its capacity.

llama.cpp's ``-ngl`` partial offload is a different mechanism (host layers are computed
by the CPU at host-memory bandwidth, nothing is streamed); it is not modelled here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline import HostMemory, InputError, Platform

from .inputs import GridInputs, scenario_inputs
from .memory import kv_cache_bytes_per_device
from .model import ModelConfig
from .op_terms import Array
from .scenario import Scenario


@dataclass(frozen=True)
class OffloadTerms:
    """Per-device bytes left on the device, bytes in host memory, and the host-link time
    of each phase (prefill: whole prompt; decode: one step), seconds; floats for one
    scenario, arrays of the grid's shape from `offload_arrays`."""

    device_weights_bytes: Array | float
    device_kv_bytes: Array | float
    host_bytes: Array | float
    prefill_link_s: Array | float
    decode_link_s: Array | float


def require_host(platform: Platform) -> HostMemory:
    """The platform's host memory and link; `InputError` naming the flags without one."""
    if platform.host is None:
        raise InputError(
            f"--weight-offload / --kv-offload need a host memory link: {platform.name} has no "
            "'host' section (add one to the hardware file)"
        )
    return platform.host


def offload_arrays(
    model: ModelConfig,
    host: HostMemory,
    inputs: GridInputs,
    weight_offload: Array | float,
    kv_offload: Array | float,
    weights_bytes: Array | float,
    kv_bytes: Array | float,
) -> OffloadTerms:
    """Split of ``weights_bytes`` and ``kv_bytes`` (final context) between device and host
    and the link time per phase (module doc) for every scenario of ``inputs``."""
    f_w, f_kv = weight_offload, kv_offload
    mean_kv = kv_cache_bytes_per_device(
        model,
        inputs.batch,
        inputs.input_tokens + inputs.output_tokens / 2,
        inputs.kv_bits,
        inputs.tp,
        inputs.ep,
        inputs.pp,
        sequences_per_request=inputs.sequences_per_request,
        output_tokens=inputs.output_tokens / 2,
    )
    prompt_kv = kv_cache_bytes_per_device(
        model, inputs.batch, inputs.input_tokens, inputs.kv_bits, inputs.tp, inputs.ep, inputs.pp
    )
    chunks = np.ceil(inputs.input_tokens / inputs.chunk)
    bandwidth = host.link_bandwidth_bytes_per_s
    return OffloadTerms(
        device_weights_bytes=(1 - f_w) * weights_bytes,
        device_kv_bytes=(1 - f_kv) * kv_bytes,
        host_bytes=f_w * weights_bytes + f_kv * kv_bytes,
        prefill_link_s=(chunks * f_w * weights_bytes + f_kv * prompt_kv) / bandwidth,
        decode_link_s=(f_w * weights_bytes + f_kv * mean_kv) / bandwidth,
    )


def offload_terms(
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    weights_bytes: float,
    kv_bytes: float,
) -> OffloadTerms:
    """`offload_arrays` of one scenario, as floats; `InputError` (naming the flag the CLI
    uses) without a host link or when the host share exceeds host memory."""
    host = require_host(platform)
    terms = offload_arrays(
        model,
        host,
        scenario_inputs(scenario),
        scenario.weight_offload,
        scenario.kv_offload,
        weights_bytes,
        kv_bytes,
    )
    one = OffloadTerms(*(float(np.asarray(value).ravel()[0]) for value in vars(terms).values()))
    if one.host_bytes > host.capacity_bytes:
        raise InputError(
            f"offload needs {one.host_bytes / 1e9:.3g} GB (decimal) of host memory, "
            f"{platform.name}'s {host.name} holds {host.capacity_bytes / 1e9:.3g} GB"
        )
    return one
