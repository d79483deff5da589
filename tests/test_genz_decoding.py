"""Parallel sampling and beam search: sequences sharing one prompt's prefill and KV."""

from __future__ import annotations

import subprocess
import sys

import pytest

from genz import Scenario, load_model, predict
from roofline import InputError, load_platform

MODEL = "llama-3.1-8b"


def _predict(**fields):
    return predict(
        load_model(MODEL),
        load_platform("h100-sxm"),
        Scenario(batch=1, input_tokens=1024, output_tokens=128, **fields),
    )


def test_samples_share_the_prompt_kv():
    # 4 samples: the 1024 prompt tokens once and 4 x 128 generated tokens = 1536 tokens per
    # layer, x 32 layers x (2 x 8 x 128) elements x 2 B = 201,326,592 B (one sequence: 1152).
    four = _predict(parallel_samples=4)
    one = _predict()
    per_token = 32 * 2 * 8 * 128 * 2
    assert four.footprint.kv_cache_bytes == 1536 * per_token == 201_326_592
    assert one.footprint.kv_cache_bytes == 1152 * per_token


def test_samples_prefill_once_and_decode_as_a_batch():
    four, one = _predict(parallel_samples=4), _predict()
    assert four.ttft_s == one.ttft_s  # the prompt is prefilled once
    cost = four.decode.pass_cost
    flop = dict(zip(cost.names, cost.first_scenario(cost.flop), strict=True))
    # qkv_proj of 4 decode sequences: 2 x 4 tokens x 4096 x (32 + 2 x 8) x 128, x 32 layers.
    assert flop["qkv_proj"] == pytest.approx(32 * 2 * 4 * 4096 * 48 * 128)
    # every sample is returned: 4 x 128 output tokens per request.
    assert four.throughput_tokens_per_s == pytest.approx(4 * 128 / four.e2e_s)
    assert four.decode_tokens_per_s == pytest.approx(4 / four.tpot_s)


def test_beams_cost_as_samples_but_return_one_sequence():
    beams, samples = _predict(beam_width=4), _predict(parallel_samples=4)
    assert beams.tpot_s == samples.tpot_s
    assert beams.footprint.kv_cache_bytes == samples.footprint.kv_cache_bytes
    assert beams.throughput_tokens_per_s == pytest.approx(128 / beams.e2e_s)


def test_bad_decoding_input_is_one_line():
    with pytest.raises(InputError, match="cannot both exceed 1"):
        Scenario(parallel_samples=2, beam_width=2)
    with pytest.raises(InputError, match=r"beam_width must be an integer in \[1, 1024\]"):
        Scenario(beam_width=0)
    run = [sys.executable, "-m", "app.cli", "predict", "--model", MODEL, "--hw", "h100-sxm"]
    bad = subprocess.run([*run, "--parallel-samples", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "--parallel-samples must be an integer in [1, 1024]" in bad.stderr
