"""Candidate extra terms for the area and TDP models, scored leave-one-die-out.

Each variant adds one or two physically motivated features to the shipped model of
`benchmarks/cost_model.py` and refits every constant without the held-out die (the
same protocol as that script), printing the MAPE before (``shipped``) and after, the
worst rows and the all-rows fit, so a term is kept only if it helps out of sample and
its fitted constants stay physical. Area variants:

- ``fp64``: FP64 datapaths (transistors per FP64 FLOP/cycle; peaks in
  ``data/hardware/fp64_peaks.csv``, other rows at the 1/64 FP32 rate of the GeForce /
  RTX whitepapers);
- ``per_unit``: a per-SM / per-CU overhead (schedulers, load/store, texture), transistors
  per compute unit;
- ``graphics_fixed``: a fixed area per die for display and media engines (graphics dies);
- ``layout_2.5``: the layout factor allowed up to 2.5 (shipped bound 1.5).

TDP variants, from the model with the DRAM-traffic multiplier m held at 1: ``board_w``
(fixed board watts), ``memory_units_w`` (watts per memory device), ``dram_multiplier`` (m
fitted jointly with the compute energies), ``onchip_pj_per_bit`` (an additive on-die pJ
per DRAM bit); last, the shipped model (m fitted with the compute energies held).

    python benchmarks/cost_model_variants.py
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import lsq_linear, nnls

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cost_model as cm

from roofline import data_dir, process_node

FP64_PATH = data_dir() / "hardware" / "fp64_peaks.csv"
AREA_VARIANTS = ((), ("fp64",), ("per_unit",), ("graphics_fixed",), ("layout_2.5",))
TDP_VARIANTS = (
    (),
    ("board_w",),
    ("memory_units_w",),
    ("dram_multiplier",),
    ("onchip_pj_per_bit",),
)


def fp64_peaks() -> dict[str, float]:
    """FP64 dense peaks (TFLOP/s) of the devices that publish one."""
    with open(FP64_PATH, newline="", encoding="utf-8") as handle:
        return {row["device"]: float(row["fp64_tflops"]) for row in csv.DictReader(handle)}


def area_row(row: dict[str, str], variant: tuple[str, ...], fp64: dict[str, float]) -> np.ndarray:
    """The shipped area features, the variant's extras, then the published part."""
    features = list(cm.area_features(row))
    known = features.pop()
    density = process_node(row["node"]).logic_mtr_per_mm2 * 1e6
    scale = float(row["units_physical"]) / float(row["units_enabled"])
    if "fp64" in variant:
        peak = fp64.get(row["device"], float(row["vector_fp32_tflops"] or 0) / 64)
        features.append(peak * scale * 1e12 / (float(row["clock_ghz"]) * 1e9) / density)
    if "per_unit" in variant:
        features.append(float(row["units_physical"]) * 1e6 / density)
    if "graphics_fixed" in variant:
        features.append(float(row["graphics"] == "1") * int(row["dies"]))
    return np.array([*features, known])


def area_fit(rows, variant, fp64) -> np.ndarray:
    """Non-negative fit on relative error, layout factor bounded (module doc)."""
    rows = cm._one_per_die([r for r in rows if r["area_bound"] in ("exact", "approx")])
    xs = np.array([area_row(r, variant, fp64) for r in rows])
    ys = np.array([float(r["die_area_mm2"]) for r in rows])
    lower, upper = np.zeros(xs.shape[1]), np.full(xs.shape[1], np.inf)
    lower[-1], upper[-1] = (1.0, 2.5) if "layout_2.5" in variant else cm.LAYOUT_BOUNDS
    return lsq_linear(xs / ys[:, None], np.ones(len(ys)), bounds=(lower, upper)).x


def area_errors(rows, variant, fp64) -> dict[str, float]:
    """Leave-one-die-out percent error per scored die."""
    errors = {}
    for die in sorted({r["die"] for r in rows}):
        scored = [r for r in rows if r["die"] == die and r["area_bound"] != "upper"]
        if not scored:
            continue
        solution = area_fit([r for r in rows if r["die"] != die], variant, fp64)
        measured = float(scored[0]["die_area_mm2"])
        errors[die] = 100 * (area_row(scored[0], variant, fp64) @ solution - measured) / measured
    return errors


def tdp_row(row, values, variant) -> tuple[np.ndarray, float]:
    """(features, the published DRAM power W left outside the fit)."""
    features, memory_w = cm.power_features(row, cm.modelled_area(row, values))
    features = list(features)
    if "board_w" in variant:
        features.append(1.0)
    if "memory_units_w" in variant:
        features.append(float(row["memory_units_enabled"]))
    if "dram_multiplier" in variant:
        features.append(memory_w)
        memory_w = 0.0
    if "onchip_pj_per_bit" in variant:
        design = cm.row_design(row, physical=False)
        features.append(design.memory.bandwidth_bytes_per_s * 8 * 1e-12)
    return np.array(features), memory_w


def tdp_fit(rows, variant) -> tuple[dict[str, float], np.ndarray]:
    """Area constants as shipped-fit, then non-negative TDP constants on relative error."""
    values = cm.fit(rows)
    pairs = [tdp_row(r, values, variant) for r in rows]
    tdp = np.array([float(r["tdp_w"]) for r in rows])
    xs = np.array([features for features, _ in pairs]) / tdp[:, None]
    ys = (tdp - np.array([memory for _, memory in pairs])) / tdp
    return values, nnls(xs, ys)[0]


def tdp_errors(rows, variant) -> dict[str, float]:
    """Leave-one-die-out percent error per device."""
    errors = {}
    for die in sorted({r["die"] for r in rows}):
        values, constants = tdp_fit([r for r in rows if r["die"] != die], variant)
        for row in (r for r in rows if r["die"] == die):
            features, memory_w = tdp_row(row, values, variant)
            measured = float(row["tdp_w"])
            errors[row["device"]] = 100 * (features @ constants + memory_w - measured) / measured
    return errors


def _summary(label: str, errors: dict[str, float], fitted: np.ndarray) -> str:
    worst = sorted(errors.items(), key=lambda item: -abs(item[1]))[:4]
    mape = np.mean(np.abs(list(errors.values())))
    return (
        f"  {label:22s} MAPE {mape:5.1f}%  worst "
        + ", ".join(f"{name} {error:+.0f}%" for name, error in worst)
        + f"\n  {'':22s} all-rows fit {np.array2string(fitted, precision=4)}"
    )


def main() -> None:
    rows = cm.load_rows()
    fp64 = fp64_peaks()
    print(f"{len(rows)} devices, {len({r['die'] for r in rows})} dies; leave-one-die-out")
    print(
        "area (target 15%); fit order: T_tensor, T_vector, T_graphics, other mm^2, extras, layout"
    )
    for variant in AREA_VARIANTS:
        label = "+".join(variant) or "shipped"
        print(_summary(label, area_errors(rows, variant, fp64), area_fit(rows, variant, fp64)))
    print("TDP (target 20%); fit order: pJ/tensor FLOP, pJ/vector FLOP, static W/mm^2, extras")
    for variant in TDP_VARIANTS:
        label = "+".join(variant) or "m = 1 (before)"
        print(_summary(label, tdp_errors(rows, variant), tdp_fit(rows, variant)[1]))
    kept = {
        str(r["device"]): 100 * (float(r["tdp_model_w"]) - float(r["tdp_w"])) / float(r["tdp_w"])
        for r in cm.leave_one_die_out(rows)
    }
    print(
        _summary(
            "m fitted, compute held", kept, np.array([cm.fit(rows)["dram_traffic_multiplier"]])
        )
    )
    print("  (the last is the shipped model: benchmarks/cost_model.py)")


if __name__ == "__main__":
    main()
