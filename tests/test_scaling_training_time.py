"""Training FLOP and time: closed-form counts (6N + 12 L d T per token) and the MFU algebra."""

import pytest

from roofline.errors import InputError
from scaling_law.architecture import Architecture
from scaling_law.training_time import (
    architecture_training_flops,
    implied_mfu,
    training_flops,
    training_seconds,
)


def test_six_n_d_plus_attention_closed_form():
    # 1e9 matmul parameters, 1e10 tokens, 24 layers of width 2048, context 2048.
    flops = training_flops(1e9, 1e10, 24, 2048, 2048)
    assert flops == pytest.approx(6e19 + 12 * 24 * 2048 * 2048 * 1e10)


def test_architecture_counts_skip_the_input_embedding_lookup():
    arch = Architecture(layers=12, hidden=768, vocab=50000)
    counts = arch.counts()
    expected = training_flops(counts.total - 50000 * 768, 1e9, 12, 768, 1024)
    assert architecture_training_flops(arch, 1e9, 1024) == pytest.approx(expected)
    tied = Architecture(layers=12, hidden=768, vocab=50000, tie_embeddings=True)
    expected_tied = training_flops(tied.counts().total, 1e9, 12, 768, 1024)
    assert architecture_training_flops(tied, 1e9, 1024) == pytest.approx(expected_tied)


def test_time_and_implied_mfu_invert_each_other():
    seconds = training_seconds(3.0e18, 1.0e15, 0.4)
    assert seconds == pytest.approx(7500.0)
    assert implied_mfu(3.0e18, seconds, 1.0e15) == pytest.approx(0.4)
    with pytest.raises(InputError, match="mfu must be in"):
        training_seconds(1e18, 1e15, 0.0)
    with pytest.raises(InputError, match="peak_flop_per_s must be a finite number > 0"):
        training_seconds(1e18, -1, 0.5)
