"""Parametric accelerators (roofline.design): platforms, area, yield, cost, TDP."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import pytest

from genz import Scenario, load_model, predict
from roofline import (
    AcceleratorDesign,
    InputError,
    MemorySpec,
    design_area,
    design_constants,
    design_cost,
    design_platform,
    die_yield,
    dies_per_wafer,
    load_platform,
    memory_technologies,
    parse_memory,
    process_nodes,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from cost_model import fit, leave_one_die_out, load_rows, row_design


def h100_like(**changes: object) -> AcceleratorDesign:
    """A design with the H100 SXM preset's spec (peaks, HBM3 x5 at 3350 GB/s, and the
    preset's capacity: the 81,559 MiB the driver reports, one fifth per stack)."""
    preset = load_platform("h100-sxm")
    per_stack_gb = preset.main_memory.capacity_bytes / 5 / 1e9
    fields: dict[str, object] = {
        "compute_tflops": {d: p / 1e12 for d, p in preset.peak_flops_per_s.items()},
        "memory": MemorySpec("hbm3", 5, capacity_gb_per_unit=per_stack_gb, bandwidth_gb_per_s=3350),
        "sram_mb": 132 * 1.048576,
        "node": "n4",
        "clock_ghz": 1.98,
        "links": {"nvlink4": 18, "pcie5": 16},
        "interconnect": preset.interconnect,
        "efficiency": preset.efficiency,
        "kernel_overhead_s": preset.kernel_overhead_s,
        "name": "h100-design",
    }
    fields.update(changes)
    return AcceleratorDesign(**fields)  # type: ignore[arg-type]


def test_design_equal_to_a_preset_reproduces_its_predictions_exactly() -> None:
    preset = load_platform("h100-sxm")
    platform = design_platform(h100_like())
    model = load_model("llama-3.1-8b")
    for scenario in (Scenario(), Scenario(batch=16, input_tokens=2048, output_tokens=256)):
        ours = predict(model, platform, scenario)
        theirs = predict(model, preset, scenario)
        assert ours.ttft_s == theirs.ttft_s
        assert ours.tpot_s == theirs.tpot_s
        assert ours.e2e_s == theirs.e2e_s
        assert ours.throughput_tokens_per_s == theirs.throughput_tokens_per_s
        assert ours.footprint == theirs.footprint
        # Capacity: 5 x (capacity / 5) rounds in the last bit; everything else is equal.
        mine = ours.capacity.capacity_bytes
        assert mine == pytest.approx(theirs.capacity.capacity_bytes, rel=1e-12)
        assert dataclasses.replace(ours.capacity, capacity_bytes=mine) == dataclasses.replace(
            theirs.capacity, capacity_bytes=mine
        )


def test_platform_carries_modelled_tdp_and_cost() -> None:
    design = h100_like()
    cost = design_cost(design)
    platform = design_platform(design, cost)
    assert platform.power_w == pytest.approx(cost.tdp_w)
    assert platform.price_usd == pytest.approx(cost.device_cost_usd)
    assert platform.main_memory.capacity_bytes == pytest.approx(
        load_platform("h100-sxm").main_memory.capacity_bytes, rel=1e-12
    )
    assert platform.main_memory.bandwidth_bytes_per_s == 3350e9
    parts = cost.die_usd + cost.memory_usd + cost.package_usd + cost.board_usd
    assert cost.device_cost_usd == pytest.approx(parts)


def test_units_times_clock_times_flop_per_cycle() -> None:
    memory = MemorySpec("hbm3e", 6)
    design = AcceleratorDesign.from_units(132, 2.0, {"bf16": 4096, "fp8": 8192}, memory)
    assert design.compute_tflops["bf16"] == pytest.approx(132 * 2.0e9 * 4096 / 1e12)
    assert design.compute_tflops["fp8"] == pytest.approx(2 * design.compute_tflops["bf16"])
    # Six HBM3E stacks at 9.6 Gb/s x 1024 bits = 1228.8 GB/s each; 36 GB each.
    assert memory.bandwidth_bytes_per_s == pytest.approx(6 * 1228.8e9)
    assert memory.capacity_bytes == 6 * 36e9


def test_yield_and_dies_per_wafer_against_a_hand_calculation() -> None:
    # 100 mm^2 = 1 cm^2 at D0 = 0.1 / cm^2: negative binomial, alpha 3:
    # (1 + 0.1 / 3)^-3 = (30 / 31)^3 = 27000 / 29791 = 0.906314;
    # Murphy: ((1 - e^-0.1) / 0.1)^2 = 0.951626^2 = 0.905592.
    assert die_yield(100, 0.1, "negative_binomial", 3.0) == pytest.approx(27000 / 29791, abs=1e-9)
    assert die_yield(100, 0.1, "murphy") == pytest.approx(0.905592, abs=1e-6)
    assert die_yield(100, 0.0) == 1.0
    # 300 mm wafer: pi 150^2 / 100 - pi 300 / sqrt(200) = 706.858 - 66.643 = 640.215.
    assert dies_per_wafer(100) == pytest.approx(640.215, abs=1e-3)
    # Larger dies yield worse.
    assert die_yield(800, 0.1) < die_yield(400, 0.1) < die_yield(100, 0.1)


def test_die_cost_from_wafer_price_dies_and_yield() -> None:
    cost = design_cost(h100_like())
    node = process_nodes()["n5"]
    constants = design_constants()
    expected = node.wafer_usd / (
        dies_per_wafer(cost.die_area_mm2)
        * die_yield(cost.die_area_mm2, node.defect_density_per_cm2, "negative_binomial", 3.0)
    )
    assert constants.yield_model == "negative_binomial"
    assert cost.die_usd == pytest.approx(expected)


def test_cost_is_monotone_in_area_and_memory_size() -> None:
    costs = [design_cost(h100_like(sram_mb=mb)) for mb in (10, 50, 100, 150)]
    areas = [c.area_mm2 for c in costs]
    assert areas == sorted(areas) and len(set(areas)) == 4
    assert [c.die_usd for c in costs] == sorted(c.die_usd for c in costs)
    assert [c.device_cost_usd for c in costs] == sorted(c.device_cost_usd for c in costs)
    by_capacity = [
        design_cost(h100_like(memory=MemorySpec("hbm3", 5, capacity_gb_per_unit=gb)))
        for gb in (8, 16, 24)
    ]
    totals = [c.device_cost_usd for c in by_capacity]
    assert totals == sorted(totals) and len(set(totals)) == 3
    compute = [design_cost(h100_like(compute_tflops={"bf16": t})) for t in (250, 500, 989)]
    assert [c.area_mm2 for c in compute] == sorted(c.area_mm2 for c in compute)


def test_dram_instead_of_hbm_needs_no_interposer_and_costs_less_per_gb() -> None:
    hbm = design_cost(h100_like(memory=MemorySpec("hbm2e", 5, capacity_gb_per_unit=16)))
    ddr = design_cost(h100_like(memory=MemorySpec("ddr5", 16, capacity_gb_per_unit=5)))
    assert ddr.memory_usd < hbm.memory_usd
    assert ddr.package_usd < hbm.package_usd


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"compute_tflops": {"bf16": -5}}, ("compute_tflops[bf16]", "TFLOP/s")),
        ({"compute_tflops": {"fp8": 100}}, ("compute_tflops", "bf16 or fp16")),
        ({"sram_mb": -1}, ("sram_mb", "MB")),
        ({"clock_ghz": 0}, ("clock_ghz", "GHz")),
        ({"node": "n2x"}, ("process node", "n2x")),
        ({"links": {"nvlink9": 4}}, ("link technology", "nvlink9")),
        ({"links": {"pcie5": -1}}, ("links[pcie5]", "lanes")),
        ({"dies": 0}, ("dies", ">= 1")),
    ],
)
def test_bad_design_parameters_are_one_line_errors(
    changes: dict[str, object], words: tuple[str, ...]
) -> None:
    with pytest.raises(InputError) as error:
        h100_like(**changes)
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda: MemorySpec("hbm9", 4), ("memory technology", "hbm9", "hbm3e")),
        (lambda: MemorySpec("hbm3e", 0), ("memory.units", ">= 1")),
        (lambda: MemorySpec("hbm3e", 20), ("memory.units", "<= 8")),
        (lambda: MemorySpec("hbm3", 4, capacity_gb_per_unit=-2), ("capacity_gb_per_unit", "GB")),
        (lambda: MemorySpec("hbm3", 2, gbps_per_pin=12), ("gbps_per_pin", "Gb/s", "6.4")),
        (
            lambda: MemorySpec("hbm3", 2, bandwidth_gb_per_s=3350),
            ("memory.bandwidth_gb_per_s", "GB/s", "1638.4", "2 hbm3"),
        ),
        (lambda: parse_memory("hbm3e"), ("--memory", "technology:units")),
        (lambda: parse_memory("hbm3e:x"), ("--memory", "integer")),
    ],
)
def test_bad_memory_parameters_are_one_line_errors(build, words: tuple[str, ...]) -> None:
    with pytest.raises(InputError) as error:
        build()
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_a_die_beyond_the_reticle_is_an_error_unless_split() -> None:
    big = h100_like(compute_tflops={"bf16": 4000}, sram_mb=400)
    with pytest.raises(InputError, match="reticle"):
        design_cost(big)
    split = dataclasses.replace(big, dies=4)
    assert design_cost(split).die_area_mm2 < design_constants().reticle_mm2


def test_every_table_value_names_a_source() -> None:
    for tech in memory_technologies().values():
        for key in ("max_gbps_per_pin", "pj_per_bit", "usd_per_gb", "phy_mm2"):
            assert tech.sources.get(key), (tech.name, key)
    for node in process_nodes().values():
        for key in ("logic_mtr_per_mm2", "wafer_usd", "defect_density_per_cm2"):
            assert node.sources.get(key), (node.name, key)
    constants = design_constants()
    for field in dataclasses.fields(constants):
        if field.name != "sources":
            assert constants.sources.get(field.name), field.name


def test_validation_rows_are_re_read_and_scored() -> None:
    rows = load_rows()
    assert len(rows) >= 20
    assert len({row["die"] for row in rows}) >= 14
    for row in rows:
        assert row["source"].strip(), row["device"]
        assert float(row["die_area_mm2"]) > 0 and float(row["tdp_w"]) > 0
        row_design(row, physical=True)
        row_design(row, physical=False)
    # The shipped constants are the all-rows fit (benchmarks/cost_model.py --write).
    shipped = design_constants()
    for key, value in fit(rows).items():
        assert getattr(shipped, key) == pytest.approx(value, rel=1e-4, abs=1e-9), key
    # Leave-one-die-out area error, as docs/hardware-design.md quotes (19.6%).
    every = leave_one_die_out(rows)
    results = [r for r in every if r["bound"] != "upper"]
    per_die: dict[object, dict[str, object]] = {}
    for r in results:
        per_die.setdefault(r["die"], r)  # the die's first row, as the benchmark scores
    errors = [abs(float(r["area_model_mm2"]) / float(r["area_mm2"]) - 1) for r in per_die.values()]
    assert 100 * sum(errors) / len(errors) == pytest.approx(19.6, abs=0.1)
    # Leave-one-die-out TDP error with the DRAM-traffic multiplier (33.5%) and without
    # it (36.4%), as docs/hardware-design.md quotes: the multiplier is kept because it
    # helps out of sample.
    for scored, quoted in ((every, 33.5), (leave_one_die_out(rows, False), 36.4)):
        tdp = [abs(float(r["tdp_model_w"]) / float(r["tdp_w"]) - 1) for r in scored]
        assert 100 * sum(tdp) / len(tdp) == pytest.approx(quoted, abs=0.1)


def test_h100_like_design_area_is_near_the_published_die() -> None:
    area = design_area(h100_like()).total_mm2
    assert math.isfinite(area)
    assert 0.7 * 814 < area < 1.3 * 814


def test_a_designs_scale_out_path_is_its_pcie_lanes() -> None:
    from roofline import link_parameters

    both = design_platform(
        AcceleratorDesign(
            {"bf16": 500.0}, MemorySpec("hbm3e", 4), links={"nvlink4": 18, "pcie5": 16}
        )
    )
    link = both.interconnect
    assert link.link_bandwidth_bytes_per_s == pytest.approx(18 * 25e9)
    assert link.scaleout_bandwidth_bytes_per_s == pytest.approx(16 * 3.938e9)
    inside, _ = link_parameters(both, 8)
    beyond, _ = link_parameters(both, 9)
    assert float(inside) == pytest.approx(18 * 25e9 * 0.8)
    assert float(beyond) == pytest.approx(16 * 3.938e9 * 0.8)
    nvlink_only = design_platform(
        AcceleratorDesign({"bf16": 500.0}, MemorySpec("hbm3e", 4), links={"nvlink4": 18})
    )
    assert nvlink_only.interconnect.scaleout_bandwidth_bytes_per_s is None
