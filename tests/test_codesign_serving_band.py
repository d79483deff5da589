"""The serving side of the co-design's joint band (`search.codesign.serving_band`): every
frontier design's TPOT over the base model's under the kernel-overhead priors and the
runtime profiles, and the joint verdict the CLI prints (issue #27)."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
import yaml

from app import cli
from genz import evaluate_grid
from roofline import derive_platform
from search.codesign import search_designs, serving_scenarios, space_from_dict
from search.codesign.evaluate import UNLIMITED_CAPACITY
from search.codesign.frame import design_platform, row_fields
from search.codesign.model import base_fields, model_config
from search.codesign.serving_band import OVERHEADS_S, tpot_ratios, verdicts

#: A small Qwen2.5-0.5B-based space on the Orin whose grid holds the base model itself
#: (24 x 896, 2 KV heads, FFN 4864), a shallower and a deeper design.
SPACE = {
    "name": "band-test",
    "hardware": {"presets": ["jetson-agx-orin-64gb"]},
    "model": {
        "base": "qwen2.5-0.5b",
        "layers": [12, 24, 32],
        "hidden": [896],
        "head_dim": 64,
        "kv_heads": [2],
        "ffn_ratio": [5.4286],
        "ffn_multiple": 64,
        "vocab": 151936,
    },
    "precision": {"weight_bits": [16, 4]},
    "workload": {"batch": 1, "input_tokens": 512, "output_tokens": 128},
    "law": {"training_tokens": 1.0e11},
    "objectives": ["loss", "tpot"],
}


@pytest.fixture(scope="module")
def result():
    space = space_from_dict(SPACE)
    found = search_designs(space, serving_band=True)
    assert found.success
    return found


def test_verdicts_truth_table() -> None:
    ppl_low = np.array([0.9, 1.1, 0.9, 1.1, 0.9, 1.1, 0.95, 0.9])
    ppl_high = np.array([0.95, 1.2, 0.95, 1.2, 0.95, 1.2, 1.05, 0.95])
    tpot_low = np.array([0.8, 1.0, 1.1, 0.7, 0.9, 0.9, 0.5, 1.0])
    tpot_high = np.array([1.0, 1.3, 1.2, 0.9, 1.1, 1.1, 0.6, 1.0])
    assert list(verdicts(ppl_low, ppl_high, tpot_low, tpot_high)) == [
        "better",
        "worse",
        "trade-off",
        "trade-off",
        "lower ppl, TPOT unsure",
        "higher ppl, TPOT unsure",
        "indistinguishable",  # faster in every scenario, but the ppl band includes 1
        "better",  # as fast as the base in every scenario
    ]


def test_the_base_model_is_indistinguishable_from_itself(result) -> None:
    frontier = result.frontier
    base = frontier[(frontier["layers"] == 24)]
    assert len(base), "the base model's own shape is on the frontier"
    for column in ("tpot_vs_base", "tpot_vs_base_low", "tpot_vs_base_high"):
        np.testing.assert_allclose(base[column], 1.0, rtol=1e-12)
    assert set(base["verdict"]) == {"indistinguishable"}


def test_overhead_scenarios_equal_direct_evaluation(result) -> None:
    """The overhead columns are interpolated from 0 and 10 us: they must equal genz at
    2 and 5 us directly (TPOT affine in the per-kernel overhead)."""
    space = result.space
    table = result.frontier.reset_index(drop=True)
    ratios = tpot_ratios(space, table)
    base_row = {k: float(v[0]) for k, v in base_fields(space.model).items()}
    base_model = model_config(space.model, base_row, "base")
    axes_names = ("weight_bits", "kv_bits", "activation_bits", "tp", "pp", "ep", "dp")
    axes_names += ("batch", "input_tokens", "output_tokens")
    for position, overhead in enumerate(OVERHEADS_S):
        for index, row in table.iterrows():
            platform = derive_platform(
                design_platform(space, row.to_dict()),
                memory_capacity_scale=UNLIMITED_CAPACITY,
                kernel_overhead_s=overhead,
            )
            axes = {name: float(row[name]) for name in axes_names}
            model = model_config(space.model, row_fields(row.to_dict()))
            design = float(evaluate_grid(model, platform, **axes).tpot_s)
            base = float(evaluate_grid(base_model, platform, **axes).tpot_s)
            assert ratios[index, 1 + position] == pytest.approx(design / base, rel=1e-9)


def test_deeper_designs_lose_more_to_kernel_overhead(result) -> None:
    """More layers, more kernels: a deeper design's TPOT ratio grows with the overhead,
    a shallower one's falls."""
    table = result.frontier.reset_index(drop=True)
    ratios = tpot_ratios(result.space, table)[:, 1 : 1 + len(OVERHEADS_S)]
    deep = table["layers"].to_numpy() > 24
    shallow = table["layers"].to_numpy() < 24
    assert deep.any() and shallow.any()
    assert np.all(np.diff(ratios[deep], axis=1) > 0)
    assert np.all(np.diff(ratios[shallow], axis=1) < 0)


def test_scenarios_are_the_overhead_priors_and_the_profiles(result) -> None:
    labels = [s.label for s in serving_scenarios(result.space)]
    assert labels[:4] == ["0 us overhead", "2 us overhead", "5 us overhead", "10 us overhead"]
    assert "vllm" in labels and "llama.cpp" in labels
    assert "ideal" not in labels  # the physics at the presets' overhead: already there


def run(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(list(argv)) in (0, None)
    return out.getvalue()


def test_cli_prints_band_and_verdict(tmp_path) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(SPACE))
    text = run("search", "--space", str(path), "--no-progress")
    assert "serving band" in text and "tpot_band" in text and "indistinguishable" in text
    payload = json.loads(run("search", "--space", str(path), "--json"))
    counts = payload["verdicts_on_frontier"]
    assert sum(counts.values()) == len(payload["frontier"])
    assert all("verdict" in row and "tpot_vs_base_low" in row for row in payload["frontier"])
    skipped = json.loads(run("search", "--space", str(path), "--json", "--no-serving-band"))
    assert skipped["verdicts_on_frontier"] == {}
    assert "verdict" not in skipped["frontier"][0]
