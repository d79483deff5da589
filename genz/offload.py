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

import math
from dataclasses import dataclass

import numpy as np

from roofline import InputError, Platform

from .memory import kv_cache_bytes_per_device
from .model import ModelConfig
from .scenario import Scenario


@dataclass(frozen=True)
class OffloadTerms:
    """Per-device bytes left on the device, bytes in host memory, and the host-link time
    of each phase (prefill: whole prompt; decode: one step), seconds."""

    device_weights_bytes: float
    device_kv_bytes: float
    host_bytes: float
    prefill_link_s: float
    decode_link_s: float


def offload_terms(
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    weights_bytes: float,
    kv_bytes: float,
) -> OffloadTerms:
    """Split of ``weights_bytes`` and ``kv_bytes`` (final context) between device and host
    and the link time per phase (module doc); errors name the flag the CLI uses."""
    f_w, f_kv = scenario.weight_offload, scenario.kv_offload
    host = platform.host
    if host is None:
        raise InputError(
            f"--weight-offload / --kv-offload need a host memory link: {platform.name} has no "
            "'host' section (add one to the hardware file)"
        )
    mesh = scenario.parallelism
    one = np.ones(1)
    mean_kv = float(
        kv_cache_bytes_per_device(
            model,
            one * scenario.batch,
            one * (scenario.input_tokens + scenario.output_tokens / 2),
            one * scenario.precision.kv_bits,
            one * mesh.tp,
            one * mesh.ep,
            one * mesh.pp,
            sequences_per_request=float(scenario.sequences_per_request),
            output_tokens=scenario.output_tokens / 2,
        )[0]
    )
    prompt_kv = float(
        kv_cache_bytes_per_device(
            model,
            one * scenario.batch,
            one * scenario.input_tokens,
            one * scenario.precision.kv_bits,
            one * mesh.tp,
            one * mesh.ep,
            one * mesh.pp,
        )[0]
    )
    chunks = math.ceil(scenario.input_tokens / (scenario.prefill_chunk or scenario.input_tokens))
    bandwidth = host.link_bandwidth_bytes_per_s
    host_bytes = f_w * weights_bytes + f_kv * kv_bytes
    if host_bytes > host.capacity_bytes:
        raise InputError(
            f"offload needs {host_bytes / 1e9:.3g} GB (decimal) of host memory, "
            f"{platform.name}'s {host.name} holds {host.capacity_bytes / 1e9:.3g} GB"
        )
    return OffloadTerms(
        device_weights_bytes=(1 - f_w) * weights_bytes,
        device_kv_bytes=(1 - f_kv) * kv_bytes,
        host_bytes=host_bytes,
        prefill_link_s=(chunks * f_w * weights_bytes + f_kv * prompt_kv) / bandwidth,
        decode_link_s=(f_w * weights_bytes + f_kv * mean_kv) / bandwidth,
    )
