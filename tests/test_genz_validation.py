"""Predictions against published measurements (data/validation/measurements.csv).

Tolerances are stated per row; benchmarks/validate.py reports every row.
"""

import pytest

from genz.hf_config import load_model
from genz.predictor import predict
from genz.scenario import Precision, Scenario
from roofline import load_platform


def test_rtx4090_llama3_8b_f16_decode():
    # XiongjieDai/GPU-Benchmarks-on-LLM-Inference README (llama.cpp tg512): 54.84 tok/s.
    result = predict(
        load_model("llama-3-8b"),
        load_platform("rtx-4090"),
        Scenario(input_tokens=1, output_tokens=512),
    )
    assert 1 / result.tpot_s == pytest.approx(54.84, rel=0.15)


def test_m2_ultra_llama3_70b_f16_decode():
    # Same source, Apple M2 Ultra 76-core GPU, F16 tg512: 4.76 tok/s.
    result = predict(
        load_model("llama-3-70b"),
        load_platform("apple-m2-ultra"),
        Scenario(input_tokens=1, output_tokens=512),
    )
    assert 1 / result.tpot_s == pytest.approx(4.76, rel=0.15)


def test_a100_trtllm_static_batch_throughput():
    # NVIDIA/TensorRT-LLM docs/source/performance.md: A100 Llama-2-7B FP16, batch 384,
    # 128 in / 128 out: 5586 output tok/s.
    scenario = Scenario(batch=384, input_tokens=128, output_tokens=128)
    result = predict(load_model("llama-2-7b"), load_platform("a100-sxm-80gb"), scenario)
    assert result.throughput_tokens_per_s == pytest.approx(5586, rel=0.15)


def test_h100_fp8_long_output_throughput():
    # Same source: H100 SXM Llama-2-7B FP8, batch 112, 128 in / 2048 out: 6818 output tok/s.
    precision = Precision(weight_bits=8, activation_bits=8, kv_bits=8)
    scenario = Scenario(batch=112, input_tokens=128, output_tokens=2048, precision=precision)
    result = predict(load_model("llama-2-7b"), load_platform("h100-sxm"), scenario)
    assert result.throughput_tokens_per_s == pytest.approx(6818, rel=0.15)
