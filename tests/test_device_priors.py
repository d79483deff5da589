"""Device priors from published microbenchmarks (calibration.device_priors)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from calibration.device_priors import (
    CITED_DEVICE_SD,
    device_fractions,
    load_microbenchmarks,
    row_priors,
)
from calibration.measurements import Measurement
from roofline import InputError

HEADER = "hw,quantity,dtype,measured,unit,reference_peak,benchmark,source,read\n"


def _write(tmp_path, *lines: str):
    path = tmp_path / "micro.csv"
    path.write_text(HEADER + "".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_shipped_file_loads_and_every_line_is_cited_and_a_fraction():
    entries = load_microbenchmarks()
    assert len(entries) >= 15
    for entry in entries:
        assert entry.source.startswith(("github:", "http"))
        assert 0.3 < entry.fraction <= 1.0
    # the devices with most stored rows have a cited memory or compute fraction
    fractions = device_fractions(entries)
    for hw in ("a100-sxm-40gb", "h100-sxm", "mi250-gcd", "intel-max-1550", "gaudi2"):
        assert hw in fractions


def test_fractions_are_hand_derived_means(tmp_path):
    path = _write(
        tmp_path,
        "h100-sxm,memory_bandwidth,,3000,GB/s,3350,stream,github:a/b x@1,2026-12-04",
        "h100-sxm,memory_bandwidth,,2700,GB/s,3350,stream,github:a/b x@1,2026-12-04",
        "h100-sxm,dense_gemm,bf16,791.2,TFLOP/s,989,gemm,github:a/b x@1,2026-12-04",
        "h100-sxm,dense_gemm,fp8,989.5,TFLOP/s,1979,gemm,github:a/b x@1,2026-12-04",
    )
    found = device_fractions(load_microbenchmarks(path))["h100-sxm"]
    assert found.memory == pytest.approx((3000 + 2700) / 2 / 3350)
    assert found.compute["bf16"] == pytest.approx(0.8)
    assert found.compute["fp8"] == pytest.approx(0.5)


def test_row_priors_pick_the_rows_gemm_dtype_and_fall_back_to_the_preset(tmp_path):
    path = _write(
        tmp_path,
        "h100-sxm,dense_gemm,bf16,791.2,TFLOP/s,989,gemm,github:a/b x@1,2026-12-04",
        "h100-sxm,dense_gemm,fp8,989.5,TFLOP/s,1979,gemm,github:a/b x@1,2026-12-04",
    )
    fractions = device_fractions(load_microbenchmarks(path))
    base = Measurement(
        model="llama-2-7b",
        hw="h100-sxm",
        runtime="vllm",
        batch=1,
        input_tokens=128,
        output_tokens=1,
        ttft_s=0.01,
    )
    rows = [
        base,
        dataclasses.replace(base, activation_bits=8.0),
        dataclasses.replace(base, hw="a100-sxm-40gb"),
    ]
    compute, memory, cited_c, cited_m = row_priors(
        rows, np.array([0.7, 0.7, 0.7]), np.array([0.8, 0.8, 0.8]), fractions
    )
    assert compute == pytest.approx([0.8, 0.5, 0.7])
    assert memory == pytest.approx([0.8, 0.8, 0.8])  # no memory line: the preset's
    assert cited_c.tolist() == [True, True, False]
    assert not cited_m.any()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("nope,memory_bandwidth,,1,GB/s,1,b,github:a/b,2026", "not a hardware preset"),
        ("h100-sxm,bandwidth,,1,GB/s,3350,b,github:a/b,2026", "quantity must be one of"),
        ("h100-sxm,memory_bandwidth,,1,TB/s,3350,b,github:a/b,2026", "unit of memory_bandwidth"),
        ("h100-sxm,dense_gemm,fp4,1,TFLOP/s,989,b,github:a/b,2026", "dtype must be one of"),
        ("h100-sxm,memory_bandwidth,,-1,GB/s,3350,b,github:a/b,2026", "measured must be a number"),
        ("h100-sxm,memory_bandwidth,,4000,GB/s,3350,b,github:a/b,2026", "fraction <= 1"),
        ("h100-sxm,memory_bandwidth,,2.9,GB/s,3.35,b,github:a/b,2026", "not within 10%"),
        ("h100-sxm,memory_bandwidth,,2900,GB/s,3350,b,,2026", "source is required"),
    ],
)
def test_malformed_lines_are_refused_with_the_field(tmp_path, line, message):
    with pytest.raises(InputError, match=message):
        load_microbenchmarks(_write(tmp_path, line))


def test_cited_devices_get_the_tighter_prior_sd():
    from calibration.store import load_store
    from calibration.transfer import PRIORS, Layout, prior_arrays
    from calibration.transfer_terms import build_terms

    stored = [item for item in load_store() if item.row.source.startswith("XiongjieDai")][:6]
    terms = build_terms(stored, device_priors="microbenchmarks")
    layout = Layout.of(terms)
    _, sd = prior_arrays(layout, PRIORS, terms)
    device_m = sd[layout.blocks["device_m"]]
    for k in range(len(terms.device.names)):
        cited = bool(terms.cited_memory[terms.device.index == k].all())
        assert device_m[k] == (CITED_DEVICE_SD if cited else PRIORS["device"].sd)
    assert terms.cited_memory.any() or "rtx-4090" not in terms.device.names
