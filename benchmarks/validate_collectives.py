"""Small-message all-reduce: roofline's alpha-beta model against published timings.

``data/validation/nccl_allreduce.csv`` holds published all-reduce times (nccl-tests
``all_reduce_perf`` out-of-place times, and the vLLM / SGLang custom all-reduce kernels
that serving stacks use for small messages on NVLink), each row with its source and
the date read. Every row with a preset is predicted three ways:

- ``shipped``: `roofline.all_reduce_time` with the preset as shipped,
  ``2(n-1) * link_latency + 2(n-1)/n * S / bw`` (no per-collective base);
- ``nccl model``: NCCL's own tuner constants for a ring LL all-reduce inside one node
  (NVIDIA/nccl ``src/graph/tuning.cc`` at commit 01afd20: ``baseLat`` 3.6 us per call,
  ``hwLat`` 0.47 us per hop over NVLink, 1.0 us over PCIe), nothing fitted;
- ``fitted``: ``a + k * 2(n-1) * link_latency + wire``, the per-collective base ``a``
  (`Interconnect.collective_latency_s`) and a per-hop scale ``k`` fitted by bounded
  least squares on relative error, leave one platform out (fitted on the other presets'
  rows, each preset weighted equally); the in-sample fit on all rows is printed beside.

Prints per row measured vs predicted (us, signed % error) and per model the MAPE,
median, p90 and bias, out of sample. Nothing here changes a preset.

Run: ``python benchmarks/validate_collectives.py``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys

import numpy as np
import pandas as pd
from error_stats import error_stats
from scipy.optimize import lsq_linear

from roofline import Platform, all_reduce_time, data_dir, load_platform

CSV = data_dir() / "validation" / "nccl_allreduce.csv"
#: NCCL tuner constants, ring all-reduce, LL protocol, one node (us): NVIDIA/nccl
#: src/graph/tuning.cc @ 01afd20 (``baseLat`` Ring/LL, ``hwLat`` NVLINK / PCI Ring/LL).
NCCL_BASE_US = 3.6
NCCL_HOP_US = {"nvswitch": 0.47, "nvlink": 0.47, "pcie": 1.0}


def load_rows() -> pd.DataFrame:
    """The published rows that name a preset."""
    with open(CSV, newline="", encoding="utf-8") as handle:
        frame = pd.DataFrame(list(csv.DictReader(handle)))
    frame = frame[frame.preset != ""].copy()
    for column in ("gpus", "message_bytes"):
        frame[column] = frame[column].astype(int)
    frame["time_us"] = frame.time_us.astype(float)
    return frame.reset_index(drop=True)


def without_latency(platform: Platform) -> Platform:
    """``platform`` with zero link latency: the wire (bandwidth) term alone."""
    assert platform.interconnect is not None
    link = dataclasses.replace(platform.interconnect, link_latency_s=0.0)
    return dataclasses.replace(platform, interconnect=link)


def terms(frame: pd.DataFrame) -> pd.DataFrame:
    """Per row: shipped prediction, wire time, ring hops x link latency (us)."""
    out = frame.copy()
    shipped, wire, hop = [], [], []
    for row in frame.itertuples():
        platform = load_platform(row.preset)
        assert platform.interconnect is not None, f"{row.preset} has no interconnect"
        shipped.append(float(all_reduce_time(platform, row.message_bytes, row.gpus)) * 1e6)
        wire.append(
            float(all_reduce_time(without_latency(platform), row.message_bytes, row.gpus)) * 1e6
        )
        hop.append(2 * (row.gpus - 1) * platform.interconnect.link_latency_s * 1e6)
    out["shipped_us"], out["wire_us"], out["hops_latency_us"] = shipped, wire, hop
    nccl_hop = frame.fabric.map(NCCL_HOP_US).to_numpy(float)
    out["nccl_model_us"] = NCCL_BASE_US + 2 * (frame.gpus - 1) * nccl_hop + out.wire_us
    return out


def fit(part: pd.DataFrame) -> tuple[float, float]:
    """(base a us, hop scale k) minimising the relative error, each preset weighted
    equally; a, k >= 0."""
    weight = 1.0 / part.groupby("preset").preset.transform("size").to_numpy(float)
    scale = np.sqrt(weight) / part.time_us.to_numpy(float)
    design = np.column_stack([np.ones(len(part)), part.hops_latency_us]) * scale[:, None]
    target = (part.time_us - part.wire_us).to_numpy(float) * scale
    result = lsq_linear(design, target, bounds=([0.0, 0.0], [np.inf, np.inf]))
    return float(result.x[0]), float(result.x[1])


def fitted_predictions(frame: pd.DataFrame) -> tuple[pd.Series, pd.Series, dict[str, tuple]]:
    """Leave-one-platform-out and in-sample fitted predictions (us), and the fits."""
    held_out = pd.Series(np.nan, index=frame.index)
    fits: dict[str, tuple[float, float]] = {}
    for preset in frame.preset.unique():
        mine = frame.preset == preset
        base, scale = fit(frame[~mine])
        fits[preset] = (base, scale)
        held_out[mine] = base + scale * frame.hops_latency_us[mine] + frame.wire_us[mine]
    base, scale = fit(frame)
    fits["all (in-sample)"] = (base, scale)
    in_sample = base + scale * frame.hops_latency_us + frame.wire_us
    return held_out, in_sample, fits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    frame = terms(load_rows())
    frame["fitted_us"], frame["in_sample_us"], fits = fitted_predictions(frame)
    models = {
        "shipped": "shipped_us",
        "nccl model": "nccl_model_us",
        "fitted (leave one platform out)": "fitted_us",
        "fitted (in-sample)": "in_sample_us",
    }
    for column in models.values():
        frame[column.replace("_us", "_pct")] = 100 * (frame[column] / frame.time_us - 1)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 200)
    shown = ["preset", "gpus", "library", "message_bytes", "time_us", *models.values()]
    print(f"{len(frame)} published all-reduce times with a preset ({CSV.name}), us:")
    print(frame[shown].to_string(index=False, float_format=lambda v: f"{v:7.2f}"))
    print("\nFits a (us per collective) and k (x link latency per hop):")
    for name, (base, scale) in fits.items():
        where = "all rows" if name.startswith("all") else f"rows of the other presets, for {name}"
        print(f"  {where}: a = {base:.2f} us, k = {scale:.3f}")
    print("\nSigned error 100 (predicted - measured) / measured, %:")
    lines = []
    groups = [("all rows", frame)]
    groups += [(f"{p} / {lib}", part) for (p, lib), part in frame.groupby(["preset", "library"])]
    for label, part in groups:
        for model, column in models.items():
            error = part[column.replace("_us", "_pct")]
            lines.append({"rows of": label, "n": len(part), "model": model, **error_stats(error)})
    print(pd.DataFrame(lines).to_string(index=False, float_format=lambda v: f"{v:7.1f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
