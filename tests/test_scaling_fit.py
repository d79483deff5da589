"""fit_law on synthetic data: known parameters recovered, the solver contract, pluggable forms."""

import numpy as np
import pytest

from roofline.errors import InputError
from scaling_law.architecture import Architecture
from scaling_law.data import ScalingData
from scaling_law.fit import FitResult, fit_law
from scaling_law.forms import LawForm, register_form
from scaling_law.objective import SUPPORTED_METHODS

TRUE = {"A": 400.0, "B": 1500.0, "E": 1.7, "alpha": 0.33, "beta": 0.30}


def chinchilla_runs(points: int = 80, noise: float = 0.003, seed: int = 1) -> ScalingData:
    """Runs drawn from L = E + A/N^alpha + B/D^beta with lognormal noise of ``noise``."""
    rng = np.random.default_rng(seed)
    params = 10 ** rng.uniform(7.5, 10.5, points)
    tokens = 10 ** rng.uniform(9, 12, points)
    loss = TRUE["E"] + TRUE["A"] / params ** TRUE["alpha"] + TRUE["B"] / tokens ** TRUE["beta"]
    loss = loss * np.exp(noise * rng.standard_normal(points))
    return ScalingData.from_columns({"params": params, "tokens": tokens, "loss": loss})


@pytest.fixture(scope="module")
def synthetic_fit() -> FitResult:
    return fit_law(chinchilla_runs(), n_starts=8, bootstrap=40, progress=False, seed=3)


def test_known_parameters_are_recovered_within_intervals(synthetic_fit):
    fit = synthetic_fit
    assert fit.success and fit.status == 0
    for name, true in TRUE.items():
        low, high = fit.intervals[name]
        assert low <= true <= high, name
        assert fit.params[name] == pytest.approx(true, rel=0.15), name
    assert fit.params["E"] == pytest.approx(TRUE["E"], abs=0.03)
    assert fit.params["alpha"] == pytest.approx(TRUE["alpha"], abs=0.02)
    # The noise is 0.3% in log space; the fit's residual RMSE must be near it.
    assert 0.002 < fit.residuals.rmse_log_loss < 0.004
    assert fit.cross_validation.rmse_log_loss < 0.006


@pytest.mark.parametrize("method", SUPPORTED_METHODS)
def test_solver_contract_holds_for_every_method(method):
    fit = fit_law(
        chinchilla_runs(points=50),
        method=method,
        n_starts=3,
        bootstrap=4,
        cross_validation=3,
        progress=False,
    )
    assert isinstance(fit, FitResult)
    assert fit.success is True and fit.status == 0
    assert isinstance(fit.message, str) and fit.message
    assert fit.method == method
    assert set(fit.params) == set(TRUE)
    assert all(np.isfinite(value) for value in fit.params.values())
    assert all(low <= fit.params[n] <= high for n, (low, high) in fit.intervals.items())
    assert fit.bootstrap_replicates + fit.bootstrap_failures == 4
    assert fit.cross_validation.folds == 3 and fit.cross_validation.kind == "k-fold"
    assert fit.residuals.points == 50 and len(fit.residuals.worst) == 5
    assert fit.law.metadata["fit"]["method"] == method
    assert fit.params["beta"] == pytest.approx(TRUE["beta"], abs=0.05)


def test_methods_agree_on_the_minimum():
    data = chinchilla_runs(points=50)
    objectives = [
        fit_law(data, method=m, n_starts=3, bootstrap=0, cross_validation=None, progress=False)
        for m in SUPPORTED_METHODS
    ]
    values = [fit.objective for fit in objectives]
    assert max(values) - min(values) < 1e-6 * min(values)


def test_fit_is_deterministic_given_the_seed():
    data = chinchilla_runs(points=40)
    options = {"n_starts": 2, "bootstrap": 6, "cross_validation": 4, "progress": False}
    first = fit_law(data, seed=5, **options)
    again = fit_law(data, seed=5, **options)
    other = fit_law(data, seed=6, **options)
    assert first.law == again.law
    assert first.law.bootstrap_params != other.law.bootstrap_params


def test_leave_one_out_and_dropping_highest_losses():
    data = chinchilla_runs(points=30)
    fit = fit_law(
        data, n_starts=2, bootstrap=0, cross_validation="loo", drop_highest_loss=3, progress=False
    )
    assert fit.points == 27 and fit.excluded == 3
    assert fit.cross_validation.kind == "leave-one-out" and fit.cross_validation.folds == 27
    assert fit.intervals["A"] is None and fit.standard_errors["A"] is None
    assert max(data.loss[np.argsort(data.loss)[:27]]) < min(np.sort(data.loss)[-3:])


def shaped_runs(points: int = 300, seed: int = 2) -> tuple[ScalingData, dict[str, float]]:
    """Runs whose N term carries the chinchilla-shape penalty with known coefficients."""
    rng = np.random.default_rng(seed)
    shape = {
        "aspect_linear": 0.05,
        "aspect_quadratic": 0.08,
        "ffn_linear": -0.10,
        "ffn_quadratic": 0.20,
        "gqa_linear": 0.04,
    }
    heads = rng.choice([4, 8, 16, 32], points)
    layers = rng.integers(4, 64, points)
    hidden = heads * 64 * rng.choice([1, 2, 4], points)
    ffn = (hidden * rng.uniform(2.0, 8.0, points)).round()
    kv_heads = heads // rng.choice([1, 2, 4], points)
    arch = Architecture(layers=layers, hidden=hidden, ffn=ffn, heads=heads, kv_heads=kv_heads)
    params = arch.counts().total
    tokens = 10 ** rng.uniform(9, 12, points)
    u, v, w = np.log(arch.aspect_ratio / 128), np.log(arch.ffn_ratio / 4), np.log(arch.gqa_ratio)
    s = (
        shape["aspect_linear"] * u
        + shape["aspect_quadratic"] * u**2
        + shape["ffn_linear"] * v
        + shape["ffn_quadratic"] * v**2
        + shape["gqa_linear"] * w
    )
    loss = (
        TRUE["E"]
        + TRUE["A"] * np.exp(s) / params ** TRUE["alpha"]
        + TRUE["B"] / tokens ** TRUE["beta"]
    )
    loss = loss * np.exp(0.002 * rng.standard_normal(points))
    columns = {
        "layers": layers,
        "hidden": hidden,
        "ffn": ffn,
        "heads": heads,
        "kv_heads": kv_heads,
        "tokens": tokens,
        "loss": loss,
    }
    return ScalingData.from_columns(columns), shape


def test_shape_coefficients_are_recovered_from_synthetic_runs():
    data, shape = shaped_runs()
    fit = fit_law(
        data, "chinchilla-shape", n_starts=6, bootstrap=0, cross_validation=None, progress=False
    )
    assert fit.success
    assert fit.law.fixed == ()
    for name, true in shape.items():
        assert fit.params[name] == pytest.approx(true, abs=0.02), name
    assert fit.params["alpha"] == pytest.approx(TRUE["alpha"], abs=0.02)


def test_shape_terms_without_shape_variation_are_fixed_not_faked():
    data, _ = shaped_runs(points=60)
    constant = {name: values for name, values in data.columns.items()}
    constant["kv_heads"] = constant["heads"]  # every run multi-head: GQA not identifiable
    constant["ffn"] = 4 * constant["hidden"]  # one FFN ratio: FFN terms not identifiable
    fit = fit_law(
        ScalingData.from_columns(constant),
        "chinchilla-shape",
        n_starts=3,
        bootstrap=3,
        cross_validation=None,
        progress=False,
    )
    assert set(fit.law.fixed) == {"ffn_linear", "ffn_quadratic", "gqa_linear"}
    for name in fit.law.fixed:
        assert fit.params[name] == 0.0
        assert fit.intervals[name] is None and fit.standard_errors[name] is None
    assert fit.intervals["aspect_linear"] is not None


def test_shape_form_needs_architecture_columns():
    with pytest.raises(InputError, match="needs architecture columns layers and hidden"):
        fit_law(chinchilla_runs(points=20), "chinchilla-shape", progress=False)


def _saturating_log_loss(theta, features):
    e, a, alpha = theta
    return np.log(np.exp(e) + np.exp(a) * features["params"] ** -alpha)


def test_a_registered_form_is_fitted_by_the_same_machinery():
    form = register_form(
        LawForm(
            name="test-params-only",
            parameter_names=("e", "a", "alpha"),
            public_names=("e", "a", "alpha"),
            log_loss=_saturating_log_loss,
            initial_grid=np.array([[0.0, 5.0, 0.5], [1.0, 3.0, 0.2], [0.5, 8.0, 0.4]]),
            bounds=((None, None), (None, None), (0.0, 5.0)),
        ),
        replace=True,
    )
    rng = np.random.default_rng(4)
    params = 10 ** rng.uniform(7, 11, 60)
    loss = (np.exp(0.6) + np.exp(6.0) * params**-0.3) * np.exp(0.002 * rng.standard_normal(60))
    data = ScalingData.from_columns({"params": params, "tokens": np.full(60, 1e10), "loss": loss})
    fit = fit_law(data, form, n_starts=3, bootstrap=5, cross_validation=None, progress=False)
    assert fit.success and fit.law.form == "test-params-only"
    assert fit.params["e"] == pytest.approx(0.6, abs=0.02)
    assert fit.params["alpha"] == pytest.approx(0.3, abs=0.02)
    with pytest.raises(InputError, match="already registered"):
        register_form(form)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"method": "CG"}, "unknown method 'CG'; accepted: L-BFGS-B, BFGS, Nelder-Mead"),
        ({"form": "kaplan"}, "unknown form 'kaplan'; accepted: chinchilla"),
        ({"bootstrap": -1}, "bootstrap must be an integer >= 0"),
        ({"cross_validation": 1}, "cross_validation must be an integer >= 2, 'loo'"),
        ({"drop_highest_loss": 9}, "drop_highest_loss must be < the number of runs (9)"),
        ({"confidence": 1.0}, "confidence must be in (0, 1)"),
        ({"huber_delta": 0}, "huber_delta must be a finite number > 0"),
        ({"grid": np.zeros((2, 3))}, "grid must have shape (g, 5)"),
    ],
)
def test_bad_options_are_input_errors(options, fragment):
    data = chinchilla_runs(points=9)
    with pytest.raises(InputError) as info:
        fit_law(data, progress=False, **options)
    assert fragment in str(info.value)


def test_too_few_runs_for_the_parameters():
    with pytest.raises(InputError, match="4 runs cannot fit 5 parameters"):
        fit_law(chinchilla_runs(points=4), progress=False)


def test_progress_bar_goes_to_stderr_and_can_be_disabled(capsys):
    data = chinchilla_runs(points=20)
    fit_law(data, n_starts=1, bootstrap=1, cross_validation=None, progress=True)
    shown = capsys.readouterr()
    assert "fit chinchilla" in shown.err and shown.out == ""
    fit_law(data, n_starts=1, bootstrap=1, cross_validation=None, progress=False)
    assert capsys.readouterr().err == ""
