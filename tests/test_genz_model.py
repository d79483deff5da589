"""Model loading and parameter counting."""

import json

import pytest

from genz.hf_config import list_models, load_model, model_from_hf_config, models_dir
from genz.params import parameter_count
from roofline import InputError

LLAMA2_7B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "intermediate_size": 11008,
    "vocab_size": 32000,
    "rms_norm_eps": 1e-5,
}


def test_llama2_7b_count_is_published_total():
    # 6,738,415,616 parameters: Meta's Llama 2 7B checkpoint size (model card "7B").
    assert parameter_count(model_from_hf_config(LLAMA2_7B)).total == 6_738_415_616


def test_moe_active_parameters_are_top_k_experts():
    mixtral = dict(
        LLAMA2_7B,
        architectures=["MixtralForCausalLM"],
        num_key_value_heads=8,
        intermediate_size=14336,
        num_local_experts=8,
        num_experts_per_tok=2,
    )
    count = parameter_count(model_from_hf_config(mixtral))
    # Mistral AI: 46.7B total, 12.9B active per token.
    assert count.total == pytest.approx(46.7e9, rel=0.01)
    assert count.active == pytest.approx(12.9e9, rel=0.01)


def test_mla_model_counts_deepseek_v3():
    config = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "hidden_size": 7168,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "vocab_size": 129280,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
    }
    model = model_from_hf_config(config)
    count = parameter_count(model)
    assert model.attention_type == "MLA"
    assert model.kv_elements_per_token_per_layer == 576
    # DeepSeek-V3 technical report: 671B total, 37B activated per token.
    assert count.total == pytest.approx(671e9, rel=0.01)
    assert count.active == pytest.approx(37e9, rel=0.02)


def test_misspelt_key_is_rejected_by_name():
    config = dict(LLAMA2_7B)
    config["num_key_value_head"] = config.pop("num_key_value_heads")
    with pytest.raises(
        InputError, match="unknown key 'num_key_value_head' \\(did you mean 'num_key_value_heads'"
    ):
        model_from_hf_config(config)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hidden_size": -4096}, "<config>: hidden_size must be an integer in [1, 1048576]"),
        ({"num_key_value_heads": 5}, "must be a multiple of num_key_value_heads"),
        ({"num_hidden_layers": "32"}, "num_hidden_layers must be an integer in [1, 1024]"),
        ({"num_hidden_layers": 10**9}, "num_hidden_layers must be an integer in [1, 1024]"),
        ({"num_attention_heads": 0}, "num_attention_heads must be an integer in [1, 16384]"),
        ({"num_key_value_heads": 0}, "num_key_value_heads must be an integer in [1, 16384]"),
        ({"head_dim": 0}, "head_dim must be an integer in [1, 65536]"),
        ({"hidden_size": 10**12}, "hidden_size must be an integer in [1, 1048576]"),
        ({"num_local_experts": 0, "num_experts_per_tok": 2}, "has no routed experts"),
        (
            {"num_local_experts": 8, "num_experts_per_tok": 9},
            "num_experts_per_tok must be in [1, 8]",
        ),
    ],
)
def test_bad_config_values_give_one_line_errors(change, message):
    with pytest.raises(InputError) as info:
        model_from_hf_config({**LLAMA2_7B, **change})
    assert message in str(info.value)


def test_missing_key_and_bad_json(tmp_path):
    config = dict(LLAMA2_7B)
    del config["vocab_size"]
    with pytest.raises(InputError, match="missing required key 'vocab_size'"):
        model_from_hf_config(config)
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_model(broken)


def test_load_from_path(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA2_7B))
    assert load_model(path).num_layers == 32


def test_unknown_model_name_lists_presets():
    with pytest.raises(InputError, match="unknown model 'gpt-9'") as info:
        load_model("gpt-9")
    assert "llama-3.1-8b" in str(info.value)
    assert "did you mean" not in str(info.value)


def test_near_miss_model_name_gets_a_suggestion():
    with pytest.raises(
        InputError, match=r"unknown model 'Llama-3.1-9B' \(did you mean 'llama-3.1-8b'"
    ):
        load_model("Llama-3.1-9B")


@pytest.mark.parametrize("name", list_models())
def test_preset_parameter_count_within_1_percent_of_published(name):
    model = load_model(name)
    preset = json.loads((models_dir() / f"{name}.json").read_text())
    if "_published_params_uncited" in preset:  # the preset says why no count is citable
        assert model.published_params is None and len(preset["_published_params_uncited"]) > 80
        pytest.skip(f"{name}: no citable published count ({preset['_published_params_uncited']})")
    assert model.published_params, f"{name} lacks _published_params"
    assert "read 2026" in model.source or "huggingface" in model.source.lower()
    count = parameter_count(model)
    # A headline rounded to R (``_published_params_rounding``: Mamba's "2.8B") holds any
    # count within R / 2 of it; otherwise 1%.
    rounding = preset.get("_published_params_rounding", 0.0)
    tolerance = max(0.01 * model.published_params, rounding / 2)
    assert abs(count.total - model.published_params) <= tolerance
    if model.published_active_params:
        assert count.active == pytest.approx(model.published_active_params, rel=0.02)


def test_required_model_presets_are_shipped():
    required = {
        "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b",
        "llama-3.1-405b", "mistral-7b", "mixtral-8x7b", "qwen2.5-0.5b", "qwen2.5-1.5b",
        "qwen2.5-7b", "deepseek-v3", "bitnet-b1.58-2b",
        # models of the LLM-Inference-Bench measurements
        "llama-7b", "llama-3-8b", "llama-3-70b", "qwen2-7b", "qwen2-72b",
        "qwen1.5-7b",
    }  # fmt: skip
    assert required <= set(list_models())


def test_qwen2_7b_has_the_shapes_of_the_published_checkpoint():
    # Embedding(152064, 3584), 28 layers, k/v_proj 3584 -> 512 with bias (4 KV heads of 128).
    model = load_model("qwen2-7b")
    assert (model.vocab_size, model.hidden_size, model.num_layers) == (152064, 3584, 28)
    assert model.num_kv_heads * model.head_dim == 512
    assert model.qkv_bias
