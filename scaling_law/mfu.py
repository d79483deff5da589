"""Model FLOP utilisation that follows the shape: ``MFU = c * width^a * depth^b``.

One MFU for every architecture misses how utilisation grows with width (wider matmuls
fill the accelerator better) and shrinks with depth (more layers, more per-layer
overheads and pipeline bubbles at a fixed batch). `fit_mfu` fits
``log MFU = log c + a log width + b log depth`` by least squares on measured runs
(the implied MFU of each: `scaling_law.implied_mfu`); `mfu_leave_one_out` refits without
each run and predicts it, so its error is measured on runs that did not tune it. The
shipped fit (``data/scaling/gemstones_mfu.json``, `load_mfu_model`) comes from the
Gemstones step times (18 architectures, AMD MI250X nodes of OLCF Frontier, bf16);
`benchmarks/shape_law.py` regenerates it and prints its held-out error.

Predictions are capped at 1 and are only measured inside the fitted widths and depths
(`MfuModel.domain`); on other hardware the absolute level is an assumption, the width and
depth trend the part the data supports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError, load_user_document

from .data import scaling_dir

Array = NDArray[np.float64]
MFU_FORMAT = "llm-codesign/mfu-model"
#: The shipped fit, in ``data/scaling``.
DEFAULT_MFU_FILE = "gemstones_mfu.json"
MAX_MFU_BYTES = 1_000_000
_KEYS = {"format", "coefficient", "width_exponent", "depth_exponent", "domain", "metadata"}


@dataclass(frozen=True)
class MfuModel:
    """``MFU(width, depth) = min(1, coefficient * width^width_exponent * depth^depth_exponent)``.

    ``domain``: ``{'width': (low, high), 'depth': (low, high)}`` of the fitted runs;
    ``metadata``: provenance and held-out errors (JSON-ready).
    """

    coefficient: float
    width_exponent: float
    depth_exponent: float
    domain: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("coefficient", "width_exponent", "depth_exponent"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise InputError(f"mfu model {name} must be a finite number, got {value!r}")
        if self.coefficient <= 0:
            raise InputError(f"mfu model coefficient must be > 0, got {self.coefficient:g}")

    def mfu(self, width: ArrayLike, depth: ArrayLike) -> Array:
        """Predicted MFU in (0, 1] of (arrays of) widths and depths."""
        w, d = _positive("width", width), _positive("depth", depth)
        value = self.coefficient * w**self.width_exponent * d**self.depth_exponent
        return np.minimum(value, 1.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (`load_mfu_model` reads it back)."""
        return {
            "format": MFU_FORMAT,
            "coefficient": self.coefficient,
            "width_exponent": self.width_exponent,
            "depth_exponent": self.depth_exponent,
            "domain": {name: list(bounds) for name, bounds in self.domain.items()},
            "metadata": dict(self.metadata),
        }


def fit_mfu(
    width: ArrayLike,
    depth: ArrayLike,
    mfu: ArrayLike,
    metadata: Mapping[str, Any] | None = None,
) -> MfuModel:
    """Least-squares fit of ``log MFU = log c + a log width + b log depth`` (at least 4 runs)."""
    w, d, m = _positive("width", width), _positive("depth", depth), _positive("mfu", mfu)
    if not (w.shape == d.shape == m.shape) or w.ndim != 1 or len(w) < 4:
        raise InputError("fit_mfu needs 1-D width, depth and mfu arrays of one length >= 4")
    design = np.column_stack([np.ones(len(w)), np.log(w), np.log(d)])
    (log_c, a, b), *_ = np.linalg.lstsq(design, np.log(m), rcond=None)
    return MfuModel(
        float(math.exp(log_c)),
        float(a),
        float(b),
        {"width": (float(w.min()), float(w.max())), "depth": (float(d.min()), float(d.max()))},
        dict(metadata or {}),
    )


def mfu_leave_one_out(width: ArrayLike, depth: ArrayLike, mfu: ArrayLike) -> Array:
    """Signed relative error of the *time* estimate of each run when the model is refitted
    without it: ``measured MFU / predicted MFU - 1`` (time ~ 1 / MFU)."""
    w, d, m = _positive("width", width), _positive("depth", depth), _positive("mfu", mfu)
    errors = np.empty(len(w))
    for index in range(len(w)):
        keep = np.arange(len(w)) != index
        model = fit_mfu(w[keep], d[keep], m[keep])
        errors[index] = m[index] / float(model.mfu(w[index], d[index])) - 1.0
    return errors


def load_mfu_model(path: str | Path | None = None) -> MfuModel:
    """Read an MFU model file (default: the shipped Gemstones fit)."""
    source = Path(path) if path is not None else scaling_dir() / DEFAULT_MFU_FILE
    document = load_user_document(source, kind="mfu model", max_bytes=MAX_MFU_BYTES, fmt="json")
    if not isinstance(document, dict) or document.get("format") != MFU_FORMAT:
        raise InputError(f"{source}: not an MFU model file (format {MFU_FORMAT!r})")
    unknown = sorted(set(document) - _KEYS)
    if unknown:
        raise InputError(
            f"{source}: unknown key {unknown[0]!r}; accepted: {', '.join(sorted(_KEYS))}"
        )
    try:
        domain = {
            str(k): (float(v[0]), float(v[1])) for k, v in dict(document.get("domain", {})).items()
        }
        return MfuModel(
            float(document["coefficient"]),
            float(document["width_exponent"]),
            float(document["depth_exponent"]),
            domain,
            dict(document.get("metadata", {})),
        )
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise InputError(f"{source}: malformed MFU model ({error})") from None


def save_mfu_model(model: MfuModel, path: str | Path) -> Path:
    """Write ``model`` as JSON to ``path``; returns the path."""
    target = Path(path)
    target.write_text(json.dumps(model.to_dict(), indent=2, allow_nan=False) + "\n", "utf-8")
    return target


def _positive(name: str, value: ArrayLike) -> Array:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a finite number > 0, got {value!r}") from None
    if np.any(~(np.isfinite(array) & (array > 0))):
        raise InputError(f"{name} must be finite numbers > 0")
    return array
