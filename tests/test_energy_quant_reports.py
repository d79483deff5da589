"""The energy and quantisation sections of benchmarks/validate.py: hand-derived values
on small frames, and the converter's dtype labels mapped to bits."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from calibration import Measurement, load_measurements
from roofline import data_dir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from energy_accuracy import energy_frame, fit_coefficients, runtime_multiplier
from quant_accuracy import group_of, published_labels, quant_frame

BENCH = data_dir() / "validation" / "llm_inference_bench" / "normalized.csv"


def _row(hw: str, power_w: float, source: str, latency_s: float = 2.0) -> Measurement:
    return Measurement(
        model="llama-3-8b",
        hw=hw,
        runtime="vllm",
        batch=1,
        input_tokens=100,
        output_tokens=100,
        batch_latency_s=latency_s,
        power_w=power_w,
        source=source,
    )


def _errors(sources: list[str], held_out: list[float], ideal: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "runtime": "vllm",
            "metric": "batch latency",
            "source": sources,
            "held_out_pct": held_out,
            "ideal_pct": ideal,
        }
    )


def test_energy_uses_the_other_hardwares_power_fraction():
    # A100 40GB board 400 W drawing 200 W (0.5); H100 SXM board 700 W drawing 350 W (0.5).
    rows = [_row("a100-sxm-40gb", 200.0, "p:2"), _row("h100-sxm", 350.0, "p:3")]
    energy = energy_frame(_errors(["p:2", "p:3"], [10.0, 0.0], [0.0, -50.0]), rows)
    a100, h100 = energy.iloc[0], energy.iloc[1]
    assert a100.measured_j == pytest.approx(200.0 * 2.0 / 100)  # W x s / tokens = 4 J
    assert a100.fraction == pytest.approx(0.5) and h100.fraction == pytest.approx(0.5)
    # held-out latency 10 % long, power right: energy 10 % high; at TDP 2 x 1.1.
    assert a100.fraction_held_out_pct == pytest.approx(10.0)
    assert a100.tdp_held_out_pct == pytest.approx(120.0)
    assert h100.fraction_held_out_pct == pytest.approx(0.0)
    assert h100.tdp_ideal_pct == pytest.approx(0.0)  # 700 / 350 x (1 - 0.5) = 1


def test_energy_fraction_is_not_fitted_on_the_rows_own_hardware():
    rows = [
        _row("a100-sxm-40gb", 200.0, "p:2"),
        _row("a100-sxm-40gb", 400.0, "p:3"),
        _row("h100-sxm", 490.0, "p:4"),
    ]
    energy = energy_frame(_errors(["p:2", "p:3", "p:4"], [0.0] * 3, [0.0] * 3), rows)
    assert list(energy.fraction) == pytest.approx([0.7, 0.7, 0.75])  # 490/700; median(0.5, 1)


def test_presets_hold_the_power_fit_on_all_power_rows():
    # The fit uses measured power and time only: the latency errors do not enter it.
    rows = load_measurements(BENCH)
    powered = [row for row in rows if row.power_w is not None]
    sources = [row.source for row in powered]
    frame = _errors(sources, [0.0] * len(sources), [0.0] * len(sources))
    frame["runtime"] = [row.runtime for row in powered]
    energy = energy_frame(frame, rows)
    c_flop, c_byte = fit_coefficients(energy)
    for hw, part in energy.groupby("hw"):
        line = part.iloc[0]
        assert line.preset_j_per_flop == pytest.approx(
            c_flop * line.tdp_w / line.peak_flop_s, rel=5e-3
        ), hw
        assert line.preset_j_per_byte == pytest.approx(
            c_byte * line.tdp_w / line.bandwidth_b_s, rel=5e-3
        ), hw
    # Held out, each device's energies come from the other device's rows only.
    a100 = energy[energy.hw == "a100-sxm-40gb"].iloc[0]
    assert (a100.c_flop, a100.c_byte) == pytest.approx(
        fit_coefficients(energy[energy.hw != "a100-sxm-40gb"])
    )


def test_activity_energy_is_idle_plus_work_below_the_cap():
    # One A100 row: its energy = (idle x time + J/FLOP x FLOP + J/byte x bytes) / tokens.
    rows = [_row("a100-sxm-40gb", 200.0, "p:2"), _row("h100-sxm", 350.0, "p:3")]
    energy = energy_frame(_errors(["p:2", "p:3"], [0.0, 0.0], [0.0, 0.0]), rows)
    line = energy.iloc[0]
    j_flop = line.c_flop * line.tdp_w / line.peak_flop_s
    j_byte = line.c_byte * line.tdp_w / line.bandwidth_b_s
    flop, moved = line.prefill_flop + line.decode_flop, line.prefill_bytes + line.decode_bytes
    joules = line.idle_w * line.measured_s + j_flop * flop + j_byte * moved
    assert joules / line.measured_s < line.tdp_w  # the cap does not bind on this row
    predicted = joules / line.tokens
    assert line.activity_held_out_pct == pytest.approx(100 * (predicted / line.measured_j - 1))


@pytest.mark.parametrize(
    ("weight", "kv", "group"),
    [
        ("fp16", "fp16", None),
        ("fp16", "fp8", "FP8 KV cache, 16-bit weights"),
        ("fp16", "int8", "INT8 KV cache, 16-bit weights"),
        ("fp8", "fp8", "FP8 weights (W8A8) + FP8 KV"),
        ("int8", "int8", "INT8 SmoothQuant weights + 8-bit KV"),
    ],
)
def test_group_of_a_published_label(weight, kv, group):
    assert group_of(weight, kv) == group


#: Published (weight, KV) dtypes -> (weight, activation, KV) bits: fp8 weights on H100
#: and TensorRT-LLM int8 SmoothQuant quantise activations too.
EXPECTED_BITS = {
    ("fp16", "fp16"): (16.0, 16.0, 16.0),
    ("fp16", "fp8"): (16.0, 16.0, 8.0),
    ("fp16", "int8"): (16.0, 16.0, 8.0),
    ("fp8", "fp8"): (8.0, 8.0, 8.0),
    ("int8", "fp8"): (8.0, 8.0, 8.0),
    ("int8", "int8"): (8.0, 8.0, 8.0),
}


def test_converter_maps_every_dtype_label_to_its_bits():
    labels = published_labels()
    quantised = [row for row in load_measurements(BENCH) if row.source in labels]
    assert len(quantised) == 116
    for row in quantised:
        bits = (row.weight_bits, row.activation_bits, row.kv_bits)
        assert bits == EXPECTED_BITS[labels[row.source]], row.source
    assert sum(row.kv_bits == 8 for row in quantised) == 76
    assert sum(labels[row.source][0] == "fp8" for row in quantised) == 20


def test_quant_frame_pairs_a_group_with_its_16_bit_rows():
    rows = load_measurements(BENCH)
    labels = published_labels()
    fp8 = next(s for s, (w, _) in labels.items() if w == "fp8")
    twin = next(
        r.source
        for r in rows
        if r.source.startswith("all_results")
        and r.weight_bits == 16
        and (r.hw, r.runtime, r.model) == ("h100-sxm", "vllm", "llama-3-8b")
    )
    frame = _errors([fp8, twin], [5.0, -5.0], [0.0, 0.0])
    frame["hw"], frame["tp"] = "h100-sxm", 1
    paired = quant_frame(frame, rows)
    groups = dict(zip(paired.source, paired.group, strict=True))
    assert groups == {fp8: "FP8 weights (W8A8) + FP8 KV", twin: "16-bit"}


def test_runtime_multiplier_is_measured_over_modelled_dynamic_power_by_hand():
    """Two rows: 100 W and 300 W above idle measured, 200 W modelled -> median 1.0;
    no rows -> 1 (no information)."""
    rows = pd.DataFrame(
        {
            "measured_s": [2.0, 2.0],
            "tdp_w": [400.0, 400.0],
            "peak_flop_s": [1e14, 1e14],
            "bandwidth_b_s": [1e12, 1e12],
            # c_flop 0.5 x 400 W / 1e14 FLOP/s x (2e14 FLOP / 2 s) = 200 W; no bytes
            "prefill_flop": [1e14, 1e14],
            "decode_flop": [1e14, 1e14],
            "prefill_bytes": [0.0, 0.0],
            "decode_bytes": [0.0, 0.0],
            "measured_w": [150.0, 350.0],
            "devices": [1, 1],
            "idle_w": [50.0, 50.0],
        }
    )
    assert runtime_multiplier(rows, 0.5, 0.7) == pytest.approx(1.0)
    assert runtime_multiplier(rows.iloc[:1], 0.5, 0.7) == pytest.approx(0.5)
    assert runtime_multiplier(rows.iloc[:0], 0.5, 0.7) == 1.0
