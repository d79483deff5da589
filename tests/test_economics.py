"""Energy and cost per token: hand-computed figures, pricing bases, bad input."""

import dataclasses

import pytest
from helpers import TINY_CONFIG

from genz.hf_config import model_from_hf_config
from genz.predictor import predict
from genz.scenario import Parallelism, Precision, Scenario
from roofline import InputError, derive_platform, load_platform
from search.economics.costs import (
    DEFAULT_LIFETIME_YEARS,
    HOURS_PER_YEAR,
    CostModel,
    device_hour_cost,
    economics,
    energy_per_token_j,
)


@pytest.fixture
def priced(simple_platform):
    """1000 W and $3.60 per hour: one device-second costs $0.001 and 1000 J."""
    return derive_platform(simple_platform, power_w=1000.0, price_usd_per_hour=3.6)


@pytest.fixture
def hand_prediction(priced):
    """A real prediction with round times: TTFT 2 s, TPOT 1 s, 2 devices, batch 4."""
    scenario = Scenario(batch=4, input_tokens=100, output_tokens=11, parallelism=Parallelism(tp=2))
    real = predict(model_from_hf_config(TINY_CONFIG), priced, scenario)
    return dataclasses.replace(real, ttft_s=2.0, tpot_s=1.0, e2e_s=12.0)


def test_hand_computed_energy_and_cost(hand_prediction, priced):
    figures = economics(hand_prediction, priced)
    # Prefill: 1000 W x 2 devices x 2 s over 4 x 100 prompt tokens.
    assert figures.prefill_j_per_token == pytest.approx(10.0)
    # Decode: 1000 W x 2 devices x 1 s per step over 4 sequences.
    assert figures.decode_j_per_token == pytest.approx(500.0)
    # Whole request: 1000 W x 2 x 12 s over 4 x 11 generated tokens.
    assert figures.j_per_output_token == pytest.approx(24000 / 44)
    # $0.001 per device-second: prefill 2 x 2 s / 400 tokens, decode 2 x 1 s / 4 tokens.
    assert figures.prefill_usd_per_million_tokens == pytest.approx(10.0)
    assert figures.decode_usd_per_million_tokens == pytest.approx(500.0)
    assert figures.output_tokens_per_usd == pytest.approx(44 / 0.024)
    assert figures.usd_per_million_output_tokens == pytest.approx(0.024 / 44 * 1e6)
    assert figures.price_basis == "on-demand price_usd_per_hour"


def test_power_fraction_and_utilization_scale_linearly(hand_prediction, priced):
    base = economics(hand_prediction, priced)
    scaled = CostModel(power_fraction=0.5, utilization=0.25).evaluate(hand_prediction, priced)
    assert scaled.decode_j_per_token == pytest.approx(base.decode_j_per_token / 2)
    # Idle paid hours are charged to the tokens served: cost / utilisation.
    assert scaled.decode_usd_per_million_tokens == pytest.approx(
        4 * base.decode_usd_per_million_tokens
    )


def test_data_parallel_replicas_do_not_change_per_token_figures(priced):
    model = model_from_hf_config(TINY_CONFIG)
    one = predict(model, priced, Scenario(batch=2, input_tokens=64, output_tokens=8))
    four = predict(
        model,
        priced,
        Scenario(batch=2, input_tokens=64, output_tokens=8, parallelism=Parallelism(dp=4)),
    )
    for phase in ("prefill", "decode"):
        assert energy_per_token_j(four, priced, phase) == pytest.approx(
            energy_per_token_j(one, priced, phase)
        )


def test_purchase_price_is_amortised(simple_platform):
    bought = derive_platform(simple_platform, price_usd=4 * HOURS_PER_YEAR, power_w=1000.0)
    assert DEFAULT_LIFETIME_YEARS == 4.0
    assert device_hour_cost(bought).usd_per_hour == pytest.approx(1.0)
    assert device_hour_cost(bought, lifetime_years=2).usd_per_hour == pytest.approx(2.0)
    # 1 kW for an hour at $0.10/kWh adds $0.10.
    with_power = device_hour_cost(bought, lifetime_years=4, electricity_usd_per_kwh=0.1)
    assert with_power.usd_per_hour == pytest.approx(1.1)
    assert "electricity" in with_power.basis


def test_missing_power_or_price_gives_none(simple_platform):
    model = model_from_hf_config(TINY_CONFIG)
    prediction = predict(model, simple_platform, Scenario(input_tokens=32, output_tokens=4))
    figures = economics(prediction, simple_platform)
    assert figures.prefill_j_per_token is None and figures.decode_usd_per_million_tokens is None
    assert figures.price_basis == "no price listed"
    with pytest.raises(InputError, match="lists no price_usd"):
        device_hour_cost(simple_platform, lifetime_years=3)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"power_fraction": 0.0}, "power_fraction must be in"),
        ({"power_fraction": 1.5}, "power_fraction must be in"),
        ({"utilization": -0.1}, "utilization must be in"),
        ({"lifetime_years": 0.0}, "lifetime_years must be"),
        ({"electricity_usd_per_kwh": -1.0}, "electricity_usd_per_kwh must be"),
    ],
)
def test_bad_assumptions_are_rejected(kwargs, fragment):
    with pytest.raises(InputError, match=fragment):
        CostModel(**kwargs)


def test_four_bit_weights_cut_decode_energy_of_a_memory_bound_model():
    platform = load_platform("h100-sxm")
    model = model_from_hf_config({**TINY_CONFIG, "hidden_size": 4096, "intermediate_size": 14336})
    figures, tpot_s = {}, {}
    for bits in (16.0, 4.0):
        scenario = Scenario(input_tokens=512, output_tokens=64, precision=Precision(bits))
        prediction = predict(model, platform, scenario)
        figures[bits], tpot_s[bits] = economics(prediction, platform), prediction.tpot_s
    # Batch-1 decode reads the weights every step; 4-bit weights read a quarter of them.
    assert figures[4.0].decode_j_per_token < 0.5 * figures[16.0].decode_j_per_token
    # H100 preset: $2.99 per device-hour, so $/Mtok = 2.99 x TPOT / 3600 x 1e6 at batch 1.
    assert figures[16.0].decode_usd_per_million_tokens == pytest.approx(
        2.99 * tpot_s[16.0] / 3600 * 1e6
    )
