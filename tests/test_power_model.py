"""Activity power model: hand-derived draw of a made-up platform, the TDP cap and idle
floor, preset parsing, and energy per token falling with batch on memory-bound decode."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from helpers import MADE_UP_POWER, TINY_CONFIG
from hypothesis import given
from hypothesis import strategies as st

from genz import Scenario, load_model, predict
from genz.hf_config import model_from_hf_config
from roofline import (
    InputError,
    PowerModel,
    activity_power_w,
    derive_platform,
    load_platform,
    platform_from_dict,
)
from search.economics.costs import economics, energy_per_token_j, phase_power_w


def test_hand_derived_activity_power():
    # 50 W + 1e-12 J x 1e14 FLOP/s (100 W) + 1e-10 J x 1e12 B/s (100 W) = 250 W.
    assert activity_power_w(MADE_UP_POWER, 1e14, 1e12, 300.0) == pytest.approx(250.0)
    # 50 + 100 + 300 = 450 W is past the 300 W board: capped.
    assert activity_power_w(MADE_UP_POWER, 1e14, 3e12, 300.0) == pytest.approx(300.0)
    assert activity_power_w(MADE_UP_POWER, 1e14, 3e12) == pytest.approx(450.0)  # no cap given
    assert activity_power_w(MADE_UP_POWER, 0.0, 0.0, 300.0) == pytest.approx(50.0)


@given(
    flop_s=st.floats(0, 1e16, allow_nan=False),
    bytes_s=st.floats(0, 1e14, allow_nan=False),
    tdp=st.floats(50, 2000, allow_nan=False),
)
def test_power_between_idle_and_tdp(flop_s, bytes_s, tdp):
    watts = activity_power_w(MADE_UP_POWER, flop_s, bytes_s, tdp)
    assert MADE_UP_POWER.idle_w <= watts <= tdp


def test_prediction_power_is_hand_derived(simple_platform):
    platform = derive_platform(simple_platform, power_w=10_000.0, power_model=MADE_UP_POWER)
    scenario = Scenario(batch=2, input_tokens=64, output_tokens=9)
    found = predict(model_from_hf_config(TINY_CONFIG), platform, scenario)
    found = dataclasses.replace(found, ttft_s=0.5, tpot_s=0.25, e2e_s=0.5 + 8 * 0.25)
    prefill = 50 + 1e-12 * found.prefill.flop / 0.5 + 1e-10 * found.prefill.bytes / 0.5
    decode = 50 + 1e-12 * found.decode.flop / 0.25 + 1e-10 * found.decode.bytes / 0.25
    assert phase_power_w(found, platform, "prefill") == pytest.approx(prefill)
    assert phase_power_w(found, platform, "decode") == pytest.approx(decode)
    assert energy_per_token_j(found, platform, "decode") == pytest.approx(decode * 0.25 / 2)
    figures = economics(found, platform, power_fraction=0.5)  # fraction unused here
    assert figures.j_per_output_token == pytest.approx((prefill * 0.5 + decode * 2.0) / 18)
    assert figures.power_basis.startswith("activity model")


def test_without_power_model_energy_stays_fraction_times_tdp(simple_platform):
    platform = derive_platform(simple_platform, power_w=400.0)
    found = predict(model_from_hf_config(TINY_CONFIG), platform, Scenario(batch=1))
    assert phase_power_w(found, platform, "decode", power_fraction=0.5) == pytest.approx(200.0)
    assert economics(found, platform, power_fraction=0.5).power_basis == "0.5 x TDP"


def test_energy_per_token_falls_with_batch_on_memory_bound_decode():
    platform = load_platform("a100-sxm-40gb")
    assert platform.power_model is not None
    model = load_model("llama-3-8b")
    joules = []
    for batch in (1, 2, 4, 8, 16, 32):
        found = predict(model, platform, Scenario(batch=batch, input_tokens=512, output_tokens=64))
        assert found.decode.bound.value == "memory"
        watts = phase_power_w(found, platform, "decode")
        assert platform.power_model.idle_w <= watts <= platform.power_w
        joules.append(energy_per_token_j(found, platform, "decode"))
    assert all(later < earlier for earlier, later in itertools.pairwise(joules))


def _preset(**power_model: object) -> dict[str, object]:
    return {
        "name": "made-up",
        "source": "test",
        "peak_tflops": {"bf16": 100},
        "memory": [{"name": "hbm", "bandwidth_gb_per_s": 1000, "capacity_gb": 10}],
        "power_w": 300,
        "power_model": power_model,
    }


def test_preset_power_model_converts_picojoules():
    platform = platform_from_dict(
        _preset(idle_w=50, pj_per_flop=1.0, pj_per_byte=100.0, source="made up")
    )
    assert platform.power_model == PowerModel(50.0, 1e-12, 1e-10, "made up")


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"idle_w": 50, "pj_per_flop": 1, "pj_per_byte": 1}, "missing required key 'source'"),
        (
            {"idle_w": 50, "pj_per_flop": 1, "pj_per_byte": 1, "source": "x", "tdp": 1},
            "unknown key 'tdp'",
        ),
        (
            {"idle_w": 50, "pj_per_flop": -1, "pj_per_byte": 1, "source": "x"},
            "power_model.pj_per_flop",
        ),
        (
            {"idle_w": 500, "pj_per_flop": 1, "pj_per_byte": 1, "source": "x"},
            "idle_w must be <= power_w",
        ),
    ],
)
def test_bad_preset_power_model(section, message):
    with pytest.raises(InputError, match=message):
        platform_from_dict(_preset(**section))
