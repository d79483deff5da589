"""OI/CF report: closed-form intensities, MLA vs GQA footprint, the capacity wall, use cases."""

import json

import numpy as np
import pytest

from genz.model import load_model
from genz.predictor import predict
from genz.scaled_models import model_from_spec, with_gqa
from genz.scenario import Precision, Scenario
from genz.use_cases import load_use_cases, use_case
from roofline import InputError, derive_platform, load_platform
from search.sizing.oicf import oicf_report


@pytest.fixture(scope="module")
def h100():
    return load_platform("h100-sxm")


@pytest.fixture(scope="module")
def llama70b():
    return load_model("llama-3.1-70b")


def test_agentic_use_cases_are_shipped():
    cases = load_use_cases()
    for name in ("chat", "coding-agent", "reasoning", "web-use", "computer-use"):
        assert cases[name].input_tokens > 0 and cases[name].output_tokens > 0
        assert cases[name].source
    # Computer use: ~20 screenshots of ~1.4k tokens each dominate the prompt.
    assert cases["computer-use"].input_tokens >= 20 * 1365


def test_batch1_decode_oi_is_two_flop_per_weight_byte(h100, llama70b):
    report = oicf_report(
        [llama70b], [use_case("chat")], h100, bits=((16.0, 16.0), (8.0, 8.0), (4.0, 4.0))
    )
    by_bits = {row.weight_bits: row for row in report.rows}
    # Each weight is read once per step and used in one multiply-add (2 FLOP):
    # OI ~ 2 / (bits / 8); the short chat context adds little KV traffic.
    for bits, row in by_bits.items():
        assert row.decode_oi == pytest.approx(2 / (bits / 8), rel=0.05)
        assert row.decode_memory_bound
    # 1024-token prefill runs far above the H100 ridge (~260 FLOP/B derated).
    assert by_bits[16.0].prefill_oi > by_bits[16.0].ridge_flop_per_byte


def test_mla_lowers_decode_cf_versus_gqa_of_the_same_size(h100):
    mla = load_model("deepseek-v3")
    gqa = with_gqa(mla)
    report = oicf_report([mla, gqa], [use_case("coding-agent")], h100, bits=((4.0, 4.0),), batch=8)
    mla_row, gqa_row = report.rows
    assert mla_row.attention == "MLA" and gqa_row.attention == "GQA"
    assert mla_row.params_total == pytest.approx(gqa_row.params_total, rel=0.01)
    # Latent 512 + 64 RoPE per token per layer against 2 x 8 heads x 128.
    assert mla_row.kv_bytes_per_request / gqa_row.kv_bytes_per_request == pytest.approx(576 / 2048)
    saved_kv = 8 * (gqa_row.kv_bytes_per_request - mla_row.kv_bytes_per_request)
    extra_weights = gqa_row.weights_bytes - mla_row.weights_bytes
    assert saved_kv > 5 * extra_weights > 0
    assert gqa_row.decode_cf_bytes - mla_row.decode_cf_bytes == pytest.approx(
        saved_kv + extra_weights
    )
    assert mla_row.max_batch > gqa_row.max_batch


def test_capacity_wall_is_the_largest_batch_that_fits(h100, llama70b):
    report = oicf_report([llama70b], [use_case("coding-agent")], h100, bits=((16.0, 16.0),))
    row = report.rows[0]
    assert row.capacity_bytes == 8 * 80e9
    # KV per request: 80 layers x (K + V) x 8 heads x 128 x 2 bytes x (49152 + 1024) tokens.
    assert row.kv_bytes_per_request == 80 * 2 * 8 * 128 * 2 * 50176
    fixed = row.weights_bytes + row.activation_bytes  # one prompt's prefill working set
    assert fixed + row.max_batch * row.kv_bytes_per_request <= row.capacity_bytes
    assert fixed + (row.max_batch + 1) * row.kv_bytes_per_request > row.capacity_bytes
    assert row.decode_cf_bytes == row.weights_bytes + row.kv_bytes_per_request
    # Long agentic contexts: decode stays memory-bound at every batch that fits.
    assert row.memory_bound_up_to_wall
    assert row.decode_oi_at_max_batch < row.ridge_flop_per_byte


def test_weights_past_the_wall_and_the_compute_bound_crossover(h100, llama70b):
    deepseek = load_model("deepseek-v3")
    report = oicf_report([deepseek], [use_case("chat")], h100, bits=((16.0, 16.0),))
    # 671B x 2 bytes = 1.34 TB > 8 x 80 GB.
    assert report.rows[0].max_batch == 0 and report.rows[0].past_capacity_wall
    short = oicf_report([llama70b], [use_case("chat")], h100, bits=((4.0, 4.0),)).rows[0]
    crossover = short.compute_bound_batch
    assert crossover is not None and crossover <= short.max_batch
    assert not short.memory_bound_up_to_wall
    huge = derive_platform(h100, memory_capacity_scale=1e6)
    for batch, above in ((crossover, True), (crossover // 2, False)):
        scenario = Scenario(batch, 1024, 256, precision=Precision(weight_bits=4, kv_bits=4))
        prediction = predict(llama70b, huge, scenario)
        assert (prediction.decode.operational_intensity >= short.ridge_flop_per_byte) == above


def test_disaggregated_needs_are_phase_work_over_the_slo(h100, llama70b):
    report = oicf_report([llama70b], [use_case("chat")], h100, bits=((8.0, 8.0),))
    need = report.disaggregated[0]
    huge = derive_platform(h100, memory_capacity_scale=1e6)
    precision = Precision(weight_bits=8, kv_bits=8)
    one = predict(llama70b, huge, Scenario(1, 1024, 256, precision=precision))
    many = predict(llama70b, huge, Scenario(32, 1024, 256, precision=precision))
    # Default SLO: TTFT 2 s, TPOT 50 ms; H100 efficiencies 0.7 compute, 0.8 memory.
    assert need.prefill_flops_per_s == pytest.approx(one.prefill.flop / (2.0 * 0.7))
    assert need.decode_bytes_per_s == pytest.approx(many.decode.bytes / (0.05 * 0.8))
    assert need.decode_capacity_bytes > need.prefill_capacity_bytes


def test_model_specs_and_bad_input(h100):
    assert model_from_spec("llama-3.1-8b+mla").attention_type == "MLA"
    with pytest.raises(InputError, match="unknown model variant"):
        model_from_spec("llama-3.1-8b+xyz")
    with pytest.raises(InputError, match="batch must be"):
        oicf_report([load_model("llama-3.1-8b")], [use_case("chat")], h100, batch=0)


def test_cli_oicf_and_requirements(capsys):
    from app.cli import main  # imported here: the CLI pulls in every command module

    argv = ["oicf", "--hw", "h100-sxm", "--models", "llama-3.1-8b", "--use-cases", "chat"]
    assert main([*argv, "--bits", "16/16", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["rows"]) == 1 and len(payload["disaggregated"]) == 1
    argv = ["requirements", "--model", "llama-3.1-8b", "--base-hw", "h100-sxm"]
    assert main([*argv, "--use-case", "chat", "--max-tpot-ms", "10", "--method", "compute"]) == 0
    assert "compute" in capsys.readouterr().out
    assert main([*argv, "--max-ttft-s", "-2"]) == 2
    assert "--max-ttft-s must be a finite number > 0" in capsys.readouterr().err
    assert main([*argv, "--max-tpot-ms", "0.001"]) == 2
    assert "best achievable" in capsys.readouterr().err


def test_batch_grid_is_vectorised_consistently(h100, llama70b):
    report = oicf_report([llama70b], [use_case("reasoning")], h100, bits=((16.0, 16.0),), batch=4)
    row = report.rows[0]
    scalar = predict(
        llama70b,
        derive_platform(h100, memory_capacity_scale=1e6),
        Scenario(batch=4, input_tokens=1024, output_tokens=8192),
    )
    assert row.decode_oi == pytest.approx(scalar.decode.operational_intensity)
    assert row.prefill_oi == pytest.approx(scalar.prefill.operational_intensity)
    assert np.isfinite(row.decode_cf_bytes)
