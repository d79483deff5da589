"""Vision encoder towers (LLaVA-style VLMs): parameters and prefill FLOP by hand."""

from __future__ import annotations

import pytest

from genz import Scenario, load_model, parameter_count, predict
from roofline import InputError, load_platform


def test_llava_parameter_count_by_hand():
    # Decoder: Llama 2 7B shapes with vocab 32064: 32 x (4 x 4096^2 + 3 x 4096 x 11008 +
    # 2 x 4096) + 2 x 32064 x 4096 + 4096 = 6,738,939,904.
    # Tower: patch conv 3 x 14^2 x 1024 + class 1024 + 577 positions x 1024 + pre-LN 2048 +
    # 24 x (4 x (1024^2 + 1024) + (1024 x 4096 + 4096) + (4096 x 1024 + 1024) + 4 x 1024)
    # + post-LN 2048 = 303,507,456. Projector 1024 x 4096 + 4096 + 4096^2 + 4096 = 20,979,712.
    model = load_model("llava-1.5-7b")
    assert parameter_count(model).total == 6_738_939_904 + 303_507_456 + 20_979_712
    assert model.vision.tokens_per_image == 576  # (336 / 14)^2


def test_an_image_adds_its_tower_and_576_prompt_tokens():
    model, h100 = load_model("llava-1.5-7b"), load_platform("h100-sxm")
    p = predict(model, h100, Scenario(input_tokens=100, images=1))
    assert p.scenario.input_tokens == 676
    cost = p.prefill.pass_cost
    flop = dict(zip(cost.names, cost.first_scenario(cost.flop), strict=True))
    # Per layer, S = 577 tokens: GEMMs 2 S (4 h^2 + 2 h I) = 14,520,680,448; bidirectional
    # attention 4 h S^2 + 5 heads S^2 = 1,390,311,504; x 24 layers.
    gemms = sum(flop[name] for name in ("vit_qkv", "vit_out", "vit_fc1", "vit_fc2"))
    assert gemms == pytest.approx(24 * 14_520_680_448)
    assert flop["vit_attention"] == pytest.approx(24 * 1_390_311_504)
    # Projector on the 576 patch tokens: 2 x 576 x (1024 x 4096 + 4096 x 4096).
    assert flop["projector_in"] + flop["projector"] == pytest.approx(24_159_191_040)
    # Text-only prefill of the same 676 tokens is faster by the tower's time.
    text = predict(model, h100, Scenario(input_tokens=676))
    assert p.ttft_s > text.ttft_s


def test_images_need_a_vision_encoder():
    with pytest.raises(InputError, match=r"--images: Llama 3\.1 8B has no vision encoder"):
        predict(load_model("llama-3.1-8b"), load_platform("h100-sxm"), Scenario(images=1))
    with pytest.raises(InputError, match=r"images must be an integer in \[0, 1024\]"):
        Scenario(images=-1)
