"""Alternative PTQ forms (`scaling_law.ptq_forms`): each recovers the law it generated,
the held-out scorer is unbiased on rows on the law, and bad input is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from roofline import InputError
from scaling_law import KUMAR_PTQ, predict_delta
from scaling_law.ptq_data import PtqRows
from scaling_law.ptq_forms import (
    FORMS,
    FormFit,
    fit_form,
    hold_out_form,
    reducible_loss,
    shift_on_kumar_range,
)

#: (model, family, N, D); every model has k-quant rows at 3-6 bits.
MODELS = (
    ("a", "f1", 1e9, 1e12),
    ("b", "f1", 3e9, 4e12),
    ("c", "f2", 1e10, 2e12),
    ("d", "f2", 3e10, 1.5e13),
    ("e", "f3", 1e11, 7e12),
)
QUANTS = {"Q3_K_M": 3.0, "Q4_K_M": 4.0, "Q5_K_M": 5.0, "Q6_K": 6.0}


def rows_from(delta_of) -> PtqRows:
    """Rows of `MODELS` x `QUANTS` whose degradation is ``delta_of(rows)``."""
    cells = [(m, q) for m in MODELS for q in QUANTS]
    count = len(cells)
    grid = PtqRows(
        tuple(m[0] for m, _ in cells), tuple(m[1] for m, _ in cells),
        tuple(q for _, q in cells), np.array([m[2] for m, _ in cells]),
        np.array([m[3] for m, _ in cells]), np.array([QUANTS[q] for _, q in cells]),
        np.full(count, 5.0), np.full(count, 5.0), ("s",) * count, ("t",) * count,
        ("2026-12-04",) * count, Path("synthetic.csv"),
    )  # fmt: skip
    delta = delta_of(grid)
    return PtqRows(
        grid.model, grid.family, grid.quant_type, grid.params, grid.tokens, grid.bits,
        grid.ppl_16, 5.0 * np.exp(delta), grid.source, grid.source_table, grid.date_read,
        grid.path,
    )  # fmt: skip


def kumar(rows: PtqRows) -> np.ndarray:
    return predict_delta(KUMAR_PTQ, rows)


def test_kumar_free_recovers_kumars_constants() -> None:
    fit = fit_form("kumar-free", rows_from(kumar))
    expected = [np.log(KUMAR_PTQ.c_t), KUMAR_PTQ.gamma_d, KUMAR_PTQ.gamma_n]
    np.testing.assert_allclose(fit.theta[:3], expected, rtol=1e-8)
    assert fit.theta[3] == pytest.approx(1 / KUMAR_PTQ.gamma_post)
    assert shift_on_kumar_range(fit) == pytest.approx((1.0, 1.0))


def test_recalibration_moves_only_the_scale() -> None:
    fit = fit_form("kumar-recal", rows_from(lambda r: 2.0 * kumar(r)))
    assert np.exp(fit.theta[0]) == pytest.approx(2.0 * KUMAR_PTQ.c_t)
    assert shift_on_kumar_range(fit) == pytest.approx((2.0, 2.0))
    flatter = lambda r: kumar(r) * (r.params / 1e9) ** 0.2  # noqa: E731  gamma_N 0.2 lower
    fit = fit_form("kumar-hold-D", rows_from(flatter))
    assert fit.theta[1] == pytest.approx(KUMAR_PTQ.gamma_n - 0.2)


def test_two_regime_finds_its_break_and_base_loss_its_exponent() -> None:
    above = lambda r: kumar(r) * np.exp(-0.2 * np.maximum(0.0, np.log(r.params / 1e10)))  # noqa: E731
    fit = fit_form("two-regime-N", rows_from(above))
    assert fit.n_break == 1e10 and fit.theta[3] == pytest.approx(0.2)
    base = lambda r: 0.5 * reducible_loss(r.params, r.tokens) ** -1.5 * np.exp(-r.bits)  # noqa: E731
    fit = fit_form("base-loss", rows_from(base))
    np.testing.assert_allclose(fit.theta, [np.log(0.5), 1.5, 1.0], rtol=1e-8)


def test_huber_keeps_one_outlier_from_moving_the_fit() -> None:
    rows = rows_from(kumar)
    delta = rows.delta.copy()
    delta[0] *= 20.0  # one row 3 nats of log residual off the law
    spoiled = PtqRows(
        rows.model, rows.family, rows.quant_type, rows.params, rows.tokens, rows.bits,
        rows.ppl_16, rows.ppl_16 * np.exp(delta), rows.source, rows.source_table,
        rows.date_read, rows.path,
    )  # fmt: skip
    fit = fit_form("kumar-free", spoiled)
    ratio = fit.predict(rows.take(np.arange(1, len(rows)))) / rows.delta[1:]
    assert np.median(np.abs(np.log(ratio))) < 0.05


@pytest.mark.parametrize("by", ["model", "family"])
def test_held_out_scores_are_one_on_the_law_and_show_a_fragile_model(by: str) -> None:
    assert hold_out_form(rows_from(kumar), kumar, by) == pytest.approx({m[0]: 1.0 for m in MODELS})
    for form in ("kumar-free", "kumar-recal"):
        assert hold_out_form(rows_from(kumar), form, by) == pytest.approx(
            {m[0]: 1.0 for m in MODELS}, rel=1e-6
        )
    fragile = rows_from(lambda r: kumar(r) * np.where(np.array(r.model) == "c", 3.0, 1.0))
    assert hold_out_form(fragile, kumar, by)["c"] == pytest.approx(1 / 3)


def test_bad_input_is_refused() -> None:
    rows = rows_from(kumar)
    with pytest.raises(InputError, match="is not one of kumar-free"):
        fit_form("cubic", rows)
    with pytest.raises(InputError, match="hold out by"):
        hold_out_form(rows, "kumar-free", "size")
    with pytest.raises(InputError, match="needs more than 5 rows"):
        fit_form("two-regime-N", rows.take(np.arange(4)))
    assert set(FORMS) >= {"kumar-free", "base-loss"} and isinstance(
        fit_form("kumar-recal", rows), FormFit
    )


def test_post_trained_factor_touches_only_post_trained_checkpoints() -> None:
    rows = rows_from(kumar)
    named = PtqRows(
        tuple(m + "-Instruct" if m in ("b", "d") else m for m in rows.model), rows.family,
        rows.quant_type, rows.params, rows.tokens, rows.bits, rows.ppl_16,
        rows.ppl_16 * np.exp(rows.delta * np.where(np.isin(rows.model, ["b", "d"]), 0.5, 1.0)),
        rows.source, rows.source_table, rows.date_read, rows.path,
    )  # fmt: skip
    fit = fit_form("post-trained", named)
    assert np.exp(fit.theta[0]) == pytest.approx(0.5)
    base = named.take(np.array([not m.endswith("-Instruct") for m in named.model]))
    np.testing.assert_allclose(fit.predict(base), kumar(base), rtol=1e-12)
    assert shift_on_kumar_range(fit) == pytest.approx((1.0, 1.0))
