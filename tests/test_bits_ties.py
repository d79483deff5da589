"""Interchangeable layers of a bit allocation (`search.bits.layer_classes`): with the
weight-free proxy every layer of a group ties, so ``codesign quantize`` prints counts, not
a per-layer choice (issue #27)."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np

from app import cli
from search.bits import layer_ranges

COMMON = [
    "quantize",
    "--model",
    "llama-3.1-8b",
    "--hw",
    "jetson-agx-orin-64gb",
    "--max-memory-gb",
    "6",
    "--max-tpot-ms",
    "40",
    "--bits",
    "16,8,4",
]


def run(*extra: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*COMMON, *extra]) in (0, None)
    return out.getvalue()


def test_layer_ranges() -> None:
    assert layer_ranges([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert layer_ranges([3]) == "3"
    assert layer_ranges([]) == ""


def test_proxy_layers_form_one_class_and_the_text_prints_counts() -> None:
    payload = json.loads(run("--json"))
    (only,) = payload["interchangeable_layers"]
    assert only["layers"] == list(range(32))
    per_layer = [row for row in payload["allocation"] if row["layer"] is not None]
    for group, counts in only["counts"].items():
        chosen = [row["format"] for row in per_layer if row["group"] == group]
        assert counts == {name: chosen.count(name) for name in set(chosen)}
    assert sum(only["counts"]["ffn_down"].values()) == 32
    text = run()
    assert "counts per class of interchangeable layers" in text
    assert "per-layer choices need per-layer sensitivities: --weights" in text
    assert "0-31" in text and "consecutive layers" not in text


def test_edge_weight_splits_the_edge_layers_from_the_middle() -> None:
    payload = json.loads(run("--edge-layer-weight", "2", "--json"))
    layers = [c["layers"] for c in payload["interchangeable_layers"]]
    assert layers == [[0, 1, 2, 3, 28, 29, 30, 31], list(range(4, 28))]


def test_distinct_rows_make_every_layer_its_own_class(tmp_path) -> None:
    """A per-layer sensitivity table (every layer different) leaves no ties: the per-layer
    table is printed as before."""
    rng = np.random.default_rng(0)
    lines = ["layer,group,bits,sensitivity"]
    for layer in range(32):
        for group in ("attn_qkv", "attn_out", "ffn_up_gate", "ffn_down"):
            scale = float(rng.uniform(1, 2))
            lines += [
                f"{layer},{group},{bits},{scale * 2.0 ** (-2 * bits):.6e}" for bits in (16, 8, 4)
            ]
    lines += [f",lm_head,{bits},{2.0 ** (-2 * bits):.6e}" for bits in (16, 8, 4)]
    table = tmp_path / "sens.csv"
    table.write_text("\n".join(lines) + "\n")
    payload = json.loads(run("--sensitivity", str(table), "--json"))
    assert all(len(c["layers"]) == 1 for c in payload["interchangeable_layers"])
    assert "consecutive layers with identical formats merged" in run("--sensitivity", str(table))
