"""``hardware.design`` in co-design spaces: designs as platforms, cost objectives."""

from __future__ import annotations

import pytest

from roofline import AcceleratorDesign, InputError, MemorySpec, design_cost
from search.codesign import Constraints, search_designs, space_from_dict

HOURS_PER_YEAR = 365.25 * 24


def space(design: dict, **extra: object) -> dict:
    return {
        "name": "hw",
        "hardware": {"design": design, **extra},
        "model": {"base": "llama-3.2-1b"},
        "precision": {"weight_bits": [16]},
        "workload": {"batch": [1, 8], "input_tokens": 512, "output_tokens": 128},
        "objectives": ["usd_per_mtok", "tpot"],
    }


DESIGN = {
    "compute_tflops": [100, 400],
    "memory": [
        {"technology": "hbm3e", "units": [2]},
        {"technology": "lpddr5x", "stacks": [16], "capacity_gb_per_unit": 4},
    ],
    "sram_mb": 32,
    "node": "n5",
}


def test_design_section_becomes_platforms_with_their_costs() -> None:
    loaded = space_from_dict(space(DESIGN, presets=["h100-sxm"]))
    hardware = loaded.hardware
    names = [p.name for p in hardware.platforms]
    assert names[0] == "h100-sxm" and len(names) == 5
    assert "design-400tf-lpddr5xx16x4gb-32mb-n5" in names
    assert hardware.cost_of(0) is None
    expected = design_cost(
        AcceleratorDesign(
            compute_tflops={"bf16": 100},
            vector_tflops_fp32=100 / 16,
            memory=MemorySpec("hbm3e", 2),
            sram_mb=32,
            node="n5",
        )
    )
    assert hardware.cost_of(1).device_cost_usd == pytest.approx(expected.device_cost_usd)
    assert hardware.platforms[1].price_usd == pytest.approx(expected.device_cost_usd)


def test_cost_objectives_are_computed_per_design() -> None:
    result = search_designs(space_from_dict(space(DESIGN)), keep="feasible")
    frame = result.designs
    for column in ("device_cost_usd", "area_mm2", "tdp_w", "usd_per_mtok", "perf_per_cost"):
        assert frame[column].notna().all(), column
    row = frame.iloc[0]
    hourly = row["device_cost_usd"] / (4 * HOURS_PER_YEAR) + row["tdp_w"] / 1000 * 0.10
    expected = row["devices"] * hourly / 3600 / row["throughput_tokens_per_s"] * 1e6
    assert row["usd_per_mtok"] == pytest.approx(expected)
    assert row["perf_per_cost"] == pytest.approx(
        row["throughput_tokens_per_s_per_device"] / row["device_cost_usd"]
    )
    # Larger batches amortise the same device over more tokens.
    one = frame[(frame["platform"] == row["platform"]) & (frame["batch"] == 1)]
    eight = frame[(frame["platform"] == row["platform"]) & (frame["batch"] == 8)]
    assert float(eight["usd_per_mtok"].iloc[0]) < float(one["usd_per_mtok"].iloc[0])


def test_area_and_cost_constraints_bind() -> None:
    loaded = space_from_dict(space(DESIGN))
    free = search_designs(loaded, keep="feasible").designs
    limit = float(free["area_mm2"].median())
    bound = search_designs(loaded, constraints=Constraints(max_area_mm2=limit)).designs
    assert len(bound) < len(free)
    assert (bound["area_mm2"] <= limit).all()
    cheap = search_designs(
        loaded, objectives="device_cost_usd,tpot", constraints=Constraints(max_tdp_w=10_000)
    )
    assert cheap.success


@pytest.mark.parametrize(
    ("design", "fragment"),
    [
        ({"compute_tflops": 100}, "needs compute_tflops (TFLOP/s) and memory"),
        ({"compute_tflops": 100, "memory": {"technology": "hbx", "units": 2}}, "hbx"),
        ({"compute_tflops": 100, "memory": {"technology": "hbm3e"}}, "missing key 'units'"),
        (
            {"compute_tflops": 100, "memory": {"technology": "hbm3e", "units": 2}, "size": 1},
            "unknown key 'size'",
        ),
        (
            {"compute_tflops": 9000, "memory": {"technology": "hbm3e", "units": 2}},
            "no design is buildable",
        ),
    ],
)
def test_bad_design_sections_are_one_line_errors(design: dict, fragment: str) -> None:
    with pytest.raises(InputError) as error:
        space_from_dict(space(design))
    assert fragment in str(error.value)
    assert "\n" not in str(error.value)


def test_presets_without_a_price_leave_a_cost_objective_by_name() -> None:
    # h100-sxm lists a rental price but no purchase price: no device_cost_usd.
    loaded = space_from_dict(space(DESIGN, presets=["h100-sxm"]))
    result = search_designs(loaded, objectives="device_cost_usd", keep="feasible")
    assert result.success
    assert "h100-sxm" not in set(result.designs["platform"].astype(str))
    assert len(result.frontier) >= 1
    # usd_per_mtok is known for it (rental price), so it stays in.
    priced = search_designs(loaded, objectives="usd_per_mtok,tpot", keep="feasible")
    assert "h100-sxm" in set(priced.designs["platform"].astype(str))
