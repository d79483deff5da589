"""Compute-optimal allocation (`scaling_law.compute_optimal`) and the beta-prior law form."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from roofline import InputError
from scaling_law import (
    BESIROGLU_BETA,
    compute_optimal,
    fit_law,
    load_law,
    load_scaling_csv,
)
from scaling_law.compute_optimal import effective_n_coefficient

DATA = Path(__file__).resolve().parents[1] / "data" / "scaling"


def brute_force_params(law, flop: float) -> float:
    """N minimising the form's own loss at C = 6 N D, on a fine log grid, the shape at the
    law's preferred aspect (FFN ratio 4, no GQA: the reference point)."""
    params = np.geomspace(1e6, 1e13, 200_001)
    linear = law.params.get("aspect_linear", 0.0)
    quadratic = law.params.get("aspect_quadratic", 1.0)
    aspect = 128 * np.exp(-linear / (2 * quadratic))
    features = {
        "params": params,
        "tokens": flop / (6 * params),
        "aspect_ratio": np.full_like(params, aspect),
        "ffn_ratio": np.full_like(params, 4.0),
        "gqa_ratio": np.ones_like(params),
    }
    loss = law.law_form.log_loss(law.theta(), features)
    return float(params[np.argmin(loss)])


@pytest.mark.parametrize("name", ["gemstones_law.json", "chinchilla_law.json"])
@pytest.mark.parametrize("flop", [1e19, 1e22, 1e25])
def test_closed_form_matches_brute_force(name: str, flop: float) -> None:
    law = load_law(DATA / name)
    optimum = compute_optimal(law, flop)
    assert optimum.params[0] == pytest.approx(brute_force_params(law, flop), rel=2e-3)
    assert optimum.tokens[0] * optimum.params[0] * 6 == pytest.approx(flop)


def test_equal_exponents_give_constant_tokens_per_parameter() -> None:
    law = load_law(DATA / "chinchilla_law.json")
    params = dict(law.params, beta=law.params["alpha"])
    equal = dataclasses.replace(law, params=params, bootstrap_params=())
    ratios = compute_optimal(equal, np.geomspace(1e18, 1e26, 9)).tokens_per_parameter
    expected = (params["B"] / params["A"]) ** (1 / params["alpha"])
    np.testing.assert_allclose(ratios, expected, rtol=1e-9)


def test_shipped_law_tokens_per_parameter_falls_with_compute() -> None:
    """beta > alpha: D/N falls with C, about 20x over six decades (issue #27's 48 -> 2.3)."""
    law = load_law(DATA / "gemstones_law.json")
    assert law.params["beta"] > law.params["alpha"]
    optimum = compute_optimal(law, 10.0 ** np.arange(19, 26))
    assert np.all(np.diff(optimum.tokens_per_parameter) < 0)
    assert optimum.tokens_per_parameter[0] == pytest.approx(47.8, abs=0.1)
    assert optimum.tokens_per_parameter[-1] == pytest.approx(2.3, abs=0.1)
    assert np.all(optimum.tokens_per_parameter_low < optimum.tokens_per_parameter)
    assert np.all(optimum.tokens_per_parameter < optimum.tokens_per_parameter_high)


def test_beta_prior_law_holds_beta_and_stays_near_constant() -> None:
    law = load_law(DATA / "gemstones_law_beta_prior.json")
    assert law.params["beta"] == BESIROGLU_BETA
    assert "beta" in law.fixed
    ratios = compute_optimal(law, 10.0 ** np.arange(19, 26)).tokens_per_parameter
    assert ratios[0] / ratios[-1] < 3  # the free fit's falls 20x


def test_beta_prior_fit_holds_beta() -> None:
    data = load_scaling_csv("gemstones_cooldown_end")
    fit = fit_law(
        data,
        "chinchilla-shape-beta-prior",
        n_starts=2,
        bootstrap=0,
        cross_validation=None,
        progress=False,
    )
    assert fit.params["beta"] == BESIROGLU_BETA
    assert fit.params["alpha"] == pytest.approx(0.331, abs=0.01)


def test_effective_coefficient_without_interior_minimum_is_a() -> None:
    assert effective_n_coefficient({"A": 5.0, "aspect_linear": 0.1, "aspect_quadratic": 0.0}) == 5.0
    assert effective_n_coefficient({"A": 5.0}) == 5.0


def test_bad_inputs_are_refused() -> None:
    law = load_law(DATA / "gemstones_law.json")
    with pytest.raises(InputError, match="flop"):
        compute_optimal(law, -1.0)
    other = load_law(DATA / "gemstones_forms" / "gemstones-wdt.json")
    with pytest.raises(InputError, match="compute-optimal"):
        compute_optimal(other, 1e21)
