"""Rows that give the AMD and Intel GPU device classes a second measured device:
llama.cpp on MI300X, RX 7900 XTX and Arc A770 and vLLM on MI300X (all in
``device_class_runs_source.csv``), and the ``arc-a770`` / ``rx-7900-xtx`` presets."""

import runpy
import sys
from pathlib import Path

import pytest

from calibration import load_measurements
from roofline import data_dir, load_platform

VALIDATION = data_dir() / "validation"
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_arc_a770_preset_carries_its_derived_spec_values_and_the_intel_gpu_class():
    arc = load_platform("arc-a770")
    # 512 XMX engines x 128 FP16 FLOP/clock x 2.1 GHz; 560 GB/s GDDR6, 16 GB
    assert arc.peak("fp16") == pytest.approx(512 * 128 * 2.1e9, rel=1e-3)
    assert arc.main_memory.bandwidth_bytes_per_s == pytest.approx(560e9)
    assert arc.main_memory.capacity_bytes == pytest.approx(16 * 2**30, rel=1e-4)  # 16 GiB
    assert arc.device_class == load_platform("intel-max-1550").device_class == "intel-gpu"
    for amd in ("mi300x", "rx-7900-xtx"):
        assert load_platform(amd).device_class == load_platform("mi250-gcd").device_class


def test_llama_cpp_rows_on_the_second_devices_follow_the_converter_formulas():
    rows = [
        row
        for row in load_measurements(VALIDATION / "device_class_runs.csv")
        if row.runtime == "llama.cpp"
    ]
    assert {row.hw for row in rows} == {"mi300x", "arc-a770", "rx-7900-xtx"}
    assert not [
        r
        for r in load_measurements(VALIDATION / "measurements_normalized.csv")
        if r.hw in {"mi300x", "arc-a770", "rx-7900-xtx"}
    ]  # the shared file stays as copied
    mi300x = [row for row in rows if row.hw == "mi300x"]
    # llama-bench pp512 1334.37 t/s -> TTFT 512 / 1334.37 s; tg128 183.18 t/s -> ITL 1 / 183.18 s
    assert any(row.ttft_s == pytest.approx(512 / 1334.37) for row in mi300x)
    assert any(row.itl_s == pytest.approx(1 / 183.18) for row in mi300x)
    arc = [row for row in rows if row.hw == "arc-a770"]
    # SYCL.md decode rates with no stated lengths: predicted at input 64 / output 512
    assert sorted(round(1 / row.itl_s, 6) for row in arc) == [34, 37, 42, 55]
    assert all((row.input_tokens, row.output_tokens) == (64, 512) for row in arc)
    xtx = [row for row in rows if row.hw == "rx-7900-xtx"]
    assert [row.ttft_s for row in xtx if row.ttft_s] == [pytest.approx(512 / 3206.94)]
    assert [row.itl_s for row in xtx if row.itl_s] == [pytest.approx(1 / 102.92)]


def test_device_class_runs_converter_reproduces_the_committed_file(tmp_path, monkeypatch):
    out = tmp_path / "converted.csv"
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    source = VALIDATION / "device_class_runs_source.csv"
    monkeypatch.setattr(sys, "argv", ["convert", "--source", str(source), "--out", str(out)])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(BENCHMARKS / "convert_published_runs.py"), run_name="__main__")
    assert exit_info.value.code == 0
    assert out.read_bytes() == (VALIDATION / "device_class_runs.csv").read_bytes()


def test_vllm_mi300x_latency_rows_are_batch_latencies_as_published():
    rows = [
        r for r in load_measurements(VALIDATION / "device_class_runs.csv") if r.runtime == "vllm"
    ]
    assert len(rows) == 41
    assert {(row.hw, row.runtime, row.tp) for row in rows} == {("mi300x", "vllm", 8)}
    # ROCm/vllm dev-docker table: Llama 3.1 70B FP8, batch 1, 128 in / 2048 out, 17.236 s
    first = rows[0]
    assert (first.model, first.batch, first.input_tokens, first.output_tokens) == (
        "llama-3.1-70b",
        1,
        128,
        2048,
    )
    assert first.batch_latency_s == 17.236 and first.weight_bits == 8 and first.kv_bits == 16
    assert all(
        row.source.startswith("device_class_runs_source.csv:") and "read 2026-12-03" in row.source
        for row in rows
    )
