"""Gemstones-form shape laws: synthetic recovery, leave-one-architecture-out folds, bootstrap
by architecture, the law's domain and its extrapolation flags."""

import numpy as np
import pytest

from roofline.errors import InputError
from scaling_law.architecture import Architecture
from scaling_law.data import ScalingData, load_scaling_csv
from scaling_law.diagnostics import cross_validate, fold_indices
from scaling_law.fit import fit_law
from scaling_law.law import extrapolation, predict_loss, predict_loss_interval
from scaling_law.law_io import law_from_dict, law_to_dict

TRUE = {
    "A_width": 30.0,
    "A_depth": 2.0,
    "A_tokens": 5000.0,
    "E": 1.6,
    "alpha_width": 0.45,
    "alpha_depth": 0.35,
    "alpha_tokens": 0.4,
}
WIDTHS = (256, 512, 768, 1024, 1536, 2048)
DEPTHS = (4, 8, 16, 32, 48)


def shape_runs(noise: float = 0.002, seed: int = 5) -> ScalingData:
    """Every width x depth of the grid at 6 checkpoints, losses from the TRUE law."""
    rng = np.random.default_rng(seed)
    width, depth, tokens = (
        np.array(axis, dtype=float).ravel()
        for axis in np.meshgrid(WIDTHS, DEPTHS, np.geomspace(2e9, 1e11, 6), indexing="ij")
    )
    loss = (
        TRUE["E"]
        + TRUE["A_width"] * width ** -TRUE["alpha_width"]
        + TRUE["A_depth"] * depth ** -TRUE["alpha_depth"]
        + TRUE["A_tokens"] * tokens ** -TRUE["alpha_tokens"]
    ) * np.exp(noise * rng.standard_normal(width.size))
    params = depth * 12 * width**2 + 2 * 32000 * width
    return ScalingData.from_columns(
        {"width": width, "depth": depth, "params": params, "tokens": tokens, "loss": loss}
    )


@pytest.fixture(scope="module")
def shape_fit():
    return fit_law(
        shape_runs(),
        "gemstones-wdt",
        n_starts=4,
        bootstrap=8,
        bootstrap_unit="architecture",
        cross_validation="architecture",
        progress=False,
    )


def test_known_shape_exponents_are_recovered(shape_fit):
    assert shape_fit.success
    for name in ("alpha_width", "alpha_depth", "alpha_tokens"):
        assert shape_fit.params[name] == pytest.approx(TRUE[name], abs=0.05), name
    assert shape_fit.params["E"] == pytest.approx(TRUE["E"], abs=0.05)
    # 0.2% noise: held-out error of a right form stays near the noise, in-sample below it.
    assert shape_fit.residuals.mape_loss < 0.25
    assert shape_fit.cross_validation.mape_loss < 0.35


def test_leave_one_architecture_out_reports_every_run(shape_fit):
    cv = shape_fit.cross_validation
    assert cv.kind == "leave-one-architecture-out"
    assert cv.folds == len(WIDTHS) * len(DEPTHS) == len(cv.per_group)
    assert {group.points for group in cv.per_group} == {6}
    assert {group.label for group in cv.per_group} == {f"{w}x{d}" for w in WIDTHS for d in DEPTHS}


def test_architecture_folds_hold_out_all_rows_of_one_run_and_train_on_no_row_of_it():
    data = shape_runs()
    groups, _ = data.run_groups()
    folds = fold_indices(len(data), "architecture", np.random.default_rng(0), groups)
    seen = []

    def spy(train, test):
        assert np.unique(groups[test]).size == 1
        held = groups[test][0]
        assert set(test) == set(np.flatnonzero(groups == held))  # every checkpoint of it
        assert not np.any(groups[train] == held)  # and none of it in training
        seen.append(held)
        return data.loss[test]

    report = cross_validate(data.loss, folds, spy, "leave-one-architecture-out", None)
    assert sorted(seen) == list(range(len(WIDTHS) * len(DEPTHS)))
    assert report.mape_loss == 0


def test_bootstrap_by_architecture_spreads_more_than_the_point_noise(shape_fit):
    law = shape_fit.law
    assert len(law.bootstrap_params) == 8
    assert law.metadata["fit"]["bootstrap_unit"] == "architecture"
    low, high = law.intervals["alpha_depth"]
    assert low < high


def test_law_domain_records_data_ranges_and_flags_extrapolation(shape_fit):
    law = shape_fit.law
    assert law.domain["width"] == (256.0, 2048.0)
    assert law.domain["depth"] == (4.0, 48.0)
    assert law.domain["tokens"][0] == pytest.approx(2e9)
    inside = Architecture(layers=16, hidden=1024, vocab=32000)
    deep = Architecture(layers=96, hidden=1024, vocab=32000)
    assert not extrapolation(law, inside, 1e10, params=1e8)[0]
    flags, outside = extrapolation(law, deep, 1e10, params=1e8)
    assert flags and outside == ("depth",)
    flags, outside = extrapolation(law, inside, 1e13, params=1e8)
    assert flags and set(outside) == {"tokens", "tokens_per_parameter"}
    grid = Architecture(layers=np.array([16, 96]), hidden=1024, vocab=32000)
    prediction = predict_loss_interval(law, grid, 1e10, params=1e8)
    assert prediction.extrapolated.tolist() == [False, True]
    assert prediction.to_dict()["outside_domain"] == ["depth"]
    restored = law_from_dict(law_to_dict(law))
    assert restored.domain == law.domain
    # The prediction of the Gemstones form uses width and depth, not N.
    assert predict_loss(law, inside, 1e10) == pytest.approx(
        predict_loss(law, inside, 1e10, params=5e8)
    )


def test_domain_must_name_known_quantities(shape_fit):
    document = law_to_dict(shape_fit.law)
    document["domain"]["heads"] = [1, 2]
    with pytest.raises(InputError, match="unknown quantity 'heads'"):
        law_from_dict(document)


def test_gemstones_tables_load_with_shipped_constants():
    data = load_scaling_csv("gemstones_cooldown_end")
    _, labels = data.run_groups()
    assert len(labels) == 17 and "768x3" in labels and len(data) == 169
    features = data.law_features(include_embeddings=False)
    embedding = 2 * 50304 * data.columns["hidden"]
    assert np.allclose(features["params"], data.columns["params"] - embedding)
    assert set(data.columns) >= {"seconds_per_step", "num_nodes", "step", "vocab"}
    with pytest.raises(InputError, match="non-embedding parameter counts need"):
        ScalingData.from_columns({"params": [1e9], "tokens": [1e10], "loss": [3.0]}).law_features(
            include_embeddings=False
        )


def test_power_sum_start_grid_is_the_product_of_its_axes_in_order():
    """The vectorised start grid equals ``itertools.product`` row for row (the order the
    fit's grid search and its tie-breaking depend on), and the registered grids have
    the sizes the module's docstring states."""
    import itertools

    from scaling_law.power_sum import GEMSTONES_WDPT, GEMSTONES_WDT, power_sum_grid

    exponents, coefficients, offsets = np.array([0.0, 0.5]), np.array([0.0, 5.0, 10.0]), [-1, 1]
    grid = power_sum_grid(2, exponents, coefficients, offsets)
    brute = np.array(
        list(itertools.product(coefficients, coefficients, offsets, exponents, exponents)),
        dtype=float,
    )
    assert grid.dtype == float and np.array_equal(grid, brute)
    assert GEMSTONES_WDT.initial_grid.shape == (135_000, 7)
    assert GEMSTONES_WDPT.initial_grid.shape == (480_000, 9)
