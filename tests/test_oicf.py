"""OI/CF report: closed-form intensities, MLA vs GQA footprint, the capacity wall, use cases."""

import json

import pytest

from genz.hf_config import load_model
from genz.predictor import predict
from genz.scaled_models import model_from_spec, with_gqa
from genz.scenario import Precision, Scenario
from genz.use_cases import load_use_cases, use_case
from roofline import InputError, derive_platform
from search.sizing.oicf import oicf_report


@pytest.fixture(scope="module")
def llama70b():
    return load_model("llama-3.1-70b")


def test_agentic_use_cases_match_their_cited_shapes():
    cases = load_use_cases()
    for case in cases.values():
        assert case.source and case.description
    # Each shape against the figure its source states (data/use_cases.yaml):
    # ShareGPT-style chat: mean prompt ~1k, reply ~250 tokens.
    assert cases["chat"].input_tokens == pytest.approx(1000, rel=0.1)
    assert cases["chat"].output_tokens == pytest.approx(250, rel=0.1)
    # Coding agents keep 32k-64k tokens of context per step, with a shorter reply.
    assert 32_000 <= cases["coding-agent"].input_tokens <= 64_000
    assert cases["coding-agent"].output_tokens < cases["coding-agent"].input_tokens / 10
    # Reasoning: ~8k thinking tokens (DeepSeek-R1 on AIME-style tasks) on a short prompt.
    assert cases["reasoning"].output_tokens == pytest.approx(8000, rel=0.1)
    assert cases["reasoning"].input_tokens < cases["reasoning"].output_tokens / 4
    # Web use: ~2k system + ~8k accessibility tree + ~12k history = ~22k, rounded to 24k.
    assert cases["web-use"].input_tokens == pytest.approx(22_000, rel=0.15)
    # Computer use: 20 turns x (1,365 screenshot + ~150) + ~2.5k = ~33k, rounded to 32k.
    assert cases["computer-use"].input_tokens >= 20 * 1365
    assert cases["computer-use"].input_tokens == pytest.approx(20 * (1365 + 150) + 2500, rel=0.05)
    # RAG: 64 passages x 512 tokens of retrieved context.
    assert cases["long-context-rag"].input_tokens == 64 * 512


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
    assert row.capacity_bytes == 8 * h100.main_memory.capacity_bytes
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
    # Llama 3.1 70B: 70.55e9 parameters, of which the embedding and the LM head are
    # 128256 x 8192 = 1.05e9 each. One 1024-token prompt: 2 FLOP per weight per token for
    # all but those two (the LM head runs for the last token only) plus causal attention
    # 2 x 80 layers x 1024^2 x 8192: 1.416e14 FLOP, over TTFT 2 s at H100's 0.7 compute
    # efficiency: 1.01e14 FLOP/s.
    embedding = 128256 * 8192
    prefill_flop = 2 * (70.55e9 - 2 * embedding) * 1024 + 2 * 80 * 1024**2 * 8192
    assert need.prefill_flops_per_s == pytest.approx(prefill_flop / (2.0 * 0.7), rel=0.01)
    # 32 requests decoding: weights but the embedding at 1 byte (69.5 GB) plus the 8-bit KV
    # cache at the mean context 1024 + 256 / 2: 32 x 1152 x 80 x (2 x 8 x 128) bytes =
    # 6.0 GB, over TPOT 50 ms at 0.8 memory efficiency: 1.89e12 bytes/s. 3 %: the 32
    # tokens' activation vectors (~1.3 GB) are left out of the hand count.
    decode_bytes = (70.55e9 - embedding) * 1 + 32 * 1152 * 80 * 2 * 8 * 128
    assert need.decode_bytes_per_s == pytest.approx(decode_bytes / (0.05 * 0.8), rel=0.03)
    assert need.decode_bytes_per_s > decode_bytes / (0.05 * 0.8)
    # A decode accelerator holds 32 final-context KV caches; a prefill one only the prompt.
    kv_per_request = 80 * 2 * 8 * 128 * (1024 + 256)
    assert need.decode_capacity_bytes == pytest.approx(70.55e9 + 32 * kv_per_request, rel=1e-3)
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
    # Chat's final context 1024 + 256 tokens x 32 layers x (2 x 8 heads x 128) x 2 bytes.
    assert payload["rows"][0]["kv_bytes_per_request"] == 1280 * 32 * 2 * 8 * 128 * 2
    assert payload["rows"][0]["decode_oi"] == pytest.approx(1.0, rel=0.05)  # 2 FLOP / 2 bytes
    argv = ["requirements", "--model", "llama-3.1-8b", "--base-hw", "h100-sxm"]
    compute = [*argv, "--use-case", "chat", "--max-tpot-ms", "10", "--method", "compute"]
    assert main([*compute, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)["requirements"][0]
    # Least compute for TPOT 10 ms: a decode step's FLOP (2 per weight but the input
    # embedding, 2 x 7.505e9, plus attention 4 x 32 layers x 4096 x 1152 mean context)
    # over the 10 ms left after 259 kernel launches of 2 us, at 0.7 compute efficiency.
    decode_flop = 2 * (8.03e9 - 128256 * 4096) + 4 * 32 * 4096 * 1152
    peak = decode_flop / ((0.010 - 259 * 2e-6) * 0.7)
    assert answer["method"] == "compute" and answer["success"]
    assert answer["peak_flops_per_s"]["bf16"] == pytest.approx(peak, rel=0.01)
    assert main(compute) == 0
    assert f"{answer['peak_flops_per_s']['bf16'] / 1e12:.4g} TFLOP/s bf16" in (
        capsys.readouterr().out
    )
    assert main([*argv, "--max-ttft-s", "-2"]) == 2
    assert "--max-ttft-s must be a number of s in (0, " in capsys.readouterr().err
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
    # Decode CF: 16-bit weights (2 bytes per parameter) plus 4 KV caches at the final
    # context 1024 + 8192: 80 layers x (2 x 8 heads x 128) x 2 bytes x 9216 = 3.02 GB each.
    kv_per_request = 80 * 2 * 8 * 128 * 2 * (1024 + 8192)
    assert row.kv_bytes_per_request == kv_per_request
    assert row.weights_bytes == 2 * row.params_total
    assert row.decode_cf_bytes == pytest.approx(2 * row.params_total + 4 * kv_per_request)


def test_windowed_and_state_space_rows():
    """KV per request of the windowed and SSM rows, by hand: Gemma-2-9B keeps 4,096
    tokens on its 21 local layers and the whole context on its 21 global ones; Jamba's
    4 attention layers hold KV, its 28 Mamba layers a fixed state."""
    from genz import load_use_cases, use_case
    from genz.scaled_models import with_sliding_window
    from roofline import load_platform
    from search.sizing import oicf_report
    from search.sizing.oicf import DEFAULT_MODELS

    assert {"gemma-2-9b", "jamba-v0.1"} <= set(DEFAULT_MODELS)
    load_use_cases()
    case = use_case("long-context-rag")  # 32,768 in, 512 out
    gemma, jamba = load_model("gemma-2-9b"), load_model("jamba-v0.1")
    full = with_sliding_window(gemma, 0)
    report = oicf_report(
        [gemma, full, jamba], [case], load_platform("h100-sxm"), bits=((16.0, 16.0),)
    )
    rows = {row.model: row for row in report.rows}
    context = case.input_tokens + case.output_tokens
    per_token_layer = 2 * gemma.num_kv_heads * gemma.head_dim * 2  # K and V, 16-bit
    windowed = 21 * per_token_layer * (context + 4096)
    assert rows[gemma.name].kv_bytes_per_request == pytest.approx(windowed, rel=1e-9)
    assert rows[full.name].kv_bytes_per_request == pytest.approx(
        42 * per_token_layer * context, rel=1e-9
    )
    assert rows[gemma.name].attention == "GQA+SWA"
    jamba_kv = 4 * 2 * jamba.num_kv_heads * jamba.head_dim * 2 * context
    assert rows[jamba.name].attention == "GQA+SSM"
    # Mamba state per layer: d_inner 8192 x d_state 16 plus the 3-token convolution
    # window of 8192 channels, 16-bit (jamba-v0.1 config: expand 2, d_state 16, d_conv 4)
    state = (8192 * 16 + 3 * 8192) * 2
    assert rows[jamba.name].kv_bytes_per_request == pytest.approx(jamba_kv + 28 * state, rel=1e-9)
