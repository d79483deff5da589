"""DeepSeek-V3 multi-token-prediction heads as a speculative draft."""

import pytest

from app.cli import main
from genz import (
    Parallelism,
    Precision,
    Scenario,
    load_model,
    mtp_draft,
    mtp_parameters,
    parameter_count,
    speculative_decoding,
)
from genz.advice import footprint_bytes
from genz.serving import pass_time
from roofline import InputError, load_platform

DSV3 = load_model("deepseek-v3")
H100 = load_platform("h100-sxm")
SCENARIO = Scenario(precision=Precision(weight_bits=8), parallelism=Parallelism(tp=8))


def test_mtp_module_size_matches_the_published_figure():
    """'The total size on Hugging Face is 685B, which includes 671B of Main Model weights
    and 14B of the Multi-Token Prediction (MTP) Module weights' (DeepSeek-V3 model card;
    arXiv 2412.19437): one MoE block (256 routed + 1 shared expert of 2048, MLA), the
    2h -> h projection, its norms and its copies of embedding and head = 13.46 B, within
    the rounding of 685 - 671 (the main model alone computes to 671.03 B)."""
    assert mtp_parameters(DSV3) == pytest.approx(14e9, rel=0.04)
    draft = mtp_draft(DSV3)
    assert (draft.num_layers, draft.num_moe_layers, draft.num_dense_layers) == (1, 1, 0)
    # the block is one of the main model's 58 MoE layers: 58 of them plus 3 dense
    # layers (the 671B minus 58 blocks) leave a dense-layer size below a MoE block's
    main_count, block = parameter_count(DSV3), parameter_count(draft)
    dense_layer = (main_count.non_embedding - 58 * block.non_embedding) / 3
    assert 0 < dense_layer < block.non_embedding / 10


def test_draft_costs_one_block_and_the_shared_head():
    """The draft step is the one-layer pass; the target's step has 61 layers: the draft
    costs between 1/61 of it and 1/61 plus the whole LM head."""
    context = SCENARIO.input_tokens + SCENARIO.output_tokens / 2
    draft_step = pass_time(mtp_draft(DSV3), H100, SCENARIO, 1, context)
    target_step = pass_time(DSV3, H100, SCENARIO, 1, context)
    head_bytes = parameter_count(DSV3).by_group["lm_head"] / 8  # 8-bit, split over tp 8
    head_s = head_bytes / (H100.main_memory.bandwidth_bytes_per_s * H100.efficiency.memory)
    assert target_step / 61 < draft_step < target_step / 61 + 2 * head_s


def test_shared_embeddings_leave_the_draft_footprint():
    plain = speculative_decoding(DSV3, mtp_draft(DSV3), H100, SCENARIO, 1, 0.85)
    shared = speculative_decoding(
        DSV3, mtp_draft(DSV3), H100, SCENARIO, 1, 0.85, draft_shares_embeddings=True
    )
    embedding = parameter_count(DSV3).embedding  # embedding + head, 8-bit, tp 8
    assert plain.draft_footprint_bytes - shared.draft_footprint_bytes == pytest.approx(
        embedding / 8, rel=1e-12
    )
    assert plain.draft_footprint_bytes == pytest.approx(
        footprint_bytes(mtp_draft(DSV3), SCENARIO), rel=1e-12
    )
    # k = 1 at acceptance a: 1 + a tokens per iteration
    assert shared.expected_tokens_per_iteration == pytest.approx(1.85)


def test_models_without_mtp_heads_are_refused():
    with pytest.raises(InputError, match=r"--draft mtp: Llama 3.1 8B has no multi-token"):
        mtp_draft(load_model("llama-3.1-8b"))


def test_cli_draft_mtp(capsys):
    target = ["--model", "deepseek-v3", "--draft", "mtp", "--hw", "h100-sxm", "--tp", "8"]
    main(["speculate", *target, "--wbits", "8", "--k", "1", "--acceptance", "0.85"])
    out = capsys.readouterr().out
    assert "DeepSeek-V3 MTP head" in out and "1.850" in out
