"""Parameter counts from architecture hyper-parameters: golden counts, vectorisation, errors."""

import numpy as np
import pytest

from roofline.errors import InputError
from scaling_law.architecture import Architecture, count_parameters


def test_llama2_7b_matches_published_count():
    # Llama-2-7B (HF config): 32 layers, 4096 wide, SwiGLU 11008, 32 heads, vocab 32000,
    # untied LM head; the released checkpoint holds 6,738,415,616 parameters.
    arch = Architecture(layers=32, hidden=4096, ffn=11008, heads=32, vocab=32000, gated_ffn=True)
    counts = count_parameters(arch)
    assert counts.total == 6_738_415_616
    assert counts.active == counts.total
    assert counts.embedding == 2 * 32000 * 4096


def test_mixtral_8x7b_total_and_active_counts():
    # Mixtral-8x7B: 46.7B total and 12.9B active parameters (Mistral AI); exact values
    # from its HF config: 32 layers, 4096 wide, 14336 FFN, 32 heads, 8 KV heads, 8 experts, top-2.
    arch = Architecture(
        layers=32,
        hidden=4096,
        ffn=14336,
        heads=32,
        kv_heads=8,
        vocab=32000,
        gated_ffn=True,
        experts=8,
        top_k=2,
    )
    counts = arch.counts()
    assert counts.total == 46_702_792_704
    assert counts.active == 12_879_925_248
    assert counts.select(include_embeddings=True, moe_parameters="total") == counts.total
    assert counts.select(include_embeddings=False, moe_parameters="active") == (
        counts.active - 2 * 32000 * 4096
    )


def test_tied_embeddings_count_the_matrix_once_and_gqa_shrinks_attention():
    base = Architecture(layers=2, hidden=256, heads=4).counts()
    tied = Architecture(layers=2, hidden=256, heads=4, tie_embeddings=True).counts()
    assert base.total - tied.total == 32000 * 256
    assert tied.total_non_embedding == base.total_non_embedding
    gqa = Architecture(layers=2, hidden=256, heads=4, kv_heads=1).counts()
    # K and V shrink from 4 heads to 1 head of 64 dims: 2 * 256 * 64 * 3 per layer, 2 layers.
    assert base.total - gqa.total == 2 * (2 * 256 * 64 * 3)


def test_defaults_follow_the_documented_chinchilla_family_shape():
    arch = Architecture(layers=24, hidden=2048)
    assert float(arch.ffn) == 8192
    assert float(arch.heads) == 16
    assert float(arch.head_dim) == 128
    assert float(arch.kv_heads) == 16
    assert float(arch.aspect_ratio) == pytest.approx(2048 / 24)
    assert float(arch.gqa_ratio) == 1


def test_counts_are_vectorised_over_a_million_candidates():
    rng = np.random.default_rng(0)
    layers = rng.integers(4, 96, 1_000_000)
    hidden = 128 * rng.integers(4, 96, 1_000_000)
    counts = Architecture(layers=layers, hidden=hidden, gated_ffn=True, ffn=3 * hidden).counts()
    assert counts.total.shape == (1_000_000,)
    one = Architecture(layers=layers[7], hidden=hidden[7], gated_ffn=True, ffn=3 * hidden[7])
    assert counts.total[7] == one.counts().total


def test_fields_broadcast_together():
    arch = Architecture(layers=np.array([[12], [24]]), hidden=np.array([768, 1024, 2048]))
    assert arch.shape == (2, 3)
    assert arch.counts().total.shape == (2, 3)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"layers": 0, "hidden": 512}, "architecture.layers must be a whole number >= 1"),
        ({"layers": 2.5, "hidden": 512}, "architecture.layers must be a whole number >= 1"),
        ({"layers": 2, "hidden": 512, "heads": 8, "kv_heads": 3}, "kv_heads must divide heads"),
        ({"layers": 2, "hidden": 500, "heads": 8}, "hidden must be divisible by heads"),
        ({"layers": 2, "hidden": 512, "experts": 4, "top_k": 8}, "top_k must be <= experts"),
        ({"layers": 2, "hidden": 512, "gated_ffn": 2}, "gated_ffn must be true/false"),
        ({"layers": [2, 3], "hidden": [512, 512, 512]}, "do not broadcast"),
        ({"layers": np.array([2, -1]), "hidden": 512}, "-1 at index 1"),
    ],
)
def test_invalid_architectures_name_the_field(kwargs, fragment):
    with pytest.raises(InputError, match=fragment):
        Architecture(**kwargs)


def test_select_rejects_unknown_moe_convention():
    with pytest.raises(InputError, match="moe_parameters must be 'active' or 'total'"):
        Architecture(layers=2, hidden=256).counts().select(True, "all")
