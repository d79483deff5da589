"""Sliding-window and alternating local/global attention: counts derived by hand."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from genz import Scenario, evaluate_grid, load_model, predict, with_sliding_window
from genz.hf_config import model_from_hf_config
from genz.memory import kv_cache_bytes_per_device
from genz.windows import decode_mean_keys, prefill_means, window_keys, window_pairs
from roofline import InputError, load_platform

TINY = {
    "architectures": ["MistralForCausalLM"],
    "hidden_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 100,
}


def test_window_pairs_count_min_p_w_per_query():
    # Positions 1..10, window 4: 1 + 2 + 3 + 4 * 7 = 34 pairs (full causal: 55).
    assert window_pairs(10.0, 10.0, 4.0) == 34.0
    # Three queries at positions 8, 9, 10 see 4 keys each: 12.
    assert window_pairs(3.0, 10.0, 4.0) == 12.0
    # Inside the window nothing changes: 3 queries ending at 3 -> 1 + 2 + 3.
    assert window_pairs(3.0, 3.0, 4.0) == 6.0
    # A chunk of 3 queries ending at 10 reads keys 5..10 with window 4: min(10, 3 + 4 - 1) = 6.
    assert window_keys(3.0, 10.0, 4.0) == 6.0


def test_chunked_prefill_means_are_exact_sums_over_chunks():
    # 8 prompt tokens in 2 chunks of 4, window 3: pairs 1 + 2 + 3 * 6 = 21 -> 10.5 per chunk;
    # chunk 1 (ends at 4) reads min(4, 4 + 3 - 1 = 6) = 4 keys, chunk 2 reads 6: mean 5.
    pairs, keys = prefill_means(8.0, 2.0, 3.0)
    assert (pairs, keys) == (10.5, 5.0)


def test_decode_mean_keys_sum_the_steps():
    # input 4, output 5: steps at contexts 5, 6, 7, 8; window 6 -> 5, 6, 6, 6: mean 5.75.
    assert decode_mean_keys(4.0, 5.0, 6.0) == pytest.approx(5.75)
    # Past the window every step reads the window.
    assert decode_mean_keys(100.0, 9.0, 6.0) == pytest.approx(6.0)
    # Vectorised over scenarios.
    got = decode_mean_keys(np.array([4.0, 100.0]), np.array([5.0, 9.0]), 6.0)
    assert got == pytest.approx([5.75, 6.0])


def test_mistral_preset_has_4096_windows_on_every_layer():
    model = load_model("mistral-7b")
    assert model.sliding_window == 4096
    assert model.num_window_layers == 32 and model.num_full_attention_layers == 0


def test_mistral_kv_cache_stops_growing_at_the_window():
    model = load_model("mistral-7b")
    one = np.ones(1)
    kv = kv_cache_bytes_per_device(model, one, np.array([32769.0]), 16.0 * one, one, one, one)
    # 32 layers x 4096 kept tokens x (2 x 8 KV heads x 128) elements x 2 bytes.
    assert float(kv[0]) == 32 * 4096 * 2 * 8 * 128 * 2 == 536_870_912
    full = with_sliding_window(model, 0)
    kv_full = kv_cache_bytes_per_device(full, one, np.array([32769.0]), 16.0 * one, one, one, one)
    assert float(kv_full[0]) == 32 * 32769 * 4096


def test_mistral_decode_attention_flop_at_32k_is_the_windows():
    model = load_model("mistral-7b")
    h100 = load_platform("h100-sxm")
    # One decode step at context 32769 (input 32768, output 2): every layer attends to
    # 4096 keys: 4 FLOP x 32 heads x 128 x 4096 + 5 x 32 x 4096 softmax, x 32 layers.
    p = predict(model, h100, Scenario(batch=1, input_tokens=32768, output_tokens=2))
    cost = p.decode.pass_cost
    row = cost.names.index("attention_window")
    per_layer = 4 * 32 * 128 * 4096 + 5 * 32 * 4096
    assert float(cost.first_scenario(cost.flop)[row]) == pytest.approx(32 * per_layer)
    assert "attention" not in cost.names  # no full-attention layer


def test_window_moves_the_capacity_wall():
    # Batch 64 at 32k context on one 80 GB H100, prefill in 2048-token chunks: full
    # attention needs 64 x 4.3 GB of KV (infeasible); 4096-token windows need 64 x 0.54 GB
    # = 34 GB next to 14.5 GB of weights and 64 x 2048 x (2 x 4096 + 2 x 14336) x 2 B = 9.7 GB
    # of activations.
    model = load_model("mistral-7b")
    h100 = load_platform("h100-sxm")
    scenario = Scenario(batch=64, input_tokens=32768, output_tokens=1, prefill_chunk=2048)
    assert predict(model, h100, scenario).capacity.fits
    assert not predict(with_sliding_window(model, 0), h100, scenario).capacity.fits


def test_evaluate_grid_agrees_with_predict_on_windows():
    model = load_model("mistral-7b")
    h100 = load_platform("h100-sxm")
    grid = evaluate_grid(model, h100, batch=[1, 4], input_tokens=32768, output_tokens=64)
    one = predict(model, h100, Scenario(batch=4, input_tokens=32768, output_tokens=64))
    assert float(grid.kv_cache_bytes[1]) == pytest.approx(one.footprint.kv_cache_bytes)
    assert float(grid.tpot_s[1]) == pytest.approx(one.tpot_s, rel=1e-9)


def test_gemma2_alternates_and_gemma3_pattern_puts_every_sixth_layer_global():
    gemma2 = model_from_hf_config({**TINY, "model_type": "gemma2", "sliding_window": 16})
    assert gemma2.layer_types == ("sliding_attention", "full_attention") * 2
    gemma3 = model_from_hf_config(
        {
            **TINY,
            "num_hidden_layers": 12,
            "model_type": "gemma3_text",
            "sliding_window": 16,
            "sliding_window_pattern": 6,
        }
    )
    globals_ = [i for i, kind in enumerate(gemma3.layer_types) if kind == "full_attention"]
    assert globals_ == [5, 11]
    assert gemma3.norms_per_layer == 4


def test_layer_types_list_and_sinks():
    config = {
        **TINY,
        "layer_types": ["sliding_attention", "full_attention"] * 2,
        "sliding_window": 128,
        "attention_sink_tokens": 4,
    }
    model = model_from_hf_config(config)
    assert (model.num_window_layers, model.num_full_attention_layers) == (2, 2)
    one = np.ones(1)
    kv = kv_cache_bytes_per_device(model, one, np.array([1000.0]), 16.0 * one, one, one, one)
    # Per token per layer 2 x 2 KV heads x 16 = 64 elements x 2 B = 128 B; full layers keep
    # 1000 tokens, windowed ones 128 + 4 sinks.
    assert float(kv[0]) == 128 * (2 * 1000 + 2 * 132)


def test_qwen2_use_sliding_window_false_switches_the_window_off():
    model = model_from_hf_config({**TINY, "sliding_window": 4096, "use_sliding_window": False})
    assert model.sliding_window == 0 and model.layer_types == ()


def test_bad_window_input_is_one_line():
    with pytest.raises(InputError, match=r"--sliding-window must be an integer in \[0, 131072\]"):
        with_sliding_window(load_model("llama-3.1-8b"), 200_000, flag="--sliding-window")
    with pytest.raises(InputError, match=r"layer_types\[1\] = 'retention' is not modelled"):
        model_from_hf_config({**TINY, "layer_types": ["full_attention", "retention"] * 2})
    # linear attention is modelled (tests/test_genz_linear_attention.py): its shapes are named
    with pytest.raises(InputError, match="linear-attention layers need 'linear_num_key_heads'"):
        model_from_hf_config({**TINY, "layer_types": ["full_attention", "linear_attention"] * 2})
    with pytest.raises(InputError, match="sliding_window must be an integer >= 1 or null"):
        model_from_hf_config({**TINY, "sliding_window": -3})


def test_cli_sliding_window_flag():
    run = [
        sys.executable,
        "-m",
        "app.cli",
        "predict",
        "--model",
        "llama-3.1-8b",
        "--hw",
        "h100-sxm",
    ]
    bad = subprocess.run([*run, "--sliding-window", "200000"], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "--sliding-window" in bad.stderr
    good = subprocess.run(
        [*run, "--sliding-window", "4096", "--input", "32768", "--json"],
        capture_output=True,
        text=True,
    )
    assert good.returncode == 0, good.stderr
    assert "attention_window" in good.stdout


def test_attention_labels_name_windows_and_ssm_layers():
    assert load_model("mistral-7b").attention_type == "GQA+SWA"
    assert load_model("jamba-v0.1").attention_type == "GQA+SSM"
    assert load_model("mamba-2.8b").attention_type == "SSM"
    assert load_model("llama-3.1-8b").attention_type == "GQA"


def test_gemma2_9b_preset_alternates_and_halves_the_global_share_of_kv():
    model = load_model("gemma-2-9b")
    assert (model.num_window_layers, model.num_full_attention_layers) == (21, 21)
    one = np.ones(1)
    kv = kv_cache_bytes_per_device(model, 8 * one, np.array([8192.0]), 16.0 * one, one, one, one)
    # Per token per layer 2 x 8 KV heads x 256 x 2 B = 8192 B; 21 full layers keep 8192
    # tokens, 21 windowed ones 4096; 8 sequences.
    assert float(kv[0]) == 8 * 8192 * (21 * 8192 + 21 * 4096) == 16_911_433_728


def test_scaled_models_repeat_the_layer_pattern():
    from genz import scale_model

    scaled = scale_model(load_model("gemma-2-9b"), params_scale=0.5)
    # The local/global alternation repeats over the new depth: even layers windowed.
    assert scaled.layer_types[:4] == ("sliding_attention", "full_attention") * 2
    assert scaled.num_window_layers == (scaled.num_layers + 1) // 2
