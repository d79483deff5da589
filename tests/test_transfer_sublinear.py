"""The opt-in sublinear per-sequence cost of the transferable model (calibration.transfer
``theta``: a step of ``S`` sequences pays ``sigma x S ** theta``), its priors'
identifiability rule, its export through genz profiles, and the serving simulator's
refusal of it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_transfer import _rows
from test_transfer_profile import COMMAND, _sample

from calibration.transfer import (
    Layout,
    fit_transfer,
    predict_times,
    prior_arrays,
    prior_means,
)
from calibration.transfer_held_out import predict_rows
from calibration.transfer_priors import ONE_BATCH_THETA, PRIORS
from calibration.transfer_profile import fitted_stacks, generic_document, stack_document
from calibration.transfer_terms import build_terms, with_sublinear
from genz import Parallelism, Precision, load_model, runtime_from_dict, step_cost
from genz.runtime_phase import sequence_charge
from roofline import InputError, load_platform

SIGMA, THETA = 5e-4, 0.5
MODELS = ("llama-3.2-1b", "llama-3-8b")
LENGTHS = (128, 512)
#: Each set-up measured this many times (runs of a sweep), so the data outweigh priors.
REPEATS = 100


def _truth(stored):
    """Terms whose measured times are the model's own at per-sequence cost ``SIGMA`` and
    exponent ``THETA`` (every other parameter at its prior mean)."""
    terms = with_sublinear(build_terms(stored), True)
    layout = Layout.of(terms)
    params = prior_means(layout)
    params[layout.blocks["glob"].start + 3] = np.log(SIGMA)
    params[layout.blocks["theta_glob"]] = np.log(THETA)
    times = predict_times(terms, layout, params, with_source=False)
    return dataclasses.replace(terms, measured={k: v.copy() for k, v in times.items()})


def test_a_sublinear_truth_is_recovered_and_the_linear_fit_misses_large_batches():
    """Trained at batch 1-128, predicted at 512 and 2048: the exponent is recovered and
    the large batches predicted; the linear model (theta = 1) over-predicts them."""
    stored = []
    for model in MODELS:
        stored += _rows(
            model, "h100-sxm", "offline_generate", "lab", LENGTHS, (1, 8, 32, 128, 512, 2048)
        )
    stored *= REPEATS
    terms = _truth(stored)
    batches = np.array([item.row.batch for item in stored])
    train = batches <= 128
    fit = fit_transfer(terms, train)
    values = fit.row_terms()
    np.testing.assert_allclose(values["theta"], THETA, rtol=0.1)
    np.testing.assert_allclose(values["sigma"], SIGMA, rtol=0.25)
    measured = terms.measured["itl_s"]
    error = fit.predict(with_source=False)["itl_s"] / measured - 1
    assert np.max(np.abs(error[~train])) < 0.08
    linear = fit_transfer(with_sublinear(terms, False), train)
    missed = linear.predict(with_source=False)["itl_s"] / measured - 1
    assert np.mean(np.abs(missed[~train])) > 0.2
    assert np.mean(np.abs(missed[~train])) > 5 * np.mean(np.abs(error[~train]))


def test_a_stack_measured_at_one_batch_size_keeps_its_parents_exponent():
    stored = _rows("llama-3-8b", "h100-sxm", "offline_generate", "a", LENGTHS, (1, 8, 64))
    stored += _rows("llama-3-8b", "h100-sxm", "vendor_table", "b", LENGTHS, (32,))
    terms = with_sublinear(build_terms(stored), True)
    layout = Layout.of(terms)
    _, sd = prior_arrays(layout, PRIORS, terms, np.ones(len(terms), bool))
    single = terms.stack.names.index("vllm|vendor_table|undated")
    several = terms.stack.names.index("vllm|offline_generate|undated")
    theta_sd = sd[layout.blocks["theta_stack"]]
    assert theta_sd[single] == ONE_BATCH_THETA.sd
    assert theta_sd[several] == PRIORS["log_theta"].sd
    # the default model has no exponent blocks (its layout and numbers are unchanged)
    plain = Layout.of(with_sublinear(terms, False))
    assert plain.size == layout.size - 1 - len(terms.runtime.names) - len(terms.stack.names)


def test_sequence_charge_is_the_power_and_exactly_linear_at_one():
    sequences = np.array([0.0, 1.0, 4.0, 2429.0])
    np.testing.assert_array_equal(sequence_charge(sequences, 1.0), sequences)
    np.testing.assert_allclose(sequence_charge(sequences, 0.5), [0.0, 1.0, 2.0, 2429**0.5])


@pytest.fixture(scope="module")
def sublinear_fit():
    """A short fit with the exponent on the profile tests' sample, moved off the prior
    by noise (every stack's exponent differs from 1 and from the others)."""
    terms = with_sublinear(build_terms(_sample()), True)
    fit = fit_transfer(terms, np.ones(len(terms), bool), max_nfev=2)
    noise = np.random.default_rng(11).normal(0.0, 0.1, fit.params.shape)
    return dataclasses.replace(fit, params=fit.params + noise)


def test_profiles_with_the_exponent_predict_through_genz_what_the_model_predicts(
    sublinear_fit,
):
    fit = sublinear_fit
    expected = fit.predict(with_source=False)
    terms = fit.terms
    worst, checked = 0.0, 0
    for stack in fitted_stacks(fit):
        document = stack_document(fit, stack, COMMAND)
        assert document["decode"]["sequence_overhead_exponent"]["value"] != 1.0
        rows = terms.stack.index == terms.stack.names.index(stack)
        got = predict_rows(terms, rows, runtime_from_dict(document))
        for name, values in expected.items():
            worst = max(worst, float(np.max(np.abs(got[name][rows] / values[rows] - 1))))
            checked += int((rows & np.isfinite(terms.measured[name])).sum())
    assert checked > 50
    batches = np.array([item.row.batch for item in terms.stored])
    assert batches.max() >= 64  # the exponent matters on these rows
    assert worst < 1e-12


def test_the_serving_simulator_refuses_an_exponent_and_the_loader_bounds_it(sublinear_fit):
    document = generic_document(sublinear_fit, COMMAND)
    profile = runtime_from_dict(document)
    with pytest.raises(InputError, match="sequence_overhead_exponent"):
        step_cost(
            load_model("llama-3-8b"),
            load_platform("h100-sxm"),
            Precision(),
            Parallelism(),
            max_tokens=256,
            max_sequences=8,
            runtime=profile,
        )
    bad = {**document, "decode": {**document["decode"]}}
    bad["decode"]["sequence_overhead_exponent"] = {"value": 3.0, "calibrated_from": COMMAND}
    with pytest.raises(InputError, match=r"sequence_overhead_exponent: value must be .*0\.05, 2"):
        runtime_from_dict(bad)
