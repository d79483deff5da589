"""Speculative decoding and disaggregated serving estimates."""

import itertools
import json
import re

import pytest

from app.cli import main
from genz.hf_config import load_model
from genz.predictor import predict
from genz.scenario import Scenario
from genz.serving import disaggregated_serving, pass_time, speculative_decoding
from roofline import InputError, load_platform


@pytest.fixture
def models():
    return load_model("llama-3.1-8b"), load_model("qwen2.5-0.5b")


#: Batch-1 decode on H100: 3.35 TB/s x 0.8 memory efficiency, 2 us per kernel launch, at
#: the mean decode context of `Scenario()`, 1024 + 128 / 2 = 1088 tokens.
H100_BYTES_PER_S = 3.35e12 * 0.8
LAUNCH_S = 2e-6
#: Llama 3.1 8B: every weight but the input embedding, (8.03e9 - 128256 x 4096) x 2 bytes,
#: plus 1088 x 32 layers x (2 x 8 heads x 128) x 2 bytes of KV; 8 kernels x 32 layers + 3.
TARGET_BYTES = (8.03e9 - 128256 * 4096) * 2 + 1088 * 32 * 2 * 8 * 128 * 2
TARGET_STEP_S = TARGET_BYTES / H100_BYTES_PER_S + (8 * 32 + 3) * LAUNCH_S
#: Qwen2.5-0.5B: 0.36e9 non-embedding parameters plus its tied 151936 x 896 embedding
#: read once as the LM head, x 2 bytes; 1088 x 24 layers x (2 x 2 heads x 64) x 2 bytes
#: of KV; 8 kernels x 24 layers + 3.
DRAFT_BYTES = (0.358e9 + 151936 * 896) * 2 + 1088 * 24 * 2 * 2 * 64 * 2
DRAFT_STEP_S = DRAFT_BYTES / H100_BYTES_PER_S + (8 * 24 + 3) * LAUNCH_S


def test_speculation_matches_leviathan_speedup_from_byte_counts(models):
    target, draft = models
    h100 = load_platform("h100-sxm")
    estimate = speculative_decoding(
        target, draft, h100, Scenario(), draft_tokens=4, acceptance_rate=0.8
    )
    # Leviathan et al. 2023, Eq. 1: expected tokens per iteration (1 - a^(k+1)) / (1 - a).
    assert estimate.expected_tokens_per_iteration == pytest.approx((1 - 0.8**5) / 0.2)
    assert estimate.target_step_s == pytest.approx(TARGET_STEP_S, rel=0.01)
    assert estimate.draft_step_s == pytest.approx(DRAFT_STEP_S, rel=0.01)
    # Their Theorem 3.8: speed-up (1 - a^(k+1)) / ((1 - a)(k c + 1)) with c the draft/target
    # step ratio, when the verify pass costs one target step; 5 query tokens re-read the
    # same weights, so it does here to within the 2 % tolerance.
    c = DRAFT_STEP_S / TARGET_STEP_S
    expected = (1 - 0.8**5) / ((1 - 0.8) * (4 * c + 1))
    assert estimate.speedup == pytest.approx(expected, rel=0.02)
    assert estimate.tpot_s == pytest.approx(TARGET_STEP_S / expected, rel=0.02)


def test_speedup_grows_with_acceptance(models):
    target, draft = models
    h100 = load_platform("h100-sxm")
    speedups = [
        speculative_decoding(target, draft, h100, Scenario(), 4, rate).speedup
        for rate in (0.0, 0.2, 0.4, 0.6, 0.8, 0.95)
    ]
    assert all(low < high for low, high in itertools.pairwise(speedups))


def test_zero_acceptance_slows_decoding_and_high_acceptance_speeds_it(models):
    target, draft = models
    h100 = load_platform("h100-sxm")
    assert speculative_decoding(target, draft, h100, Scenario(), 4, 0.0).speedup < 1
    assert speculative_decoding(target, draft, h100, Scenario(), 4, 0.9).speedup > 1.5


def test_verify_pass_of_memory_bound_decode_costs_about_one_step(models):
    target, _ = models
    h100 = load_platform("h100-sxm")
    one = pass_time(target, h100, Scenario(), 1, 1024)
    five = pass_time(target, h100, Scenario(), 5, 1024)
    # Batch-1 decode is weight-bandwidth bound: 5 query tokens re-use the same weight stream.
    assert one < five < 1.2 * one


def test_disaggregated_transfer_bytes_and_e2e(models):
    target, _ = models
    scenario = Scenario(batch=2, input_tokens=4096, output_tokens=64)
    estimate = disaggregated_serving(
        target,
        load_platform("h100-sxm"),
        load_platform("h200-sxm"),
        scenario,
        link_bandwidth_bytes_per_s=50e9,
    )
    # 2 requests x 4096 tokens x 32 layers x (2 x 8 KV heads x 128) x 2 bytes.
    assert estimate.kv_transfer_bytes == pytest.approx(2 * 4096 * 32 * 2048 * 2)
    # The first token comes from the prefill platform, the rest from the decode platform.
    assert estimate.ttft_s == predict(target, load_platform("h100-sxm"), scenario).ttft_s
    assert estimate.tpot_s == predict(target, load_platform("h200-sxm"), scenario).tpot_s
    # 67.1 MB over 50 GB/s plus the default 10 us link latency.
    assert estimate.kv_transfer_s == pytest.approx(2 * 4096 * 32 * 2048 * 2 / 50e9 + 10e-6)


def test_disaggregation_on_one_platform_only_adds_the_transfer(models):
    target, _ = models
    h100 = load_platform("h100-sxm")
    scenario = Scenario(batch=2, input_tokens=4096, output_tokens=64)
    fast = disaggregated_serving(target, h100, h100, scenario, link_bandwidth_bytes_per_s=50e9)
    slow = disaggregated_serving(target, h100, h100, scenario, link_bandwidth_bytes_per_s=25e9)
    # Same device both sides: the end-to-end latency is the colocated one (from `predict`)
    # plus the KV transfer, and halving the link adds the transfer time once more.
    kv_s = 2 * 4096 * 32 * 2048 * 2 / 50e9
    assert fast.e2e_s == pytest.approx(fast.colocated_prefill_platform_e2e_s + kv_s + 10e-6)
    assert fast.colocated_decode_platform_e2e_s == fast.colocated_prefill_platform_e2e_s
    assert slow.e2e_s - fast.e2e_s == pytest.approx(kv_s, rel=1e-9)


def test_bad_speculation_inputs(models):
    target, draft = models
    with pytest.raises(InputError, match=r"acceptance_rate must be in \[0, 1\)"):
        speculative_decoding(target, draft, load_platform("h100-sxm"), Scenario(), 4, 1.0)
    with pytest.raises(InputError, match="draft_tokens must be an integer"):
        speculative_decoding(target, draft, load_platform("h100-sxm"), Scenario(), 0, 0.5)


def test_cli_speculate_and_disagg(capsys, models):
    target, draft = models
    speculate = ["speculate", "--model", "llama-3.1-8b", "--draft", "qwen2.5-0.5b"]
    assert main([*speculate, "--hw", "h100-sxm", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    # CLI defaults: k = 4, acceptance 0.7, 1024 prompt and 128 generated tokens.
    assert payload["expected_tokens_per_iteration"] == pytest.approx((1 - 0.7**5) / 0.3, abs=1e-4)
    assert payload["target_step_s"] == pytest.approx(TARGET_STEP_S, rel=0.01)
    library = speculative_decoding(target, draft, load_platform("h100-sxm"), Scenario(), 4, 0.7)
    assert payload["speedup"] == pytest.approx(library.speedup, rel=1e-12)
    assert main([*speculate, "--hw", "h100-sxm"]) == 0
    assert re.search(rf"speed-up\s+{library.speedup:.2f}x", capsys.readouterr().out)
    disagg = ["disagg", "--model", "llama-3.1-8b", "--prefill-hw", "h100-sxm"]
    assert main([*disagg, "--decode-hw", "h200-sxm", "--input", "8192"]) == 0
    # 8192 tokens x 32 layers x 2048 KV elements x 2 bytes = 1.07 GB over H100's 50 GB/s
    # scale-out link (the default) + 10 us: 21.5 ms.
    assert "KV transfer                  1.07 GB (decimal) in 21.5 ms" in (capsys.readouterr().out)
