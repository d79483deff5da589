"""`codesign serve` with multi-LoRA adapters (`--lora-*`, predict's flags) and VLM
images (`--images`): pure steps equal `genz.predict` for the same scenario, the
adapters a step touches follow its sequences, adapters shrink the KV cache, and bad
flags are one line."""

import contextlib
import io
import json

import pytest

from app.cli import main
from genz import Scenario, load_model, load_runtime, predict, step_cost, with_lora
from genz.adapter_steps import adapters_touched
from genz.params import lora_params
from genz.vision_steps import vision_step_costs

LENGTHS = ["--input", "1024", "--output", "64", "--length-cv", "0"]
LORAS = [(16, 8, ("qkv", "o"), None), (64, 100, ("qkv", "o", "ffn"), "vllm")]


def _serve(*extra: str) -> dict:
    out = io.StringIO()
    args = ["serve", "--hw", "h100-sxm", "--rate", "0.02", "--num-requests", "3", "--json",
            *LENGTHS, *extra]  # fmt: skip
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize(("rank", "adapters", "targets", "runtime"), LORAS)
def test_pure_lora_steps_equal_predict(llama8b, h100, rank, adapters, targets, runtime):
    model = with_lora(llama8b, rank, adapters, targets)
    profile = None if runtime is None else load_runtime(runtime)
    cost = step_cost(model, h100, max_tokens=4096, max_sequences=16, runtime=profile)
    assert not cost.affine_in_context  # the Python loop costs the adapters per step
    for batch in (1, 3, 16):
        prompt = 4096 // batch
        expected = predict(model, h100, Scenario(batch, prompt, 64), runtime=profile)
        context = batch * (prompt + 32.0)
        decode = cost.step_time(0, 0.0, 0.0, batch, context, batch, batch)
        assert decode == pytest.approx(expected.tpot_s, rel=1e-9)
        assert cost.decode_time(batch, context) == pytest.approx(decode, rel=1e-12)
        pairs = batch * (prompt * prompt - prompt * (prompt - 1) / 2)
        tokens = batch * prompt
        prefill = cost.step_time(tokens, tokens, pairs, 0, 0.0, batch, batch)
        assert prefill == pytest.approx(expected.ttft_s, rel=1e-9)
        arrays = cost.step_times([tokens, 0], [tokens, 0], [pairs, 0], [0, batch],
                                 [0, context], [batch, batch], [batch, batch])  # fmt: skip
        assert arrays.tolist() == pytest.approx([prefill, decode], rel=1e-12)
        flop, moved = cost.step_work([0], [0], [0], [batch], [context], [batch], [batch])
        assert flop[0] == pytest.approx(expected.decode.flop, rel=1e-9)
        assert moved[0] == pytest.approx(expected.decode.bytes, rel=1e-9)


def test_a_step_reads_the_adapters_its_sequences_touch(llama8b, h100):
    """Same tokens, more sequences: more distinct adapters' weights read (16-bit
    weights, rank 16 on q/k/v and o: 16 x (4096 + 6144 + 4096 + 4096) x 2 B a layer)."""
    model = with_lora(llama8b, 16, 100, ("qkv", "o"))
    cost = step_cost(model, h100, max_tokens=2048, max_sequences=64)
    one = cost.step_work([2048], [2048], [0.0], [0], [0.0], [1], [1])[1][0]
    many = cost.step_work([2048], [2048], [0.0], [0], [0.0], [1], [64])[1][0]
    per_adapter = 32 * 16 * (4096 + 6144 + 4096 + 4096) * 2
    assert many - one == pytest.approx((adapters_touched(100, 64) - 1) * per_adapter, rel=1e-9)
    single = step_cost(with_lora(llama8b, 16, 1, ("qkv", "o")), h100, max_tokens=2048,
                       max_sequences=64)  # fmt: skip
    assert single.affine_in_context  # one adapter: always read, in the token tables
    decode = cost.decode_time(64, 64 * 1000.0)
    assert decode > single.decode_time(64, 64 * 1000.0)
    # The resident adapters' weights come out of the KV cache.
    assert cost.weights_bytes - single.weights_bytes == pytest.approx(
        99 * sum(lora_params(with_lora(llama8b, 16, 1, ("qkv", "o"))).values()) * 2, rel=1e-12
    )
    assert cost.kv_capacity_tokens(0.9, 0.0) < single.kv_capacity_tokens(0.9, 0.0)


def test_cli_serves_adapters_and_reports_them(llama8b, h100):
    lora = ["--lora-rank", "64", "--lora-adapters", "100", "--lora-targets", "qkv,o,ffn"]
    served = _serve("--model", "llama-3.1-8b", *lora)
    plain = _serve("--model", "llama-3.1-8b")
    assert (served["lora_rank"], served["lora_adapters"]) == (64, 100)
    assert served["lora_targets"] == ["qkv", "o", "ffn"]
    assert "lora_rank" not in plain
    # Idle replica (one request at a time): predict's TPOT and TTFT of one request.
    alone = predict(with_lora(llama8b, 64, 100, ("qkv", "o", "ffn")), h100, Scenario(1, 1024, 64))
    assert served["tpot_s_p50"] == pytest.approx(alone.tpot_s, rel=1e-3)
    assert served["ttft_s_p50"] == pytest.approx(alone.ttft_s, rel=1e-9)
    assert served["kv_capacity_tokens"] < plain["kv_capacity_tokens"]
    assert served["tpot_s_p50"] > plain["tpot_s_p50"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--lora-rank", "0"], "--lora-rank must be an integer in [1, "),
        (["--lora-rank", "5000"], "--lora-rank must be an integer in [1, 4096] (hidden size"),
        (["--lora-rank", "8", "--lora-adapters", "0"], "--lora-adapters must be an integer in"),
        (["--lora-adapters", "4"], "--lora-adapters goes with --lora-rank"),
        (["--lora-rank", "8", "--lora-targets", "qkv,mlp"], "--lora-targets: unknown target"),
    ],
)
def test_bad_lora_flags_are_one_line(flags, message, capsys):
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", *flags]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def _vlm(*extra: str) -> dict:
    return _serve("--model", "llava-1.5-7b", "--input", "200", *extra)


@pytest.mark.parametrize(("images", "policy"), [(1, "continuous"), (3, "static")])
def test_idle_vlm_replica_ttft_is_predicts(h100, images, policy):
    """One request at a time: its prefill step (text plus images x 576 tokens) and the
    tower on its images take predict --images N's TTFT."""
    served = _vlm("--images", str(images), "--policy", policy)
    alone = predict(load_model("llava-1.5-7b"), h100, Scenario(1, 200, 64, images=images))
    assert served["images"] == images
    assert served["ttft_s_p50"] == pytest.approx(alone.ttft_s, rel=1e-9)
    assert served["tpot_s_p50"] == pytest.approx(alone.tpot_s, rel=1e-3)


def test_chunked_prefill_runs_the_tower_once_with_the_first_chunk(h100):
    """200 + 2 x 576 prompt tokens in 512-token chunks: the same prompt as text plus
    the tower on two images, once."""
    chunked = ["--policy", "chunked", "--max-batched-tokens", "512"]
    images = _vlm("--images", "2", *chunked)
    text = _serve("--model", "llava-1.5-7b", "--input", str(200 + 2 * 576), *chunked)
    tower = vision_step_costs(load_model("llava-1.5-7b"), h100, 2, 1).seconds[1]
    assert tower > 0
    assert images["ttft_s_p50"] - text["ttft_s_p50"] == pytest.approx(tower, rel=1e-9)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--model", "llama-3.1-8b", "--images", "1"], "--images: Llama 3.1 8B has no vision"),
        (["--model", "llava-1.5-7b", "--images", "2000"], "--images must be an integer in [0,"),
        (
            [
                "--model",
                "llava-1.5-7b",
                "--images",
                "1",
                "--prefix-share",
                "0.5",
                "--prefix-tokens",
                "64",
            ],
            "--images: prefix caching of image prompts",
        ),
    ],
)
def test_bad_image_flags_are_one_line(flags, message, capsys):
    assert main(["serve", "--hw", "h100-sxm", "--rate", "1", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
