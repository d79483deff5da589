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


@pytest.fixture(scope="module", params=["plain", "harness", "capped"])
def sublinear_fit(request):
    """A short fit with the exponent (each variant: plain, with a harness level, capped
    at 1) on the profile tests' sample, moved off the prior by noise (every stack's
    exponent differs from the others, and from 1 unless capped there)."""
    variant = request.param
    terms = with_sublinear(
        build_terms(_sample()), True, harness=variant == "harness", capped=variant == "capped"
    )
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
        exponent = document["decode"].get("sequence_overhead_exponent", {"value": 1.0})
        if terms.theta_capped:
            assert exponent["value"] <= 1.0
        else:
            assert exponent["value"] != 1.0
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


def _runtime_rows(runtime, harness, source, batches=(1, 8, 32, 128, 512)):
    """`_rows` of one 8B model on one device, with ``runtime`` for vLLM."""
    rows = _rows("llama-3-8b", "h100-sxm", harness, source, LENGTHS, batches)
    return [
        dataclasses.replace(item, row=dataclasses.replace(item.row, runtime=runtime))
        for item in rows
    ]


def test_a_held_out_source_of_a_known_harness_gets_its_harness_exponent():
    """Vendor tables scale as ``S ** 0.5``, servers linearly, on three runtimes; a fourth
    runtime's vendor table (no row of its runtime or stack fitted) is predicted with the
    vendor tables' exponent under the harness level, with a mix of both without it."""
    truth_theta = {"vendor_table": 0.5, "server_load": 1.0}
    stored = []
    for runtime in ("vllm", "sglang", "mlc"):
        for harness in truth_theta:
            stored += _runtime_rows(runtime, harness, f"{runtime}-{harness}") * 10
    stored += _runtime_rows("tensorrt-llm", "vendor_table", "held-out")
    terms = with_sublinear(build_terms(stored), True, harness=True)
    layout = Layout.of(terms)
    params = prior_means(layout)
    params[layout.blocks["glob"].start + 3] = np.log(SIGMA)
    for harness, theta in truth_theta.items():
        params[layout.blocks["theta_harness"].start + terms.harness.names.index(harness)] = np.log(
            theta
        )
    times = predict_times(terms, layout, params, with_source=False)
    terms = dataclasses.replace(terms, measured={k: v.copy() for k, v in times.items()})
    test = np.array([item.info.source_id == "held-out" for item in stored])
    measured = terms.measured["itl_s"][test]
    fitted, errors = {}, {}
    for name, harness in (("harness", True), ("plain", False)):
        fit = fit_transfer(with_sublinear(terms, True, harness=harness), ~test)
        fitted[name] = fit.row_terms()["theta"][test]
        errors[name] = np.abs(fit.predict(with_source=False)["itl_s"][test] / measured - 1)
    # the harness level takes most of the vendor tables' exponent (the stacks, shrunk
    # less than it, keep the rest), the global one a mix of both truths
    distance = {name: np.abs(np.log(values / 0.5)) for name, values in fitted.items()}
    assert np.all(distance["harness"] < 0.25)
    assert np.all(distance["plain"] > 2 * distance["harness"])
    assert np.mean(errors["harness"]) < 0.2 * np.mean(errors["plain"])


def test_the_capped_exponent_stays_at_one_where_the_uncapped_fit_goes_above():
    """A truth above linear (``theta = 1.3``): the uncapped fit follows it, the capped
    one stops at exactly 1 (the linear cost, so genz profiles carry no exponent); a
    truth below it (``theta = 0.5``) the capped fit finds as the free one does."""
    stored = _runtime_rows("vllm", "offline_generate", "lab") * 50
    terms = with_sublinear(build_terms(stored), True)
    layout = Layout.of(terms)
    params = prior_means(layout)
    params[layout.blocks["glob"].start + 3] = np.log(SIGMA)
    params[layout.blocks["theta_glob"]] = np.log(1.3)
    times = predict_times(terms, layout, params, with_source=False)
    terms = dataclasses.replace(terms, measured={k: v.copy() for k, v in times.items()})
    train = np.ones(len(terms), bool)
    free = fit_transfer(terms, train).row_terms()["theta"]
    capped = fit_transfer(with_sublinear(terms, True, capped=True), train).row_terms()["theta"]
    assert np.all(free > 1.2)
    np.testing.assert_array_equal(capped, 1.0)
    # below the cap a sublinear truth is still found (the fit starts inside the cap)
    params[layout.blocks["theta_glob"]] = np.log(THETA)
    times = predict_times(terms, layout, params, with_source=False)
    terms = dataclasses.replace(terms, measured={k: v.copy() for k, v in times.items()})
    free = fit_transfer(terms, train).row_terms()["theta"]
    capped = fit_transfer(with_sublinear(terms, True, capped=True), train).row_terms()["theta"]
    assert np.all(free < 0.8)
    np.testing.assert_allclose(capped, free, rtol=1e-3)
    with pytest.raises(ValueError, match="sublinear"):
        with_sublinear(terms, False, capped=True)
