"""Post-training quantisation term (Kumar et al. 2024 Eq. 2): monotone in bits and in
tokens per parameter, zero at the training precision, the default of ``codesign loss``."""

import json

import numpy as np
import pytest

from app.cli import main
from roofline.errors import InputError
from scaling_law.architecture import Architecture
from scaling_law.data import scaling_dir
from scaling_law.law_io import load_law
from scaling_law.ptq import KUMAR_PTQ, PtqConstants, ptq_degradation, ptq_loss_penalty


def test_more_bits_less_degradation():
    bits = np.array([2.0, 3.0, 4.0, 6.0, 8.0, 12.0])
    delta = ptq_degradation(5e8, 1e10, bits)
    assert np.all(np.diff(delta) < 0) and np.all(delta > 0)
    # exp(-P / gamma_post): one more bit divides the degradation by exp(1 / gamma_post).
    assert delta[1] / delta[2] == pytest.approx(np.exp(1 / KUMAR_PTQ.gamma_post))


def test_more_tokens_per_parameter_more_degradation():
    tokens_per_parameter = np.array([5.0, 20.0, 200.0, 2000.0, 36000.0])
    delta = ptq_degradation(5e8, 5e8 * tokens_per_parameter, 4)
    assert np.all(np.diff(delta) > 0)


def test_no_degradation_at_or_above_the_training_precision():
    assert ptq_degradation(1e9, 1e10, [16, 32]).tolist() == [0.0, 0.0]
    assert ptq_degradation(1e9, 1e10, 15.9) > 0


def test_closed_form_value_and_bad_input():
    constants = PtqConstants(c_t=0.1, gamma_d=0.5, gamma_n=0.5, gamma_post=1.0, source="test")
    assert ptq_degradation(100.0, 400.0, 2, constants) == pytest.approx(0.1 * 2 * np.exp(-2))
    with pytest.raises(InputError, match="post_bits must be a number of bits > 0"):
        ptq_degradation(1e9, 1e10, 0)
    with pytest.raises(InputError, match=r"ptq\.gamma_post must be a finite number > 0"):
        PtqConstants(c_t=0.1, gamma_d=0.5, gamma_n=0.5, gamma_post=0.0, source="x")


def test_penalty_counts_n_under_the_laws_convention():
    law = load_law(scaling_dir() / "chinchilla_law.json")
    arch = Architecture(layers=24, hidden=2048)
    penalty = ptq_loss_penalty(law, arch, 1e11, np.array([4.0, 8.0]))
    expected = ptq_degradation(arch.counts().total, 1e11, np.array([4.0, 8.0]))
    assert penalty == pytest.approx(expected)


def test_codesign_loss_uses_ptq_by_default_and_labels_both(capsys):
    law = str(scaling_dir() / "chinchilla_law.json")
    argv = ["loss", "--law", law, "--layers", "24", "--hidden", "2048", "--tokens", "1e11"]
    assert main([*argv, "--json"]) == 0
    base = json.loads(capsys.readouterr().out)
    assert main([*argv, "--weight-bits", "4", "--json"]) == 0
    ptq = json.loads(capsys.readouterr().out)
    assert ptq["precision_model"].startswith("post-training quantisation")
    assert ptq["loss"] == pytest.approx(base["loss"] + ptq["precision_loss_penalty"])
    assert ptq["ptq_constants"]["gamma_post"] == KUMAR_PTQ.gamma_post
    assert main([*argv, "--weight-bits", "4", "--precision-model", "quantised-training"]) == 0
    text = capsys.readouterr().out
    assert "quantised training" in text and "from quantised training, N_eff" in text
    assert main([*argv, "--weight-bits", "4"]) == 0
    assert "from post-training quantisation" in capsys.readouterr().out
