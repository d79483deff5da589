"""Co-design with the shape-aware law (issue #13): extrapolation flags and --within-data,
the PTQ default for serving-time bits, edge-of-space flags, the training-time column and
the parameter / model-form intervals of the frontier."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from app import cli
from roofline import load_platform
from roofline.errors import InputError
from scaling_law import (
    PTQ_FORM,
    QUANTISED_TRAINING_FORM,
    Architecture,
    predict_loss,
    ptq_loss_penalty,
)
from search.codesign import Constraints, resolve_law, search_designs, space_from_dict

ROOT = Path(__file__).resolve().parents[1]
TOKENS = 5e10
#: 3 depths x 3 widths x 2 weight widths = 18 points; depth 2 and 96 lie outside the
#: Gemstones depths (3-80), the 2-layer and the narrow 8-layer designs below 48M parameters.
SPACE = {
    "name": "domain",
    "hardware": {"presets": ["jetson-orin-nano-8gb"]},
    "model": {
        "layers": [2, 8, 96],
        "hidden": [256, 512, 1024],
        "head_dim": 64,
        "kv_heads": 4,
        "ffn_ratio": 2.75,
    },
    "precision": {"weight_bits": [16, 4]},
    "workload": {"batch": 1, "input_tokens": 128, "output_tokens": 32},
    "law": {"training_tokens": TOKENS},
}
SHAPE_KEY = ["layers", "hidden", "weight_bits"]


def space(**law: object) -> object:
    document = json.loads(json.dumps(SPACE))
    document["law"].update(law)
    return space_from_dict(document)


@pytest.fixture(scope="module")
def designs() -> pd.DataFrame:
    return search_designs(space()).designs


def architecture(row: pd.Series) -> Architecture:
    return Architecture(
        layers=int(row["layers"]),
        hidden=int(row["hidden"]),
        ffn=int(row["intermediate_size"]),
        heads=int(row["heads"]),
        kv_heads=int(row["kv_heads"]),
        head_dim=int(row["head_dim"]),
        vocab=int(row["vocab"]),
        gated_ffn=True,
    )


def expected_outside(row: pd.Series) -> set[str]:
    """Domain quantities out of range, checked by hand against the law file's domain."""
    law = resolve_law(space().law)
    params = float(architecture(row).counts().total)  # the law counts embeddings
    values = {
        "width": row["hidden"],
        "depth": row["layers"],
        "params": params,
        "tokens": TOKENS,
        "tokens_per_parameter": TOKENS / params,
    }
    return {name for name, (low, high) in law.domain.items() if not low <= values[name] <= high}


def test_extrapolated_flag_is_set_exactly_outside_the_domain(designs: pd.DataFrame) -> None:
    assert len(designs) == 18
    for _, row in designs.iterrows():
        outside = expected_outside(row)
        assert row["extrapolated"] == bool(outside), (row["layers"], row["hidden"])
        assert set(filter(None, row["outside_domain"].split(","))) == outside
    # The space holds both kinds, so the test means something.
    assert 0 < designs["extrapolated"].sum() < len(designs)


def test_within_data_removes_exactly_the_extrapolated(designs: pd.DataFrame) -> None:
    inside = search_designs(space(), within_data=True).designs
    # ... and those that move along a dimension the law cannot price (here GQA: only the
    # 512-wide designs keep the llama-style base's 2 query heads per KV head).
    expected = designs[~designs["extrapolated"] & ~designs["unpriced"]]
    assert 0 < len(expected) < (~designs["extrapolated"]).sum()
    assert sorted(map(tuple, inside[SHAPE_KEY].to_numpy())) == sorted(
        map(tuple, expected[SHAPE_KEY].to_numpy())
    )
    assert not inside["extrapolated"].any()
    # The space file can say it too.
    from_file = search_designs(space(within_data=True)).designs
    assert len(from_file) == len(inside)


def test_within_data_with_nothing_inside_names_the_domain() -> None:
    result = search_designs(space(training_tokens=1e13), within_data=True)
    assert result.status == 1
    assert "inside the law's data domain" in result.message


def test_ptq_is_the_default_for_serving_time_bits(designs: pd.DataFrame) -> None:
    law = resolve_law(space().law)
    assert set(designs["precision_model"]) == {PTQ_FORM}
    pairs = designs.pivot_table(index=["layers", "hidden"], columns="weight_bits", values="loss")
    for (layers, hidden), losses in pairs.iterrows():
        row = designs[(designs["layers"] == layers) & (designs["hidden"] == hidden)].iloc[0]
        penalty = float(ptq_loss_penalty(law, architecture(row), TOKENS, 4.0))
        assert penalty > 0
        assert losses[4.0] - losses[16.0] == pytest.approx(penalty, rel=1e-9)


def test_quantised_training_form_stays_available_and_labelled() -> None:
    frame = search_designs(space(precision_model="quantised-training")).designs
    law = resolve_law(space().law)
    assert set(frame["precision_model"]) == {QUANTISED_TRAINING_FORM}
    row = frame[frame["weight_bits"] == 4].iloc[0]
    expected = float(predict_loss(law, architecture(row), TOKENS, weight_bits=4.0))
    assert row["loss"] == pytest.approx(expected, rel=1e-12)


def test_edge_flags_mark_axis_extremes(designs: pd.DataFrame) -> None:
    for _, row in designs.iterrows():
        expected = set()
        if row["layers"] in (2, 96):
            expected.add(f"layers={'min' if row['layers'] == 2 else 'max'}")
        if row["hidden"] in (256, 1024):
            expected.add(f"hidden={'min' if row['hidden'] == 256 else 'max'}")
        assert set(filter(None, row["edge_axes"].split(","))) == expected
        assert row["edge"] == bool(expected)
    assert not designs[(designs["layers"] == 8) & (designs["hidden"] == 512)]["edge"].any()


def test_training_time_equals_the_closed_form(designs: pd.DataFrame) -> None:
    row = designs[(designs["layers"] == 8) & (designs["hidden"] == 512)].iloc[0]
    layers, hidden, ffn, vocab = 8, 512, int(row["intermediate_size"]), int(row["vocab"])
    heads, kv_heads, head_dim = hidden // 64, 4, 64
    per_layer = (
        hidden * head_dim * (heads + 2 * kv_heads)  # W_q, W_k, W_v
        + heads * head_dim * hidden  # W_o
        + 3 * hidden * ffn  # gated FFN
        + 2 * hidden  # norms
    )
    # Untied embeddings: the LM head is a matmul, the input embedding a lookup.
    matmul_params = layers * per_layer + hidden + vocab * hidden
    flops = (6 * matmul_params + 12 * layers * heads * head_dim * 2048) * TOKENS
    h100 = load_platform("h100-sxm")
    # Defaults: one H100 SXM (dense bf16), the width-depth MFU model of the shipped file.
    model = json.loads((ROOT / "data" / "scaling" / "gemstones_mfu.json").read_text())
    mfu = (
        model["coefficient"] * hidden ** model["width_exponent"] * layers ** model["depth_exponent"]
    )
    assert 0.1 < mfu < 0.3
    seconds = flops / (989.4e12 * mfu)
    assert row["training_time_s"] == pytest.approx(seconds, rel=1e-12)
    assert h100.price_usd_per_hour is not None
    assert row["training_cost_usd"] == pytest.approx(seconds / 3600 * h100.price_usd_per_hour)


def test_training_section_and_objective() -> None:
    document = json.loads(json.dumps(SPACE))
    document["training"] = {"platform": "a100-sxm-80gb", "devices": 8, "mfu": 0.5}
    document["objectives"] = ["loss", "training_time"]
    result = search_designs(space_from_dict(document))
    fixed = json.loads(json.dumps(SPACE))
    fixed["training"] = {"mfu": 0.4}
    base = search_designs(space_from_dict(fixed)).designs.set_index(SHAPE_KEY)["training_time_s"]
    ratio = (989.4e12 * 0.4) / (312e12 * 8 * 0.5)  # A100 SXM dense bf16: 312 TFLOP/s
    merged = result.designs.set_index(SHAPE_KEY)["training_time_s"] / base
    assert np.allclose(merged, ratio, rtol=1e-9)
    assert list(result.frontier.columns).count("training_time_s") == 1
    for bad, message in (
        ({"training": {"mfu": 1.5}}, "mfu must be in (0, 1]"),
        ({"training": {"mfu": "missing.json"}}, "training.mfu: "),
        ({"training": {"gpus": 2}}, "unknown key 'gpus'"),
        ({"law": {"precision_model": "qat"}}, "precision_model must be one of"),
        ({"law": {"within_data": "yes"}}, "within_data must be true or false"),
    ):
        changed = json.loads(json.dumps(SPACE))
        for key, value in bad.items():
            changed.setdefault(key, {}).update(value)
        with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            space_from_dict(changed)


def test_frontier_intervals_hold_the_point_prediction() -> None:
    frontier = search_designs(space()).frontier
    assert (frontier["loss_form_min"] <= frontier["loss"] + 1e-12).all()
    assert (frontier["loss"] <= frontier["loss_form_max"] + 1e-12).all()
    assert (frontier["loss_param_low"] < frontier["loss_param_high"]).all()
    assert (frontier["loss_form_max"] > frontier["loss_form_min"]).all()


def test_cli_within_data_json_and_text(tmp_path: Path) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(SPACE), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(["search", "--space", str(path), "--within-data", "--json"])
    payload = json.loads(out.getvalue())
    assert payload["within_data"] is True
    assert payload["precision_model"] == PTQ_FORM
    assert payload["frontier"] and not any(r["extrapolated"] for r in payload["frontier"])
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        cli.main(
            ["search", "--space", str(path), "--no-progress", "--out", str(tmp_path / "a.csv")]
        )
    printed = text.getvalue()
    assert PTQ_FORM in printed and "extrapolate the law's data" in printed
    table = pd.read_csv(tmp_path / "a.csv")
    assert {"extrapolated", "outside_domain", "edge", "edge_axes", "training_time_s"} <= set(
        table.columns
    )


def test_ilp_allocation_loss_uses_the_ptq_term(designs: pd.DataFrame) -> None:
    """Uniform groups reproduce the grid's PTQ loss; half the parameters at 4 bits add
    half the 4-bit PTQ penalty (parameter-weighted mean of the degradation)."""
    from types import SimpleNamespace

    from genz.params import parameter_count
    from search.codesign.evaluate import Plan
    from search.codesign.frame import row_fields
    from search.codesign.ilp import allocation_loss
    from search.codesign.model import model_config

    chosen = space()
    law = resolve_law(chosen.law)
    plan = Plan(chosen, law, chosen.objectives, Constraints())
    row = designs[(designs["layers"] == 8) & (designs["hidden"] == 512)]
    four = row[row["weight_bits"] == 4].iloc[0].to_dict()
    model = model_config(chosen.model, row_fields(four))
    total = parameter_count(model).total
    uniform = SimpleNamespace(rows=lambda: [{"params": total, "bits": 4.0}])
    loss, bits = allocation_loss(plan, model, four, uniform)  # type: ignore[arg-type]
    assert bits == 4.0 and loss == pytest.approx(four["loss"], rel=1e-12)
    sixteen = row[row["weight_bits"] == 16].iloc[0]
    half = SimpleNamespace(rows=lambda: [{"params": total / 2, "bits": 16.0}])
    loss, bits = allocation_loss(plan, model, four, half)  # type: ignore[arg-type]
    penalty = float(ptq_loss_penalty(law, architecture(sixteen), TOKENS, 4.0))
    assert bits == pytest.approx(10.0)
    assert loss == pytest.approx(sixteen["loss"] + penalty / 2, rel=1e-12)


def test_space_runtime_profile_times_every_design_like_predict() -> None:
    from genz import load_runtime
    from genz.predictor import predict
    from search.codesign.frame import design_platform, row_fields
    from search.codesign.ilp import design_scenario
    from search.codesign.model import model_config
    from search.codesign.recommend import design_files

    document = json.loads(json.dumps(SPACE))
    document["hardware"]["runtime"] = "vllm"
    chosen = space_from_dict(document)
    result = search_designs(chosen)
    row = result.frontier.iloc[0].to_dict()
    expected = predict(
        model_config(chosen.model, row_fields(row)),
        design_platform(chosen, row),
        design_scenario(row, row["weight_bits"]),
        runtime=load_runtime("vllm"),
    )
    assert row["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-9)
    plain = search_designs(space()).designs.set_index(SHAPE_KEY)["tpot_s"]
    assert not np.allclose(result.designs.set_index(SHAPE_KEY)["tpot_s"], plain)
    summary = json.loads(design_files(chosen, row)["design.json"])
    assert summary["commands"]["latency_memory"].endswith("--runtime vllm")
