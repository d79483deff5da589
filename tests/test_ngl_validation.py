"""The llama.cpp ``-ngl`` sweep (data/validation/ngl/): its converter, its host preset
and the benchmark's row selection."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from helpers import load_script

from roofline import load_platform

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "data" / "validation" / "ngl"


@pytest.fixture(scope="module")
def convert() -> ModuleType:
    return load_script(FOLDER / "convert.py", "ngl_convert")


def test_converter_reproduces_the_shipped_csv(convert: ModuleType) -> None:
    assert (
        convert.render((FOLDER / "eval_ms_by_ngl.txt").read_text())
        == (FOLDER / "ngl_runs.csv").read_text()
    )


def test_converter_maps_ngl_to_gpu_layers(convert: ModuleType) -> None:
    rows = {(r["source_model"], int(r["ngl"])): r for r in convert.rows(convert.RAW.read_text())}
    assert len(rows) == 34 + 42 + 62  # L + 2 values per model (-ngl 0 .. L + 1)
    seven = "LLaMA 7b q4_0"
    assert rows[(seven, 0)]["gpu_layers"] == "0"
    assert rows[(seven, 31)]["gpu_layers"] == "31"
    assert rows[(seven, 32)]["gpu_layers"] == ""  # output layer left on the host
    assert rows[(seven, 33)]["gpu_layers"] == "32"  # -ngl L + 1: the whole model
    assert rows[(seven, 0)]["tpot_ms"] == "110.77"
    assert rows[(seven, 0)]["tokens_per_s"] == "9.028"  # 1000 / 110.77
    assert all(r["gpu_layers"] == "" for k, r in rows.items() if k[0] == "LLaMA 33b q4_0")


def test_converter_refuses_a_short_line(convert: ModuleType) -> None:
    with pytest.raises(ValueError, match="expected L \\+ 2"):
        convert.rows("7b q4_0 2 1.0 2.0 3.0")


def test_ryzen_preset_numbers_by_hand() -> None:
    host = load_platform("ryzen-7-3700x")
    assert host.kind == "cpu"
    # 2 channels x 3200 MT/s x 8 B
    assert host.main_memory.bandwidth_bytes_per_s == pytest.approx(2 * 3200e6 * 8)
    # 32 GiB of DIMMs
    assert host.main_memory.capacity_bytes == pytest.approx(32 * 2**30, rel=1e-3)
    # 8 cores x 3.6 GHz x 32 FP32 FLOP/cycle (two 256-bit FMA pipes)
    assert host.peak_flops_per_s["fp32"] == pytest.approx(8 * 3.6e9 * 32)
    assert host.peak_flops_per_s["fp16"] == host.peak_flops_per_s["fp32"]


def test_benchmark_scores_only_expressible_rows() -> None:
    bench = load_script(ROOT / "benchmarks" / "ngl_validate.py", "ngl_validate")
    rows = [
        r
        for r in bench.load_rows()
        if r["source_model"] == "LLaMA 7b q4_0" and r["ngl"] in ("0", "32", "33")
    ]
    scored, skipped = bench.score(rows)
    assert [s.ngl for s in scored] == [0, 33]
    assert [r["ngl"] for r in skipped] == ["32"]
    all_cpu, all_gpu = scored
    assert all_gpu.gpu_layers == 32
    assert all_gpu.predicted_ms < all_cpu.predicted_ms
    assert all_cpu.error == pytest.approx(all_cpu.predicted_ms / 110.77 - 1)


def test_split_check_is_zero_on_a_straight_line() -> None:
    bench = load_script(ROOT / "benchmarks" / "ngl_validate.py", "ngl_validate")
    rows = [
        {"source_model": "m", "layers": "4", "ngl": str(n), "gpu_layers": g, "tpot_ms": t}
        for n, g, t in (
            (0, "0", "10"),
            (1, "1", "8"),
            (2, "2", "6"),
            (3, "3", "4"),
            (4, "", "99"),
            (5, "4", "2"),
        )
    ]
    assert bench.split_check(rows) == {"m": (3, 0.0, 0.0)}
    rows[2]["tpot_ms"] = "5"  # line says 6 at n = 2: +20 %
    count, mape, bias = bench.split_check(rows)["m"]
    assert count == 3 and mape == pytest.approx(0.2 / 3) and bias == pytest.approx(0.2 / 3)
