"""PTQ constants against published perplexities (issue #13): the data file, the fit,
identifiability, leave-one-model-out, and the choice of default constants."""

import itertools
import json

import numpy as np
import pytest

from roofline.errors import InputError
from scaling_law import (
    DEFAULT_PTQ,
    KUMAR_PTQ,
    PTQ_FORM,
    PtqConstants,
    fit_ptq,
    leave_one_model_out,
    load_ptq_constants,
    load_ptq_rows,
    predict_delta,
    ptq_degradation,
    ptq_errors,
)
from scaling_law.ptq_data import PTQ_COLUMNS, PtqRows, ptq_fitted_path
from scaling_law.ptq_fit import fittable

TRUE = PtqConstants(c_t=2.0, gamma_d=0.3, gamma_n=0.4, gamma_post=0.7, source="synthetic")


def _synthetic(params, tokens, bits, constants=TRUE) -> PtqRows:
    grid = list(itertools.product(params, tokens, bits))
    n, d, b = (np.array(column, dtype=float) for column in zip(*grid, strict=True))
    delta = ptq_degradation(n, d, b, constants)
    ppl_16 = np.full(len(n), 6.0)
    names = tuple(f"{x:g}/{y:g}" for x, y in zip(n, d, strict=True))
    text = tuple("x" for _ in n)
    return PtqRows(
        names, text, text, n, d, b, ppl_16, ppl_16 * np.exp(delta), text, text, text, None
    )  # type: ignore[arg-type]


def test_fit_recovers_known_constants_from_synthetic_rows():
    rows = _synthetic([1e8, 1e9, 1e10], [1e10, 1e11, 1e12], [3.0, 4.0, 5.0, 6.0])
    fit = fit_ptq(rows)
    assert fit.fixed == {} and fit.converged and fit.condition < 30
    got = fit.constants
    for name in ("c_t", "gamma_d", "gamma_n", "gamma_post"):
        assert getattr(got, name) == pytest.approx(getattr(TRUE, name), rel=1e-5)


def test_one_token_count_leaves_gamma_d_unidentified_and_held_at_the_reference():
    rows = _synthetic([1e8, 1e9, 1e10], [1e11], [3.0, 4.0, 5.0, 6.0])
    fit = fit_ptq(rows, KUMAR_PTQ)
    assert fit.condition_all_free == np.inf
    assert fit.fixed == {"gamma_d": KUMAR_PTQ.gamma_d} and "gamma_d" in fit.fixed_reason
    assert fit.constants.gamma_d == KUMAR_PTQ.gamma_d
    # The rest is still identified: gamma_n and gamma_post come back exactly; c_t absorbs
    # the held exponent at the one D.
    assert fit.constants.gamma_n == pytest.approx(TRUE.gamma_n, rel=1e-5)
    assert fit.constants.gamma_post == pytest.approx(TRUE.gamma_post, rel=1e-5)
    kept = fittable(rows)
    assert predict_delta(fit.constants, kept) == pytest.approx(kept.delta, rel=1e-5)


def test_hold_names_are_checked():
    rows = _synthetic([1e8, 1e9], [1e10, 1e11], [3.0, 4.0])
    with pytest.raises(InputError, match="hold: unknown exponent 'gamma_x'"):
        fit_ptq(rows, hold=("gamma_x",))


def test_shipped_table_loads_with_a_source_and_date_on_every_row():
    rows = load_ptq_rows()
    assert len(rows) == 40
    assert set(rows.model) == {
        "LLaMA-1 7B",
        "LLaMA-1 13B",
        "Llama-2 7B",
        "Llama-2 70B",
        "Llama-3 8B",
    }
    assert all("github.com" in source for source in rows.source)
    assert all(date == "2026-12-03" for date in rows.date_read)
    assert np.all(rows.delta > 0) and np.all(rows.bits < 16)
    # ln(PPL_q / PPL_16) by hand for one row: LLaMA-1 7B Q4_0, 6.1565 vs 5.9066.
    first = rows.model.index("LLaMA-1 7B")
    assert rows.delta[first] == pytest.approx(np.log(6.1565 / 5.9066))


def test_table_rows_without_a_source_are_refused(tmp_path):
    header = ",".join(PTQ_COLUMNS)
    row = "m,f,1e9,1e11,Q4_0,4.5,table,6.0,6.2,,table 1,2026-12-03"
    path = tmp_path / "rows.csv"
    path.write_text(header + "\n" + row + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 2: source is empty"):
        load_ptq_rows(path)
    path.write_text(header + "\n" + row.replace(",,", ",u,").replace("4.5", "16") + "\n")
    with pytest.raises(InputError, match="bits_per_weight must be < 16"):
        load_ptq_rows(path)


def test_leave_one_model_out_never_fits_on_the_held_out_model():
    rows = load_ptq_rows()
    kept = fittable(rows)
    for held in leave_one_model_out(rows):
        count = sum(model == held.model for model in kept.model)
        assert held.fit.rows == len(kept) - count and held.errors.rows == count


def test_shipped_refit_is_what_the_benchmark_fit_gives():
    shipped = load_ptq_constants()
    refit = fit_ptq(load_ptq_rows()).constants
    for name in ("c_t", "gamma_d", "gamma_n", "gamma_post"):
        assert getattr(shipped, name) == pytest.approx(getattr(refit, name), rel=1e-6)
    document = json.loads(ptq_fitted_path().read_text(encoding="utf-8"))
    assert document["command"].startswith("python benchmarks/ptq_fit.py")
    assert "produced by: python benchmarks/ptq_fit.py" in shipped.source


def test_default_constants_are_the_better_ones_out_of_sample():
    rows = load_ptq_rows()
    kept = fittable(rows)
    held = leave_one_model_out(rows)
    index = np.concatenate([np.flatnonzero([m == h.model for m in kept.model]) for h in held])
    refit = ptq_errors(kept.take(index), np.concatenate([h.predicted_delta for h in held]))
    kumar = ptq_errors(kept, predict_delta(KUMAR_PTQ, kept))
    assert (DEFAULT_PTQ is KUMAR_PTQ) == (kumar.ppl_mape <= refit.ppl_mape)
    assert DEFAULT_PTQ.name in PTQ_FORM
    assert KUMAR_PTQ.name == "Kumar et al. 2024 as read, unverified"
