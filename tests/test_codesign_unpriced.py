"""Dimensions a law cannot price (issue #27): law files say which architecture dimensions
their data varied; the co-design search reports each design's distance from the base model
along the others and ``--within-data`` keeps only designs that hold them."""

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
from scaling_law import (
    ARCHITECTURE_DIMENSIONS,
    Architecture,
    ScalingData,
    extrapolation,
    fit_law,
    load_law,
    scaling_dir,
)
from search.codesign import search_designs, space_from_dict

#: Base qwen2.5-0.5b: 14 heads / 2 KV heads = GQA 7, FFN 4864 / 896 = 5.4286, vocab 151,936.
SPACE = {
    "name": "unpriced",
    "hardware": {"presets": ["jetson-orin-nano-8gb"]},
    "model": {
        "base": "qwen2.5-0.5b",
        "layers": 24,
        "hidden": [896, 1024],
        "head_dim": 64,
        "kv_heads": [1, 2],
        "ffn_ratio": [4.0, 5.4286],
    },
    "precision": {"weight_bits": 16},
    "workload": {"batch": 1, "input_tokens": 128, "output_tokens": 32},
    "law": {"training_tokens": 5e10},
}


@pytest.fixture(scope="module")
def designs() -> pd.DataFrame:
    return search_designs(space_from_dict(json.loads(json.dumps(SPACE)))).designs


def test_shipped_laws_list_the_dimensions_their_data_varied() -> None:
    for path in [scaling_dir() / "gemstones_law.json", scaling_dir() / "chinchilla_law.json"]:
        law = load_law(path)
        assert law.unpriced == ARCHITECTURE_DIMENSIONS
        dimensions = law.metadata["dimensions"]
        assert dimensions["varied"] == {}
        assert set(dimensions["not_recorded"]) | set(dimensions["held_constant"]) == set(
            ARCHITECTURE_DIMENSIONS
        )
    gemstones = load_law(scaling_dir() / "gemstones_law.json")
    assert gemstones.metadata["dimensions"]["held_constant"] == {"vocab": 50304.0}


def test_a_fit_on_data_that_varies_gqa_prices_it_and_flags_outside_its_range() -> None:
    rng = np.random.default_rng(0)
    hidden = np.repeat([512, 1024, 2048], 8).astype(float)
    kv_heads = np.tile([1, 2, 4, 8], 6).astype(float)
    heads = hidden / 64
    params = Architecture(layers=12, hidden=hidden, heads=heads, kv_heads=kv_heads).counts().total
    tokens = np.tile([2e9, 2e9, 8e9, 8e9], 6) * (hidden / 512)
    loss = 1.8 + 400 / params**0.33 + 900 / tokens**0.3 + 0.01 * np.log(heads / kv_heads)
    data = ScalingData.from_columns(
        {
            "layers": np.full(24, 12.0),
            "hidden": hidden,
            "heads": heads,
            "kv_heads": kv_heads,
            "tokens": tokens,
            "loss": loss * (1 + 0.001 * rng.standard_normal(24)),
        }
    )
    law = fit_law(data, "chinchilla", bootstrap=0, cross_validation=None, progress=False).law
    assert law.domain["gqa_ratio"] == (1.0, 32.0)
    assert "gqa_ratio" not in law.unpriced and "ffn_ratio" in law.unpriced
    assert law.metadata["dimensions"]["varied"] == {"gqa_ratio": [1.0, 32.0]}
    flags, outside = extrapolation(
        law, Architecture(layers=12, hidden=1024, heads=16, kv_heads=16), 8e9
    )
    assert not flags and outside == ()
    narrow = Architecture(layers=12, hidden=4096, heads=64, kv_heads=1)  # GQA 64 > 32
    flags, outside = extrapolation(law, narrow, 8e9)
    assert flags and "gqa_ratio" in outside


def test_each_design_reports_its_distance_from_the_base(designs: pd.DataFrame) -> None:
    assert len(designs) == 8
    for _, row in designs.iterrows():
        gqa = row["heads"] / row["kv_heads"] / 7.0
        ffn = row["ffn_ratio"] / (4864 / 896)  # the axis value (5.4286 is Qwen's to 1e-5)
        assert row["unpriced_gqa_ratio"] == pytest.approx(gqa)
        assert row["unpriced_ffn_ratio"] == pytest.approx(ffn if abs(ffn - 1) > 1e-3 else 1.0)
        assert row["unpriced_vocab"] == 1.0 and row["unpriced_experts"] == 1.0
        holds = row["hidden"] == 896 and row["kv_heads"] == 2 and row["ffn_ratio"] > 5
        assert row["unpriced"] == (not holds), (row["hidden"], row["kv_heads"], row["ffn_ratio"])
        assert (row["unpriced_axes"] == "") == holds
        if not holds and gqa != 1:
            assert f"gqa_ratio x{round(gqa, 3):g}" in row["unpriced_axes"]


def test_within_data_keeps_only_the_designs_that_hold_the_base(designs: pd.DataFrame) -> None:
    document = json.loads(json.dumps(SPACE))
    inside = search_designs(space_from_dict(document), within_data=True).designs
    expected = designs[~designs["unpriced"] & ~designs["extrapolated"]]
    assert len(expected) == 1 and len(inside) == 1
    key = ["hidden", "kv_heads", "intermediate_size"]
    assert inside[key].to_numpy().tolist() == expected[key].to_numpy().tolist()


def test_cli_text_json_and_csv_carry_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(SPACE), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(["search", "--space", str(path), "--json", "--objective", "loss,memory"])
    payload = json.loads(out.getvalue())
    assert payload["unpriced_dimensions"] == list(ARCHITECTURE_DIMENSIONS)
    assert payload["unpriced_on_frontier"] == sum(r["unpriced"] for r in payload["frontier"])
    assert all("unpriced_axes" in r for r in payload["frontier"])
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        cli.main(
            ["search", "--space", str(path), "--no-progress", "--out", str(tmp_path / "a.csv")]
        )
    assert "dimensions the law's data did not vary" in text.getvalue()
    table = pd.read_csv(tmp_path / "a.csv")
    assert {"unpriced", "unpriced_axes", "unpriced_gqa_ratio", "unpriced_ffn_ratio"} <= set(
        table.columns
    )
