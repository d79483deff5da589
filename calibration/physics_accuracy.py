"""How far physics alone (``ideal``) is from every published row: its accuracy block.

Physics fits nothing, so every stored row is out of sample for it, from every source.
`physics_accuracy` turns the rows of the measurement store (`calibration.store`) into the
``accuracy`` mapping of ``data/runtimes/ideal.yaml`` (the layout of `genz.RuntimeProfile`):
quantiles of ``measured / predicted`` with each *source* weighing the same (one large
benchmark suite does not set the interval of a lab it never measured), overall and per
device class, for batch latency and (``metrics``) TTFT and inter-token latency. The
80 % interval of an ``ideal`` prediction is then ``[t q(0.1), t q(0.9)]``
(`calibration.prediction_intervals`), and it holds for a lab's runs about as often as
the other labs' spread says (`benchmarks/transfer.py` scores it leave-one-source-out).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from genz.fitting import Array

from .rows import measured_metrics
from .store import StoredRow
from .transfer_terms import physics_times
from .transfer_validation import weighted_quantiles

LEVELS = (0.1, 0.5, 0.9)
METHOD = "every-source (nothing fitted; each source weighted equally)"
COMMAND = "python benchmarks/physics_accuracy.py --write data/runtimes/ideal.yaml"


def physics_accuracy(stored: Sequence[StoredRow]) -> dict[str, Any]:
    """The ``accuracy`` mapping of the ``ideal`` profile over ``stored``."""
    rows = [item.row for item in stored]
    physics = physics_times(rows)
    sources = np.array([item.info.source_id for item in stored])
    classes = np.array([str(kind) for kind in physics["device_class"]])
    hardware = np.array([row.hw for row in rows])
    measured = measured_metrics(rows)

    def block(metric: str) -> dict[str, Any]:
        ratio = measured[metric] / physics[metric]
        ok = np.isfinite(ratio)
        per_class = {}
        for kind in sorted({str(k) for k in classes[ok]}):
            own = ok & (classes == kind)
            quantiles = _quantiles(ratio[own], sources[own])
            per_class[kind] = {
                "hardware": sorted({str(h) for h in hardware[own]}),
                "rows": int(own.sum()),
                "ratio_quantiles": quantiles,
                "in_sample_ratio_quantiles": quantiles,
            }
        return {
            "rows": int(ok.sum()),
            "ratio_quantiles": _quantiles(ratio[ok], sources[ok]),
            "device_classes": per_class,
        }

    headline = block("batch_latency_s")
    return {
        "method": METHOD,
        "hardware": sorted({str(h) for h in hardware}),
        "rows": headline["rows"],
        "ratio_quantiles": headline["ratio_quantiles"],
        "device_classes": headline["device_classes"],
        "metrics": {metric: block(metric) for metric in ("ttft_s", "itl_s")},
        "calibrated_from": COMMAND,
    }


def _quantiles(ratio: Array, sources: Array) -> dict[str, float]:
    values, counts = np.unique(sources, return_counts=True)
    count = dict(zip(values.tolist(), counts.tolist(), strict=True))
    weights = 1.0 / np.array([count[s] for s in sources], float)
    picked = weighted_quantiles(ratio, weights, LEVELS)
    return {str(level): float(f"{value:.4g}") for level, value in zip(LEVELS, picked, strict=True)}
