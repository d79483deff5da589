"""The opt-in per-step cost of the transferable model (calibration.transfer ``tau``): a
stack measured at batch 1 only keeps its host cost per step, not per sequence, so a
large batch is not charged it once per sequence."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_transfer import _rows

from calibration.transfer import (
    PRIORS,
    Layout,
    fit_transfer,
    one_batch_levels,
    predict_times,
    prior_means,
)
from calibration.transfer_terms import build_terms, with_step_cost

SIGMA, TAU, TAU_BENCH = 10e-6, 2e-4, 1e-3
REPEATS = 10
SERVER, BENCH = "vllm|offline_generate|undated", "vllm|vendor_table|undated"
#: The per-kernel launch cost of the truth: the prior mean (`calibration.transfer.PRIORS`).
KAPPA = float(np.exp(PRIORS["log_kappa_global"].mean))
MODELS = ("llama-3.2-1b", "llama-3.2-3b", "llama-3-8b", "llama-2-13b")


def _stored():
    """A server measured at batch 1-64 and a bench measured at batch 1 and at 256 and
    512 (the rows to predict), on four model sizes (so a per-kernel cost is not a
    per-step one); each set-up measured `REPEATS` times (runs of a sweep), so the data
    outweigh the priors as in the store."""
    stored = []
    lengths = (128, 256, 512, 1024)
    for model in MODELS:
        stored += _rows(model, "h100-sxm", "offline_generate", "server", lengths, (1, 8, 64))
        stored += _rows(model, "h100-sxm", "vendor_table", "bench", lengths, (1, 256, 512))
    return stored * REPEATS


def _truth(terms):
    """Measured times: the model's own with per-step costs ``TAU`` (server) and
    ``TAU_BENCH`` (bench), per-sequence cost ``SIGMA``."""
    layout = Layout.of(terms)
    params = prior_means(layout)
    params[layout.blocks["glob"].start + 3] = np.log(SIGMA)
    params[layout.blocks["step_glob"]] = np.log(TAU)
    bench = layout.blocks["step_stack"].start + terms.stack.names.index(BENCH)
    params[bench] = np.log(TAU_BENCH / TAU)
    times = predict_times(terms, layout, params, with_source=False)
    return dataclasses.replace(terms, measured={k: v.copy() for k, v in times.items()})


def test_a_batch_one_stacks_step_cost_is_recovered_and_not_read_as_a_kernel_cost():
    """Trained on the server and on the bench's batch-1 rows of the three smaller
    models; predicted: the bench at batch 256 and 512, and the largest model on it."""
    stored = _stored()
    terms = _truth(with_step_cost(build_terms(stored), True))
    batches = np.array([item.row.batch for item in stored])
    bench = terms.stack.index == terms.stack.names.index(BENCH)
    largest = np.array([item.row.model == MODELS[-1] for item in stored])
    train = (batches <= 64) & ~(bench & largest)
    fit = fit_transfer(terms, train)
    values = fit.row_terms()
    # the bench's per-step cost is recovered, and its per-sequence and per-kernel costs
    # (the truth: one of each for both stacks)
    np.testing.assert_allclose(values["tau"][bench], TAU_BENCH, rtol=0.15)
    np.testing.assert_allclose(values["sigma"][bench], SIGMA, rtol=0.15)
    assert values["kappa"][bench][0] == pytest.approx(KAPPA, rel=0.15)
    measured = terms.measured["itl_s"]
    error = fit.predict(with_source=False)["itl_s"] / measured - 1
    assert np.max(np.abs(error[~train])) < 0.05
    # without the term the bench's step cost is read as a per-kernel one (about twice
    # the truth), so the largest model (more kernels) is over-predicted on it
    blind = fit_transfer(with_step_cost(terms, False), train)
    assert blind.row_terms()["kappa"][bench][0] > 1.5 * KAPPA
    missed = blind.predict(with_source=False)["itl_s"] / measured - 1
    held = bench & largest & (batches == 1)
    assert np.mean(missed[held]) > 0.02 and np.mean(missed[held]) > 5 * abs(np.mean(error[held]))


def test_one_batch_levels_are_the_stacks_measured_at_one_batch_size():
    stored = _stored()
    terms = build_terms(stored)
    batches = np.array([item.row.batch for item in stored], float)
    single = one_batch_levels(terms.stack, batches, batches <= 64)
    assert dict(zip(terms.stack.names, single.tolist(), strict=True)) == {
        SERVER: False,
        BENCH: True,
    }
    # the default model has no per-step blocks (its layout and numbers are unchanged)
    layout = Layout.of(terms)
    for name in ("step_glob", "step_runtime", "step_stack"):
        assert layout.blocks[name].stop == layout.blocks[name].start
    assert Layout.of(with_step_cost(terms, True)).size == layout.size + 1 + 1 + 2
