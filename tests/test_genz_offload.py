"""Weights and KV cache offloaded to host memory over the host link: values by hand."""

from __future__ import annotations

import pytest

from genz import Scenario, load_model, predict
from roofline import Bound, InputError, load_platform

H100 = "h100-sxm"  # host: 256 GB DDR5 over PCIe Gen5 x16 at 63 GB/s


def test_half_the_70b_weights_stream_over_pcie_each_step():
    model, h100 = load_model("llama-3.1-70b"), load_platform(H100)
    p = predict(model, h100, Scenario(weight_offload=0.5))
    weights = 70_553_706_496 * 2  # parameters x 2 bytes
    # Device keeps half; each decode step streams the other half: 70.55 GB / 63 GB/s.
    assert p.footprint.weights_bytes == pytest.approx(weights / 2)
    assert p.tpot_s == pytest.approx(weights / 2 / 63e9)
    assert p.decode.bound == Bound.INTERCONNECT
    # One prefill pass (no chunking) streams the same half once.
    assert p.ttft_s == pytest.approx(max(weights / 2 / 63e9, p.prefill.pass_cost.total_s().item()))


def test_kv_offload_moves_the_cache_and_hides_under_compute_when_small():
    model, h100 = load_model("llama-3.1-8b"), load_platform(H100)
    base = predict(model, h100, Scenario())
    p = predict(model, h100, Scenario(kv_offload=1.0))
    assert p.footprint.kv_cache_bytes == 0.0
    # Link per step: KV at the mean context 1024 + 64 = 1088 tokens x 131,072 B = 142.6 MB
    # / 63 GB/s = 2.26 ms, below the 6.2 ms device step: the step time is unchanged.
    assert base.tpot_s > 1088 * 131_072 / 63e9
    assert p.tpot_s == base.tpot_s


def test_offload_errors_are_one_line():
    with pytest.raises(InputError, match=r"weight_offload must be a fraction in \[0, 1\]"):
        Scenario(weight_offload=1.5)
    with pytest.raises(InputError, match="rtx-4090 has no 'host' section"):
        predict(load_model("llama-3.2-1b"), load_platform("rtx-4090"), Scenario(kv_offload=0.5))
    # 405B at 16 bits is 812 GB: more than the 256 GB host share.
    with pytest.raises(InputError, match="offload needs 812 GB"):
        predict(load_model("llama-3.1-405b"), load_platform(H100), Scenario(weight_offload=1.0))
