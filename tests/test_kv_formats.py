"""KV-cache formats of runtime profiles: where the term applies, its exact size, its fit,
its YAML (hand-derived values and properties)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from calibration import Measurement
from calibration.fit import fit_profile
from calibration.rows import decompose
from genz import (
    KVFormat,
    Parallelism,
    Precision,
    Scenario,
    cost_breakdown,
    load_model,
    load_runtime,
    predict,
    runtime_from_dict,
    step_cost,
)
from genz.model import ModelConfig
from genz.runtime import PhaseProfile, RuntimeProfile
from roofline import InputError, load_platform

PHASE = PhaseProfile(0.5, 0.6, 2e-3, 2e-5)
PLAIN = RuntimeProfile(name="plain", phases={"prefill": PHASE, "decode": PHASE})
FP8 = KVFormat("fp8", nominal_bits=8.0, native_dtype="fp8", emulated_memory_efficiency_scale=0.25)
WITH_KV = dataclasses.replace(PLAIN, kv_formats=(FP8,))
#: 2 layers, 4 heads of 16 (2 KV heads): KV elements per token per layer 2 x 2 x 16 = 64.
TINY = ModelConfig(
    name="tiny",
    hidden_size=64,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    head_dim=16,
    intermediate_size=128,
    vocab_size=256,
)


def _scenario(kv_bits: float, batch: int = 4, tokens: int = 100) -> Scenario:
    return Scenario(batch, tokens, 20, precision=Precision(kv_bits=kv_bits))


def _passes(hw: str, kv_bits: float, runtime: RuntimeProfile):
    costed = cost_breakdown(TINY, load_platform(hw), _scenario(kv_bits), runtime=runtime)
    return costed.prefill, costed.decode


@pytest.mark.parametrize(("hw", "kv_bits"), [("h100-sxm", 8.0), ("a100-sxm-40gb", 16.0)])
def test_kv_format_changes_nothing_with_native_fp8_or_another_kv_width(hw, kv_bits):
    """H100 lists an fp8 peak; a 16-bit cache selects no format: bit-identical costs."""
    for plain, with_kv in zip(
        _passes(hw, kv_bits, PLAIN), _passes(hw, kv_bits, WITH_KV), strict=True
    ):
        for term in ("compute_s", "memory_s", "interconnect_s", "overhead_s"):
            assert np.array_equal(getattr(plain, term), getattr(with_kv, term)), term
    scenario = _scenario(kv_bits)
    platform = load_platform(hw)
    assert predict(TINY, platform, scenario, runtime=PLAIN) == predict(
        TINY, platform, scenario, runtime=WITH_KV
    )


def test_emulated_kv_bytes_stream_at_the_memory_fraction_times_the_scale():
    """A100 (no fp8 peak), 8-bit cache, batch 4, prompt 100, output 20. Decode attention
    at context 100 + 20 / 2 = 110 (genz's mean decode context) reads 4 x 110 x 64 one-byte
    elements and writes 4 x 64, per layer; its memory time grows by those bytes over
    (bandwidth x 0.6) x (1 / 0.25 - 1), every other operator's stays."""
    platform = load_platform("a100-sxm-40gb")
    plain_prefill, plain_decode = _passes("a100-sxm-40gb", 8.0, PLAIN)
    prefill, decode = _passes("a100-sxm-40gb", 8.0, WITH_KV)
    bandwidth = platform.main_memory.bandwidth_bytes_per_s
    decode_kv = (4 * 110 * 64 + 4 * 64) * 1.0 * TINY.num_layers  # bytes, both layers
    prefill_kv = (4 * 100 * 64 + 4 * 100 * 64) * 1.0 * TINY.num_layers  # read + written
    for plain, emulated, kv in (
        (plain_decode, decode, decode_kv),
        (plain_prefill, prefill, prefill_kv),
    ):
        row = plain.names.index("attention")
        extra = kv / (bandwidth * 0.6) * (1 / 0.25 - 1)
        assert emulated.memory_s[row] == pytest.approx(plain.memory_s[row] + extra, rel=1e-12)
        others = [i for i in range(len(plain.names)) if i != row]
        assert np.array_equal(emulated.memory_s[others], plain.memory_s[others])
        assert np.array_equal(emulated.compute_s, plain.compute_s)


def test_step_tables_apply_the_kv_format_as_predict_does():
    """A decode-only step at the mean decode context reproduces predict's TPOT with
    the emulated format (the serving simulator sees the same term)."""
    platform, precision = load_platform("a100-sxm-40gb"), Precision(kv_bits=8.0)
    cost = step_cost(
        TINY, platform, precision, Parallelism(), max_tokens=512, max_sequences=8, runtime=WITH_KV
    )
    expected = predict(TINY, platform, _scenario(8.0), runtime=WITH_KV)
    plain = predict(TINY, platform, _scenario(8.0), runtime=PLAIN)
    decode = cost.step_time(0, 0.0, 0.0, 4, 4 * 110.0, 4, 4)
    assert decode == pytest.approx(expected.tpot_s, rel=1e-9)
    assert expected.tpot_s > plain.tpot_s


def _rows(hardware: tuple[str, ...]) -> list[Measurement]:
    rows = []
    for hw in hardware:
        for kv_bits in (16.0, 8.0):
            for batch in (1, 8, 32):
                for tokens in (128, 1024):
                    rows.append(
                        Measurement(
                            "llama-3-8b",
                            hw,
                            "vllm",
                            batch,
                            tokens,
                            tokens,
                            kv_bits=kv_bits,
                            batch_latency_s=1.0,
                        )
                    )
    return rows


def _measured(rows: list[Measurement], profile: RuntimeProfile) -> list[Measurement]:
    """Rows with the batch latency `genz.predict` gives under ``profile``, times
    1 % log-normal noise."""
    noise = np.exp(np.random.default_rng(1).normal(0.0, 0.01, len(rows)))
    out = []
    for row, factor in zip(rows, noise, strict=True):
        scenario = Scenario(
            row.batch, row.input_tokens, row.output_tokens, precision=Precision(kv_bits=row.kv_bits)
        )
        latency = predict(load_model(row.model), load_platform(row.hw), scenario, runtime=profile)
        out.append(dataclasses.replace(row, batch_latency_s=latency.e2e_s * float(factor)))
    return out


def test_calibration_identifies_a_known_emulated_scale():
    truth = dataclasses.replace(
        WITH_KV, kv_formats=(dataclasses.replace(FP8, emulated_memory_efficiency_scale=0.2),)
    )
    rows = _measured(_rows(("a100-sxm-40gb", "h100-sxm")), truth)
    kv = (dataclasses.replace(FP8, emulated_memory_efficiency_scale=1.0),)
    fit = fit_profile(decompose(rows, kv_formats=kv), "synthetic", kv_formats=kv)
    name = "fp8.emulated_memory_efficiency_scale"
    assert fit.values[name] == pytest.approx(0.2, rel=0.05)
    low, high = fit.intervals[name]
    assert low <= 0.2 <= high
    assert fit.values["memory_efficiency"] == pytest.approx(0.6, rel=0.05)
    assert fit.profile.kv_formats[0].emulated_memory_efficiency_scale == fit.values[name]
    # On H100 alone (fp8 arithmetic) no row identifies the term: left out, said why.
    h100 = [row for row in rows if row.hw == "h100-sxm"]
    alone = fit_profile(decompose(h100, kv_formats=kv), "synthetic", kv_formats=kv)
    assert alone.unused[name] == (
        "no row has a fp8 KV cache (kv_bits 8) on a device without fp8 arithmetic"
    )
    assert alone.profile.kv_formats[0].emulated_memory_efficiency_scale == 1.0


def _profile(**fp8: object) -> dict:
    value = {"value": 8, "source": "test"}
    entry = {"nominal_bits": value, "native_dtype": {"value": "fp8", "source": "test"}, **fp8}
    phase = {
        key: {"value": v, "source": "test"}
        for key, v in (
            ("compute_efficiency", 0.5),
            ("memory_efficiency", 0.6),
            ("step_overhead_s", 0.0),
        )
    }
    return {"name": "t", "prefill": phase, "decode": phase, "kv_formats": {"fp8": entry}}


def test_kv_formats_yaml_reads_back_and_bad_entries_name_the_field():
    scale = {"emulated_memory_efficiency_scale": {"value": 0.3, "source": "test"}}
    profile = runtime_from_dict(_profile(**scale))
    assert profile.kv_formats == (KVFormat("fp8", 8.0, "fp8", 0.3),)
    with pytest.raises(
        InputError,
        match=r"^<dict>: kv_formats\.fp8\.emulated_memory_efficiency_scale: value must be a "
        r"number in \[0\.01, 1\], got 1\.5$",
    ):
        runtime_from_dict(_profile(emulated_memory_efficiency_scale={"value": 1.5, "source": "t"}))
    bad_dtype = _profile()
    bad_dtype["kv_formats"]["fp8"]["native_dtype"]["value"] = "fp9"
    with pytest.raises(InputError, match=r"kv_formats\.fp8\.native_dtype: value must be a dtype"):
        runtime_from_dict(bad_dtype)
    unknown = _profile()
    unknown["device_classes"] = {
        "nvidia-gpu": {"kv_formats": {"int8": {"emulated_memory_efficiency_scale": scale}}}
    }
    with pytest.raises(InputError, match=r"kv_formats\.int8: not a format of kv_formats"):
        runtime_from_dict(unknown)


def test_shipped_vllm_profile_has_its_fp8_cache_fitted_on_the_a100_class():
    vllm = load_runtime("vllm")
    (fmt,) = vllm.kv_formats
    assert (fmt.name, fmt.nominal_bits, fmt.native_dtype) == ("fp8", 8.0, "fp8")
    nvidia = vllm.kv_scale(fmt, "nvidia-gpu")
    assert 0.01 <= nvidia < 1.0
    assert vllm.kv_scale(fmt, "amd-gpu") == fmt.emulated_memory_efficiency_scale
