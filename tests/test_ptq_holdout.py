"""The PTQ term scored on held-out models and families (`scaling_law.ptq_holdout`)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from roofline import InputError
from scaling_law import KUMAR_PTQ
from scaling_law.ptq_data import PtqRows
from scaling_law.ptq_fit import predict_delta
from scaling_law.ptq_holdout import (
    held_out_medians,
    hold_out,
    median_ratio_by_model,
    within_target,
)

#: Refits with every exponent held (only c_t fitted): fast, and these tests check the
#: offsets and the fixed constants' out-of-sample scores, not the refit.
FAST = ("gamma_d", "gamma_n", "gamma_post")
#: (model, family, N, D, quant types); INT4 rows are 0.3 bits worse than nominal.
MODELS = (
    ("a", "f1", 1e9, 1e12, ("Q3_K_M", "Q5_K_M", "INT4-g128")),
    ("b", "f1", 8e9, 1e13, ("Q2_K", "Q4_K_M", "Q6_K", "INT4-g128")),
    ("c", "f2", 3e10, 2e12, ("Q3_K_S", "Q4_K_S", "INT4-g128", "IQ4_XS")),
)
BITS = {"Q2_K": 3.0, "Q3_K_M": 3.9, "Q3_K_S": 3.5, "Q4_K_M": 4.8, "Q4_K_S": 4.6, "Q5_K_M": 5.7}


def kumar_rows(scale: dict[str, float] | None = None) -> PtqRows:
    """Rows exactly on Kumar's law at effective bits, each model's degradation x scale."""
    names, families, quants, n, d, bits, effective = [], [], [], [], [], [], []
    for model, family, params, tokens, kinds in MODELS:
        for quant in kinds:
            nominal = BITS.get(quant, 4.25)
            names.append(model)
            families.append(family)
            quants.append(quant)
            n.append(params)
            d.append(tokens)
            bits.append(nominal)
            effective.append(nominal - (0.3 if quant == "INT4-g128" else 0.0))
    count = len(names)
    placed = PtqRows(
        tuple(names), tuple(families), tuple(quants), np.array(n), np.array(d),
        np.array(effective), np.ones(count), np.ones(count), ("s",) * count, ("t",) * count,
        ("2026-12-04",) * count, Path("synthetic.csv"),
    )  # fmt: skip
    delta = predict_delta(KUMAR_PTQ, placed) * np.array([(scale or {}).get(m, 1.0) for m in names])
    return PtqRows(
        placed.model, placed.family, placed.quant_type, placed.params, placed.tokens,
        np.array(bits), np.full(count, 5.0), 5.0 * np.exp(delta), placed.source,
        placed.source_table, placed.date_read, placed.path,
    )  # fmt: skip


def test_fixed_constants_score_one_out_of_sample_and_unmeasured_kinds_are_counted() -> None:
    groups = hold_out(kumar_rows({"c": 2.0}), "model", hold=FAST)
    fixed = held_out_medians(groups, "fixed")
    assert fixed["a"] == pytest.approx(1.0) and fixed["b"] == pytest.approx(1.0)
    assert fixed["c"] == pytest.approx(0.5)  # twice the law's degradation: ratio 0.5
    assert within_target(fixed) == 2
    unplaced = {g.group: g.unplaced for g in groups}
    assert unplaced == {"a": 0, "b": 0, "c": 1}  # IQ4_XS: no other model measures i-quants
    held_c = next(g for g in groups if g.group == "c")
    assert held_c.offsets["INT4-g128"] == pytest.approx(0.3)
    assert len(held_c.rows) == 3  # its 4 rows less the unplaced one


def test_family_hold_out_and_bad_grouping() -> None:
    rows = kumar_rows()
    groups = hold_out(rows, "family", hold=FAST)
    # c_t refitted on f1 alone, exactly on the law: the refit reproduces Kumar's c_t
    assert held_out_medians(groups, "refit")["c"] == pytest.approx(1.0, rel=1e-3)
    assert [g.group for g in groups] == ["f1", "f2"]
    assert held_out_medians(groups, "fixed")["c"] == pytest.approx(1.0)
    assert median_ratio_by_model(rows, rows.delta) == {"a": 1.0, "b": 1.0, "c": 1.0}
    with pytest.raises(InputError, match="hold out by"):
        hold_out(rows, "size")
    with pytest.raises(InputError, match="which"):
        held_out_medians(groups, "best")


def test_ptq_fit_all_rows_refuses_to_write(monkeypatch, capsys) -> None:
    """``benchmarks/ptq_fit.py --all-rows`` writes nothing: with --write it stops at once."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "ptq_fit.py"
    monkeypatch.setattr(sys, "argv", ["ptq_fit.py", "--all-rows", "--write", "x.json"])
    with pytest.raises(SystemExit) as stop:
        runpy.run_path(str(script), run_name="__main__")
    assert stop.value.code == 2
    assert "--all-rows writes nothing" in capsys.readouterr().err
