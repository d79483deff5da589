"""Co-design spaces that vary decoding modes, offload, the attention window or a
hybrid's attention/SSM mix: every design row equals `predict` of its model variant and
scenario."""

import pytest

from genz import predict
from search.codesign import search_designs, space_from_dict
from search.codesign.frame import design_model, design_platform
from search.codesign.ilp import design_scenario


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


def test_space_refuses_a_state_space_base_and_the_mix_key():
    from roofline import InputError

    with pytest.raises(InputError, match="uses state-space"):
        space_from_dict({"hardware": {"presets": ["h100-sxm"]}, "model": {"base": "bamba-9b"}})
    with pytest.raises(InputError, match="unknown key 'attention_layers'"):
        space_from_dict({"hardware": {"presets": ["h100-sxm"]}, "model": {"attention_layers": [2]}})


def test_space_refuses_a_window_outside_the_context():
    from roofline import InputError

    with pytest.raises(InputError, match="sliding_window must be an integer in"):
        search_designs(
            space_from_dict(
                {
                    "hardware": {"presets": ["h100-sxm"]},
                    "model": {"base": "mistral-7b", "sliding_window": [10**7]},
                }
            )
        )
