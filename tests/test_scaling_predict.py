"""Predictions of a fitted law: monotonicity, vectorisation, intervals, precision penalty."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.errors import InputError
from scaling_law.architecture import Architecture
from scaling_law.data import load_scaling_csv
from scaling_law.fit import fit_law
from scaling_law.law import (
    ScalingLaw,
    precision_loss_penalty,
    predict_loss,
    predict_loss_interval,
)
from scaling_law.precision import effective_parameter_fraction, effective_parameters


@pytest.fixture(scope="module")
def law() -> ScalingLaw:
    data = load_scaling_csv("chinchilla")
    fit = fit_law(data, drop_highest_loss=5, bootstrap=30, cross_validation=None, progress=False)
    return fit.law


sizes = st.floats(min_value=1e6, max_value=1e13)
token_counts = st.floats(min_value=1e6, max_value=1e14)
factors = st.floats(min_value=1.0, max_value=1e3)


@settings(max_examples=200, deadline=None)
@given(params=sizes, tokens=token_counts, factor=factors)
def test_more_parameters_or_tokens_never_raise_the_fitted_loss(law, params, tokens, factor):
    base = predict_loss(law, None, tokens, params=params)
    assert predict_loss(law, None, tokens, params=params * factor) <= base
    assert predict_loss(law, None, tokens * factor, params=params) <= base
    assert base > law.params["E"]


@settings(max_examples=100, deadline=None)
@given(
    layers=st.integers(1, 120),
    extra_layers=st.integers(0, 40),
    width_units=st.integers(1, 128),
    tokens=token_counts,
)
def test_deeper_models_of_one_width_never_predict_higher_loss(
    law, layers, extra_layers, width_units, tokens
):
    hidden = 128 * width_units
    shallow = predict_loss(law, Architecture(layers=layers, hidden=hidden), tokens)
    deep = predict_loss(law, Architecture(layers=layers + extra_layers, hidden=hidden), tokens)
    assert deep <= shallow


def test_a_million_architectures_are_predicted_in_one_vectorised_call(law):
    # The < 1 s target is measured by benchmarks/scaling_fit.py, not timed here.
    rng = np.random.default_rng(0)
    count = 1_000_000
    heads = rng.choice([8, 16, 32, 64], count)
    layers = rng.integers(4, 128, count)
    ffn = heads * 128 * rng.choice([3, 4], count)
    kv_heads = heads // rng.choice([1, 4, 8], count)
    tokens = 10 ** rng.uniform(10, 13, count)
    arch = Architecture(
        layers=layers,
        hidden=heads * 128,
        ffn=ffn,
        heads=heads,
        kv_heads=kv_heads,
        gated_ffn=True,
        experts=8,
        top_k=2,
    )
    loss = predict_loss(law, arch, tokens)
    assert loss.shape == (count,) and np.all(np.isfinite(loss))
    one = Architecture(
        layers=arch.layers[11],
        hidden=arch.hidden[11],
        ffn=arch.ffn[11],
        heads=arch.heads[11],
        kv_heads=arch.kv_heads[11],
        gated_ffn=True,
        experts=8,
        top_k=2,
    )
    assert loss[11] == pytest.approx(float(predict_loss(law, one, tokens[11])), rel=1e-12)


def test_prediction_equals_the_closed_form_and_broadcasts(law):
    p = law.params
    params, tokens = np.array([1e8, 1e9, 1e10]), np.array([[1e10], [1e11]])
    expected = p["E"] + p["A"] / params ** p["alpha"] + p["B"] / tokens ** p["beta"]
    assert predict_loss(law, None, tokens, params=params) == pytest.approx(expected, rel=1e-12)
    assert predict_loss(law, None, 1e11, params=1e9).shape == ()


def test_interval_brackets_the_point_estimate(law):
    arch = Architecture(layers=24, hidden=2048)
    prediction = predict_loss_interval(law, arch, np.array([1e10, 1e11, 1e12]))
    assert np.all(prediction.lower <= prediction.loss)
    assert np.all(prediction.loss <= prediction.upper)
    assert np.all(prediction.upper - prediction.lower < 0.1)
    payload = predict_loss_interval(law, arch, 1e11).to_dict()
    assert payload["perplexity"] == pytest.approx(np.exp(payload["loss"]))
    assert payload["perplexity_lower"] == pytest.approx(np.exp(payload["loss_lower"]))


def test_moe_active_parameters_by_default_total_on_request(law):
    moe = Architecture(layers=16, hidden=2048, experts=8, top_k=1, gated_ffn=True)
    active = predict_loss(law, moe, 1e11)
    total = predict_loss(law, moe, 1e11, moe_parameters="total")
    assert total < active
    counts = moe.counts()
    assert active == pytest.approx(float(predict_loss(law, None, 1e11, params=counts.active)))


def test_precision_penalty_follows_kumar_effective_parameters(law):
    # 1 - exp(-4 / 2.6745) = 0.776: 4-bit weights act like 78% of the parameters.
    assert float(effective_parameter_fraction(4)) == pytest.approx(0.7759, abs=1e-4)
    assert float(effective_parameters(1e9, 16)) == pytest.approx(1e9)
    arch = Architecture(layers=24, hidden=2048)
    bits = np.array([2, 3, 4, 6, 8, 16])
    penalty = precision_loss_penalty(law, arch, 1e11, bits)
    assert penalty[-1] == pytest.approx(0.0, abs=1e-12)
    assert np.all(np.diff(penalty) < 0)  # fewer bits, larger penalty
    n = float(arch.counts().total)
    by_hand = law.params["A"] * ((n * float(effective_parameters(1, 4))) ** -law.params["alpha"])
    by_hand -= law.params["A"] * n ** -law.params["alpha"]
    assert penalty[2] == pytest.approx(by_hand, rel=1e-9)


def test_bad_prediction_inputs_are_input_errors(law):
    with pytest.raises(InputError, match="tokens must be a finite number > 0, got -1"):
        predict_loss(law, None, -1, params=1e9)
    with pytest.raises(InputError, match="give an architecture or params"):
        predict_loss(law, None, 1e10)
    with pytest.raises(InputError, match="weight_bits must be a number of bits > 0"):
        predict_loss(law, None, 1e10, params=1e9, weight_bits=0)
    shaped = ScalingLaw(
        form="chinchilla-shape",
        params={
            **law.params,
            "aspect_linear": 0.0,
            "aspect_quadratic": 0.0,
            "ffn_linear": 0.0,
            "ffn_quadratic": 0.0,
            "gqa_linear": 0.0,
        },
    )
    with pytest.raises(InputError, match="needs an architecture for its shape terms"):
        predict_loss(shaped, None, 1e10, params=1e9)
    arch = Architecture(layers=24, hidden=2048, heads=16, kv_heads=4)
    assert predict_loss(shaped, arch, 1e10) == pytest.approx(float(predict_loss(law, arch, 1e10)))
