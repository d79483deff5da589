"""Co-design spaces that vary decoding modes, offload, the attention window or a
hybrid's attention/SSM mix: every design row equals `predict` of its model variant and
scenario."""

import contextlib
import copy
import dataclasses
import io
import json
import shlex

import pytest
import yaml

from app import cli
from genz import load_model, predict, with_layer_mix
from roofline import InputError
from scaling_law import load_law, scaling_dir
from search.codesign import search_designs, space_from_dict
from search.codesign.frame import design_model, design_platform
from search.codesign.ilp import design_scenario
from search.codesign.recommend import write_recommendations


def rows_match_predict(document):
    result = search_designs(space_from_dict(document), keep="feasible")
    designs = result.designs
    assert len(designs) > 1
    for row in designs.to_dict("records"):
        model = design_model(result.space, row)
        scenario = design_scenario(row, row["weight_bits"])
        expected = predict(model, design_platform(result.space, row), scenario)
        assert row["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-9)
        assert row["ttft_s"] == pytest.approx(expected.ttft_s, rel=1e-9)
        assert row["footprint_bytes"] == pytest.approx(expected.footprint.total_bytes, rel=1e-9)
    return designs


def test_space_varies_the_window_and_the_decoding_mode():
    designs = rows_match_predict(
        {
            "hardware": {"presets": ["h100-sxm"]},
            "model": {"base": "mistral-7b", "sliding_window": [0, 1024, 4096]},
            "workload": {
                "input_tokens": 32000,
                "output_tokens": 64,
                "parallel_samples": [1, 4],
                "kv_offload": [0.0, 0.5],
            },
        }
    )
    assert set(designs["sliding_window"]) == {0, 1024, 4096}
    assert set(designs["parallel_samples"]) == {1, 4}
    # at 32k context the 4,096-token window keeps about 1/8 of full attention's KV
    one = designs[(designs["parallel_samples"] == 1) & (designs["kv_offload"] == 0)]
    kv = one.set_index("sliding_window")["kv_cache_bytes"]
    assert kv[0] / kv[4096] == pytest.approx(32064 / 4096, rel=0.01)


#: Nemotron-H 8B: 52 layers, of which 28 token mixers (4 attention + 24 Mamba-2) and 24 MLP.
HYBRID = {
    "hardware": {"presets": ["h100-sxm"]},
    "model": {"base": "nemotron-h-8b", "attention_layers": [2, 4, 8, 16]},
    "workload": {"batch": [1, 4], "input_tokens": 8192, "output_tokens": 64},
}


@pytest.fixture(scope="module")
def hybrid():
    return search_designs(space_from_dict(copy.deepcopy(HYBRID)), keep="feasible")


def test_space_varies_a_hybrids_attention_ssm_mix_as_predict_does(hybrid):
    designs = hybrid.designs
    assert len(designs) == 8 and set(designs["attention_layers"]) == {2, 4, 8, 16}
    preset = load_model("nemotron-h-8b")
    for row in designs.to_dict("records"):
        # the preset itself with --attention-layers N, not the design's rewritten config
        model = with_layer_mix(preset, attention_layers=int(row["attention_layers"]))
        scenario = design_scenario(row, row["weight_bits"])
        expected = predict(model, design_platform(hybrid.space, row), scenario)
        assert row["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-9)
        assert row["ttft_s"] == pytest.approx(expected.ttft_s, rel=1e-9)
        assert row["footprint_bytes"] == pytest.approx(expected.footprint.total_bytes, rel=1e-9)
    # each Mamba-2 layer turned into attention trades its fixed state for a KV cache, by
    # hand at 16 bits, 8,192 + 64 tokens: KV 2 x 8 KV heads x 128 x 8256 x 2 B; state
    # 128 heads x 64 x 128 x 2 B + conv (4 - 1) x (8192 + 2 x 8 groups x 128) x 2 B
    kv_layer = 2 * 8 * 128 * (8192 + 64) * 2
    state_layer = 128 * 64 * 128 * 2 + 3 * (8192 + 2 * 8 * 128) * 2
    for batch in (1, 4):
        cache = designs[designs["batch"] == batch].set_index("attention_layers")["kv_cache_bytes"]
        for count in (2, 8, 16):
            step = batch * (count - 4) * (kv_layer - state_layer)
            assert cache[count] - cache[4] == pytest.approx(step, rel=1e-9)


def test_the_mix_is_reported_as_unpriced_against_the_base(hybrid):
    designs = hybrid.designs
    for row in designs.to_dict("records"):
        ratio = row["attention_layers"] / 4
        assert row["unpriced_attention_layers"] == pytest.approx(ratio)
        assert row["unpriced"] == (ratio != 1)
        assert (row["unpriced_axes"] == "") == (ratio == 1)
        if ratio != 1:
            assert f"attention_layers x{ratio:g}" in row["unpriced_axes"]
    # the loss law has no SSM term: every mix gets the base's loss
    assert designs["loss"].nunique() == 1


def test_within_data_holds_the_base_mix():
    # a law without a recorded domain extrapolates nowhere and prices every shape
    # dimension, so the mix is the only reason a design is dropped
    law = dataclasses.replace(load_law(scaling_dir() / "gemstones_law.json"), domain={})
    space = space_from_dict(copy.deepcopy(HYBRID))
    everything = search_designs(space, law=law, keep="feasible").designs
    inside = search_designs(space, law=law, keep="feasible", within_data=True).designs
    assert len(everything) == 8
    assert set(inside["attention_layers"]) == {4} and len(inside) == 2


def test_cli_names_the_mix_as_an_unpriced_dimension(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(HYBRID), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(["search", "--space", str(path), "--json", "--objective", "tpot,memory"])
    payload = json.loads(out.getvalue())
    assert "attention_layers" in payload["unpriced_dimensions"]
    assert payload["frontier"] and all(
        r["unpriced_attention_layers"] == r["attention_layers"] / 4 for r in payload["frontier"]
    )


def test_a_recommended_mix_is_reproduced_by_its_predict_command(hybrid, tmp_path, monkeypatch):
    (folder,) = write_recommendations(hybrid, tmp_path / "out", top=1)
    row = hybrid.frontier.iloc[0]
    command = json.loads((folder / "design.json").read_text())["commands"]["latency_memory"]
    assert f"--attention-layers {int(row['attention_layers'])}" in command
    monkeypatch.chdir(folder)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main([*shlex.split(command)[1:], "--json"])
    summary = json.loads(out.getvalue())["summary"]
    assert summary["tpot_s"] == pytest.approx(row["tpot_s"], rel=1e-9)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({"base": "qwen2.5-0.5b", "attention_layers": [2]}, "is not an attention / state-space"),
        ({"base": "nemotron-h-8b", "attention_layers": [4, 29]}, r"integer in \[1, 28\]"),
        ({"base": "nemotron-h-8b", "layers": [40]}, "model.layers: the hybrid base"),
        ({"base": "mamba-2.8b"}, "uses only state-space layers"),
        ({"base": "falcon-h1-7b"}, "parallel attention and Mamba-2"),
    ],
)
def test_space_refuses_an_impossible_mix(model, message):
    with pytest.raises(InputError, match=message):
        space_from_dict({"hardware": {"presets": ["h100-sxm"]}, "model": model})


def test_space_refuses_a_window_outside_the_context():
    with pytest.raises(InputError, match="sliding_window must be an integer in"):
        search_designs(
            space_from_dict(
                {
                    "hardware": {"presets": ["h100-sxm"]},
                    "model": {"base": "mistral-7b", "sliding_window": [10**7]},
                }
            )
        )
