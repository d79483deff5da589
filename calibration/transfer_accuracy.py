"""The accuracy block of a transfer profile, measured out of source.

`held_out_accuracy` turns leave-one-source-out predictions of one profile kind (every
row predicted through genz by the profile a fit *without its source* wrote,
`calibration.transfer_held_out`, as `benchmarks/transfer_profiles.py --save` stores
them) into the ``accuracy`` mapping of `genz.RuntimeProfile`:

- ``ratio_quantiles`` (batch latency), per device class, and per metric (``metrics``:
  TTFT, inter-token latency): quantiles of ``measured / predicted`` over the held-out
  values with each *source* weighing the same: the split-conformal interval grouped by
  source (`calibration.transfer_validation.conformal_bounds`' rule, over every source),
  so ``predict``'s 80 % interval ``[t q(0.1), t q(0.9)]`` is the spread a new lab's
  runs showed;
- ``held_out_mape``: per metric, the source-averaged MAPE of the profile and of physics
  alone (``ideal``) on the same values, and the sources and values they average.

Nothing here fits: the predictions come in, the block goes out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from genz.fitting import Array

from .store import StoredRow
from .transfer import METRICS
from .transfer_domain import preset_terms
from .transfer_validation import group_mape, weighted_quantiles

LEVELS = (0.1, 0.5, 0.9)
#: What the quantiles are (printed as the basis of ``predict``'s interval).
METHOD = "leave-one-source-out, split conformal grouped by source"


def held_out_accuracy(
    records: Sequence[Mapping[str, Any]],
    kind: str,
    stored: Sequence[StoredRow],
    command: str,
) -> dict[str, Any]:
    """The ``accuracy`` mapping of profile kind ``kind`` (a column of ``records``:
    ``generic`` or ``stack``) from held-out records (``row``: index into ``stored``,
    ``source``, ``metric``, ``measured``, ``ideal`` and ``kind``, seconds); ``command``
    is what re-derives it."""
    columns = {key: np.array([r[key] for r in records]) for key in ("source", "metric")}
    rows = np.array([int(r["row"]) for r in records])
    measured = np.array([float(r["measured"]) for r in records])
    predicted = np.array([float(r[kind]) for r in records])
    ideal = np.array([float(r["ideal"]) for r in records])
    hardware = np.array([stored[i].row.hw for i in rows])
    classes = np.array([preset_terms(hw)[2] for hw in hardware])
    ratio = measured / predicted
    ok = np.isfinite(ratio) & np.isfinite(ideal)

    def block(metric: str) -> dict[str, Any]:
        own = ok & (columns["metric"] == metric)
        per_class = {}
        for device_class in sorted(set(classes[own].tolist())):
            chosen = own & (classes == device_class)
            quantiles = _quantiles(ratio[chosen], columns["source"][chosen])
            per_class[device_class] = {
                "hardware": sorted(set(hardware[chosen].tolist())),
                "rows": int(chosen.sum()),
                "ratio_quantiles": quantiles,
                "in_sample_ratio_quantiles": quantiles,
            }
        return {
            "rows": int(own.sum()),
            "ratio_quantiles": _quantiles(ratio[own], columns["source"][own]),
            "device_classes": per_class,
        }

    def mape(metric: str) -> dict[str, Any]:
        own = ok & (columns["metric"] == metric)
        sources = columns["source"]
        return {
            "profile": _percent(group_mape(np.where(own, predicted, np.nan), measured, sources)),
            "ideal": _percent(group_mape(np.where(own, ideal, np.nan), measured, sources)),
            "sources": len(set(sources[own].tolist())),
            "rows": int(own.sum()),
        }

    present = {metric: bool(np.any(ok & (columns["metric"] == metric))) for metric in METRICS}
    if not present["batch_latency_s"]:
        raise ValueError("held-out records without batch latency values")
    headline = block("batch_latency_s")
    return {
        "method": METHOD,
        "hardware": sorted(set(hardware[ok].tolist())),
        "rows": headline["rows"],
        "ratio_quantiles": headline["ratio_quantiles"],
        "device_classes": headline["device_classes"],
        "metrics": {metric: block(metric) for metric in ("ttft_s", "itl_s") if present[metric]},
        "held_out_mape": {metric: mape(metric) for metric in METRICS if present[metric]},
        "calibrated_from": command,
    }


def _quantiles(ratio: Array, sources: Array) -> dict[str, float]:
    """Quantiles of ``ratio`` at `LEVELS`, each source weighing the same (4 digits)."""
    _, inverse, counts = np.unique(sources, return_inverse=True, return_counts=True)
    weights = 1.0 / counts[inverse].astype(float)
    picked = weighted_quantiles(ratio, weights, LEVELS)
    return {str(level): float(f"{value:.4g}") for level, value in zip(LEVELS, picked, strict=True)}


def _percent(fraction: float) -> float:
    """A fraction as a percentage, 3 significant digits."""
    return float(f"{100 * fraction:.3g}")
