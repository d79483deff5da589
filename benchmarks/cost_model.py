"""Die area and TDP of `roofline.design` against shipped chips, out of sample.

Rows: ``data/hardware/cost_validation.csv`` (one per device; several devices share a
die). Each row becomes two `roofline.AcceleratorDesign`s:

- the *physical die* (area): the SKU's tensor and vector peaks scaled by
  ``units_physical / units_enabled`` (a die carries every SM / CU, enabled or not), every
  memory PHY on the die, the full-die SRAM; predicted area = `roofline.design_area`;
- the *SKU* (TDP): the shipped peaks and bandwidth; predicted TDP = tensor energy x peak
  + DRAM pJ/bit x bandwidth + static W/mm^2 x the modelled die area.

Eight constants are fitted by non-negative least squares on relative error
(``model.yaml``: transistors per tensor, per vector and per graphics-pipeline vector
FLOP/cycle, fixed mm^2 per die; pJ per tensor and per vector FLOP at N7, static W/mm^2;
then, the compute energies held, the DRAM-traffic multiplier on the published DRAM
power); everything else is a published constant. ``--no-dram-multiplier`` scores the
model without the multiplier (the figures before it was added).
The errors printed are **leave-one-die-out**: every die's rows are predicted by constants
fitted on the other dies only. Area rows whose figure is an upper bound (``area_bound =
upper``: the TPUs' "< 400 mm^2") are never fitted and are reported as within / above the
bound. ``--fit`` prints the all-rows fit (what ``model.yaml`` holds); ``--write`` puts
it into ``model.yaml``. Launch prices are printed beside the modelled manufacturing cost
as a sanity check (a price includes margin, software, NRE; cost does not).

    python benchmarks/cost_model.py [--fit] [--write]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import re
from pathlib import Path

import numpy as np
from scipy.optimize import lsq_linear, nnls

from roofline import (
    AcceleratorDesign,
    MemorySpec,
    data_dir,
    design_area,
    design_constants,
    design_power,
    memory_technology,
)

CSV_PATH = data_dir() / "hardware" / "cost_validation.csv"
MODEL_PATH = data_dir() / "hardware" / "design" / "model.yaml"
AREA_KEYS = (
    "tensor_transistors_per_flop_per_cycle",
    "vector_transistors_per_flop_per_cycle",
    "graphics_transistors_per_flop_per_cycle",
    "other_mm2_per_die",
)
POWER_KEYS = ("pj_per_tensor_flop_n7", "pj_per_vector_flop_n7", "static_w_per_mm2")
#: The layout factor is held in [1, 1.5]: free, it trades against the compute
#: constants (collinear on 14 dies) and reaches 4.6 with near-zero compute area, which
#: no die shot supports (compute is about half of GA100's area, LLMCompass Fig. 6a).
LAYOUT_BOUNDS = (1.0, 1.5)
MIB = 1.048576  # MB (decimal) per MiB


def load_rows(path: Path = CSV_PATH) -> list[dict[str, str]]:
    """The validation rows as read (strings)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _links(text: str) -> dict[str, int]:
    pairs = (item.split(":") for item in text.split(";") if item)
    return {name: int(count) for name, count in pairs}


def row_design(row: dict[str, str], physical: bool) -> AcceleratorDesign:
    """The row's physical die (``physical=True``, for area) or shipped SKU (for TDP)."""
    scale = float(row["units_physical"]) / float(row["units_enabled"]) if physical else 1.0
    units = int(row["memory_units_physical" if physical else "memory_units_enabled"])
    tech = memory_technology(row["memory"])
    bandwidth = float(row["bandwidth_gb_per_s"])
    ceiling = units * tech.max_gb_per_s_per_unit
    vector = float(row["vector_fp32_tflops"]) * scale if row["vector_fp32_tflops"] else None
    return AcceleratorDesign(
        compute_tflops={"bf16": float(row["tensor16_tflops"]) * scale},
        vector_tflops_fp32=vector,
        memory=MemorySpec(
            row["memory"],
            units,
            capacity_gb_per_unit=float(row["capacity_gb"]) / int(row["memory_units_enabled"]),
            bandwidth_gb_per_s=None if physical else min(bandwidth, ceiling),
        ),
        sram_mb=float(row["sram_mib_physical"]) * MIB,
        node=row["node"],
        clock_ghz=float(row["clock_ghz"]),
        links=_links(row["links"]),
        dies=int(row["dies"]),
        graphics=row["graphics"] == "1",
        name=row["device"],
    )


def _with(constants, **values):
    return dataclasses.replace(constants, **values)


def area_features(row: dict[str, str]) -> np.ndarray:
    """Features of the fitted area constants: area = features . (k T_t, k T_v, k T_g,
    other, k) where k is the layout factor (the last feature is the published part:
    SRAM, PHYs, controllers)."""
    design = row_design(row, physical=True)
    base = _with(design_constants(), layout_factor=1.0, **dict.fromkeys(AREA_KEYS, 0.0))
    known = design_area(design, base).total_mm2
    features = [
        design_area(design, _with(base, **{key: 1.0})).total_mm2 - known for key in AREA_KEYS
    ]
    return np.array([*features, known])


def power_features(row: dict[str, str], area_mm2: float) -> tuple[np.ndarray, float]:
    """(features of the fitted compute and static power constants, the published DRAM
    power W: technology pJ/bit x bandwidth, multiplier 1)."""
    design = row_design(row, physical=False)
    base = _with(design_constants(), dram_traffic_multiplier=1.0, **dict.fromkeys(POWER_KEYS, 0.0))
    memory_w = design_power(design, area_mm2, base)[2]
    features = [
        sum(design_power(design, area_mm2, _with(base, **{key: 1.0}))) - memory_w
        for key in POWER_KEYS
    ]
    return np.array(features), memory_w


def fit(rows: list[dict[str, str]], dram_multiplier: bool = True) -> dict[str, float]:
    """The five constants fitted on ``rows`` (area on one row per die with an exact or
    approximate area; TDP on every row, at the modelled area of these area constants)."""
    area_rows = _one_per_die([r for r in rows if r["area_bound"] in ("exact", "approx")])
    # Relative error on the total area: rows weighted by 1 / area.
    xs = np.array([area_features(row) for row in area_rows])
    area_y = np.array([float(r["die_area_mm2"]) for r in area_rows])
    weights = 1.0 / area_y
    lower = np.zeros(xs.shape[1])
    upper = np.full(xs.shape[1], np.inf)
    lower[-1], upper[-1] = LAYOUT_BOUNDS
    solution = lsq_linear(xs * weights[:, None], area_y * weights, bounds=(lower, upper)).x
    k = solution[-1]
    values = {
        key: (value if key == "other_mm2_per_die" else value / k)
        for key, value in zip(AREA_KEYS, solution[:-1], strict=True)
    }
    values["layout_factor"] = k
    px, py = [], []
    for row in rows:
        area = modelled_area(row, values)
        features, memory_w = power_features(row, area)
        px.append(features)
        py.append(float(row["tdp_w"]) - memory_w)
    tdp = np.array([float(r["tdp_w"]) for r in rows])
    weights = 1.0 / tdp
    power_c, _ = nnls(np.array(px) * weights[:, None], np.array(py) * weights)
    values.update(zip(POWER_KEYS, power_c, strict=True))
    # Second stage, the compute energies held: the DRAM-traffic multiplier m >= 0 on the
    # published DRAM power (on-die movement per DRAM bit), by least squares on relative
    # error of the TDP left after compute and static power.
    memory_w = np.array(
        [mem for _, mem in (power_features(r, modelled_area(r, values)) for r in rows)]
    )
    rest = tdp - np.array(px) @ power_c
    values["dram_traffic_multiplier"] = (
        max(0.0, float(np.sum(memory_w * rest / tdp**2) / np.sum((memory_w / tdp) ** 2)))
        if dram_multiplier
        else 1.0
    )
    return values


def _one_per_die(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    seen: dict[str, dict[str, str]] = {}
    for row in rows:
        seen.setdefault(row["die"], row)
    return list(seen.values())


def modelled_area(row: dict[str, str], values: dict[str, float]) -> float:
    """Modelled die area of the row's physical die under ``values``, mm^2."""
    constants = _with(design_constants(), **{k: values[k] for k in (*AREA_KEYS, "layout_factor")})
    return design_area(row_design(row, physical=True), constants).total_mm2


def modelled_tdp(row: dict[str, str], values: dict[str, float]) -> float:
    """Modelled TDP of the row's SKU under ``values``, W."""
    constants = _with(design_constants(), **values)
    area = design_area(row_design(row, physical=True), constants).total_mm2
    return sum(design_power(row_design(row, physical=False), area, constants))


def leave_one_die_out(
    rows: list[dict[str, str]], dram_multiplier: bool = True
) -> list[dict[str, object]]:
    """Per row: measured and modelled area and TDP, constants fitted without its die."""
    results = []
    fits = {
        die: fit([r for r in rows if r["die"] != die], dram_multiplier)
        for die in {r["die"] for r in rows}
    }
    for row in rows:
        values = fits[row["die"]]
        results.append(
            {
                "device": row["device"],
                "die": row["die"],
                "bound": row["area_bound"],
                "area_mm2": float(row["die_area_mm2"]),
                "area_model_mm2": modelled_area(row, values),
                "tdp_w": float(row["tdp_w"]),
                "tdp_model_w": modelled_tdp(row, values),
                "price_usd": float(row["launch_price_usd"]) if row["launch_price_usd"] else None,
            }
        )
    return results


def _error(model: float, measured: float) -> float:
    return 100.0 * (model - measured) / measured


def report(rows: list[dict[str, str]], dram_multiplier: bool = True) -> None:
    """Print per-row errors, MAPE and the worst rows, area and TDP."""
    results = leave_one_die_out(rows, dram_multiplier)
    print(f"{len(rows)} devices, {len({r['die'] for r in rows})} dies; errors leave-one-die-out")
    print(
        f"{'device':16s} {'die':10s} {'area':>7s} {'model':>7s} {'err%':>7s}  "
        f"{'TDP W':>6s} {'model':>6s} {'err%':>7s}"
    )
    for r in results:
        print(
            f"{r['device']:16s} {r['die']:10s} {r['area_mm2']:7.0f} {r['area_model_mm2']:7.0f} "
            f"{_error(r['area_model_mm2'], r['area_mm2']):+7.1f}  {r['tdp_w']:6.0f} "
            f"{r['tdp_model_w']:6.0f} {_error(r['tdp_model_w'], r['tdp_w']):+7.1f}"
            + ("  (area an upper bound)" if r["bound"] == "upper" else "")
        )
    scored = [r for r in results if r["bound"] != "upper"]
    per_die: dict[str, dict[str, object]] = {}
    for r in scored:
        per_die.setdefault(str(r["die"]), r)
    area_errors = np.array([_error(r["area_model_mm2"], r["area_mm2"]) for r in per_die.values()])
    tdp_errors = np.array([_error(r["tdp_model_w"], r["tdp_w"]) for r in results])
    print(
        f"\narea: MAPE {np.mean(np.abs(area_errors)):.1f}% over {len(area_errors)} dies "
        f"(median {np.median(np.abs(area_errors)):.1f}%, bias {np.mean(area_errors):+.1f}%); "
        f"target 15%: {'met' if np.mean(np.abs(area_errors)) <= 15 else 'MISSED'}"
    )
    upper = [r for r in results if r["bound"] == "upper"]
    for r in upper:
        side = "within" if r["area_model_mm2"] <= r["area_mm2"] else "ABOVE"
        print(
            f"  {r['device']}: modelled {r['area_model_mm2']:.0f} mm^2, {side} the published "
            f"bound < {r['area_mm2']:.0f} mm^2 (not scored)"
        )
    print(
        f"TDP: MAPE {np.mean(np.abs(tdp_errors)):.1f}% over {len(tdp_errors)} devices "
        f"(median {np.median(np.abs(tdp_errors)):.1f}%, bias {np.mean(tdp_errors):+.1f}%); "
        f"target 20%: {'met' if np.mean(np.abs(tdp_errors)) <= 20 else 'MISSED'}"
    )
    print(
        "worst area rows: "
        + ", ".join(
            f"{r['die']} {_error(r['area_model_mm2'], r['area_mm2']):+.0f}%"
            for r in sorted(
                per_die.values(), key=lambda r: -abs(_error(r["area_model_mm2"], r["area_mm2"]))
            )[:4]
        )
    )
    print(
        "worst TDP rows: "
        + ", ".join(
            f"{r['device']} {_error(r['tdp_model_w'], r['tdp_w']):+.0f}%"
            for r in sorted(results, key=lambda r: -abs(_error(r["tdp_model_w"], r["tdp_w"])))[:4]
        )
    )
    priced = [(r, row) for r, row in zip(results, rows, strict=True) if r["price_usd"]]
    if priced:
        from roofline import design_cost  # the shipped constants (model.yaml)

        print(
            "\nlaunch price (sanity check, not a fit target) beside modelled cost, shipped "
            "constants:"
        )
        for r, row in priced:
            cost = design_cost(row_design(row, physical=False)).device_cost_usd
            print(
                f"  {r['device']:16s} price US${r['price_usd']:7.0f}  modelled cost "
                f"US${cost:7.0f}  price/cost {r['price_usd'] / cost:4.1f}"
            )


def write_constants(values: dict[str, float], path: Path = MODEL_PATH) -> None:
    """Replace the fitted constants' ``value:`` lines in ``model.yaml``."""
    text = path.read_text(encoding="utf-8")
    for key, value in values.items():
        pattern = re.compile(rf"(\n  {key}:\n    value: )[^\n]+")
        text, count = pattern.subn(lambda m, v=value: f"{m.group(1)}{v:.6g}", text)
        if count != 1:
            raise SystemExit(f"{path}: no value line for {key}")
    path.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="print the all-rows fit")
    parser.add_argument("--write", action="store_true", help="write the fit into model.yaml")
    parser.add_argument(
        "--no-dram-multiplier",
        action="store_true",
        help="hold the DRAM-traffic multiplier at 1 (the model before it was fitted)",
    )
    args = parser.parse_args()
    rows = load_rows()
    if args.fit or args.write:
        values = fit(rows, not args.no_dram_multiplier)
        for key, value in values.items():
            print(f"{key}: {value:.6g}")
        if args.write:
            write_constants(values)
            print(f"written to {MODEL_PATH}")
        return
    report(rows, not args.no_dram_multiplier)


if __name__ == "__main__":
    main()
