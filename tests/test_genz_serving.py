"""Speculative decoding and disaggregated serving estimates."""

import pytest

from app.cli import main
from genz.model import load_model
from genz.scenario import Scenario
from genz.serving import disaggregated_serving, pass_time, speculative_decoding
from roofline import InputError, load_platform


@pytest.fixture
def models():
    return load_model("llama-3.1-8b"), load_model("qwen2.5-0.5b")


def test_expected_tokens_follow_leviathan_formula(models):
    target, draft = models
    h100 = load_platform("h100-sxm")
    estimate = speculative_decoding(
        target, draft, h100, Scenario(), draft_tokens=4, acceptance_rate=0.8
    )
    assert estimate.expected_tokens_per_iteration == pytest.approx((1 - 0.8**5) / 0.2)
    iteration = 4 * estimate.draft_step_s + estimate.verify_s
    assert estimate.tpot_s == pytest.approx(iteration / estimate.expected_tokens_per_iteration)


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
    assert estimate.e2e_s == pytest.approx(
        estimate.ttft_s + estimate.kv_transfer_s + 63 * estimate.tpot_s
    )


def test_bad_speculation_inputs(models):
    target, draft = models
    with pytest.raises(InputError, match=r"acceptance_rate must be in \[0, 1\)"):
        speculative_decoding(target, draft, load_platform("h100-sxm"), Scenario(), 4, 1.0)
    with pytest.raises(InputError, match="draft_tokens must be an integer"):
        speculative_decoding(target, draft, load_platform("h100-sxm"), Scenario(), 0, 0.5)


def test_cli_speculate_and_disagg(capsys):
    assert (
        main(
            ["speculate", "--model", "llama-3.1-8b", "--draft", "qwen2.5-0.5b", "--hw", "h100-sxm"]
        )
        == 0
    )
    assert "speed-up" in capsys.readouterr().out
    assert (
        main(
            [
                "disagg",
                "--model",
                "llama-3.1-8b",
                "--prefill-hw",
                "h100-sxm",
                "--decode-hw",
                "h200-sxm",
                "--input",
                "8192",
            ]
        )
        == 0
    )
    assert "KV transfer" in capsys.readouterr().out
