"""Multi-LoRA serving (S-LoRA / Punica): adapter FLOP, bytes and memory by hand."""

from __future__ import annotations

import pytest

from genz import Scenario, load_model, predict, with_lora
from genz.params import lora_params
from roofline import InputError, load_platform


def _lora_8b():
    return with_lora(load_model("llama-3.1-8b"), 16, adapters=8, targets=("qkv", "o"))


def test_adapter_parameters_and_memory():
    # Per layer: qkv 16 x (4096 + 6144) = 163,840; o 16 x (4096 + 4096) = 131,072;
    # x 32 layers = 9,437,184 per adapter, x 8 adapters = 75,497,472.
    model = _lora_8b()
    assert sum(lora_params(model).values()) == 75_497_472
    h100 = load_platform("h100-sxm")
    base = predict(load_model("llama-3.1-8b"), h100, Scenario(batch=32))
    served = predict(model, h100, Scenario(batch=32))
    extra = served.footprint.weights_bytes - base.footprint.weights_bytes
    assert extra == pytest.approx(75_497_472 * 2)  # 16-bit adapters


def test_adapter_flop_and_bytes_per_decode_step():
    model = _lora_8b()
    p = predict(model, load_platform("h100-sxm"), Scenario(batch=32))
    cost = p.decode.pass_cost
    flop = dict(zip(cost.names, cost.first_scenario(cost.flop), strict=True))
    moved = dict(zip(cost.names, cost.first_scenario(cost.bytes), strict=True))
    # 32 tokens: 2 x 32 x 16 x (4096 + 6144) per layer, 32 layers.
    assert flop["lora_qkv"] == pytest.approx(32 * 2 * 32 * 16 * 10240)
    # 32 requests over 8 adapters touch 8 (1 - (7/8)^32) = 7.889 of them: r x widths x 2 B
    # each, plus the tokens' input, output and rank-16 intermediate at 2 B.
    touched = 8 * (1 - (7 / 8) ** 32)
    per_layer = touched * 16 * 10240 * 2 + 32 * (10240 + 32) * 2
    assert moved["lora_qkv"] == pytest.approx(32 * per_layer)
    assert "lora_ffn" not in flop


def test_lora_errors_name_the_flag():
    model = load_model("llama-3.1-8b")
    with pytest.raises(InputError, match=r"--lora-rank must be an integer in \[1, 4096\]"):
        with_lora(model, 5000)
    with pytest.raises(InputError, match="--lora-targets: unknown target 'mlp'"):
        with_lora(model, 8, targets=("qkv", "mlp"))
    with pytest.raises(InputError, match="--lora-adapters must be >= 1"):
        with_lora(model, 8, adapters=0)
