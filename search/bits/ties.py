"""Layers the allocation problem cannot tell apart, and what the ILP gave each class.

Two layers are *interchangeable* when every weight group of one has the same sensitivity
row and the same cost rows (every budgeted and reported quantity, per format) as the same
group of the other: swapping their formats changes neither the objective nor any total.
With the weight-free proxy every layer of a uniform model is interchangeable with every
other (the first and last eighth form their own class under ``--edge-layer-weight``), so
*which* layers the solver gave int4 is a tie-break and only the per-class counts mean
anything; per-layer sensitivities from the weights (``--weights``) or a per-layer table
make every layer its own class and the per-layer choice meaningful.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .quantizer import QuantizationResult

#: Significant digits at which two rows count as equal (float noise of per-layer costs).
SIGNIFICANT_DIGITS = 12


@dataclass(frozen=True)
class LayerClass:
    """Interchangeable layers and how many of them got each format, per weight group."""

    layers: tuple[int, ...]
    counts: Mapping[str, Mapping[str, int]]

    @property
    def label(self) -> str:
        """``'0-3,28-31'``: the layers as ranges."""
        return layer_ranges(self.layers)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: layers and ``{group: {format: count}}``."""
        return {"layers": list(self.layers), "counts": {g: dict(c) for g, c in self.counts.items()}}


def layer_classes(result: QuantizationResult) -> tuple[LayerClass, ...]:
    """The per-layer units of ``result`` grouped into interchangeable classes (ordered by
    their first layer), with the formats the allocation gave each group of a class."""
    signatures: dict[int, list[tuple[str, bytes]]] = {}
    chosen: dict[int, dict[str, str]] = {}
    matrices = [result.sensitivity, *(result.costs[name] for name in sorted(result.costs))]
    for index, (unit, choice) in enumerate(
        zip(result.units, result.result.allocation, strict=True)
    ):
        if unit.layer is None:
            continue
        rows = np.concatenate([np.asarray(m[index], float) for m in matrices])
        rounded = np.array([float(f"{value:.{SIGNIFICANT_DIGITS}g}") for value in rows])
        signatures.setdefault(unit.layer, []).append((unit.group, rounded.tobytes()))
        chosen.setdefault(unit.layer, {})[unit.group] = result.formats[choice].name
    members: dict[tuple[tuple[str, bytes], ...], list[int]] = {}
    for layer in sorted(signatures):
        members.setdefault(tuple(sorted(signatures[layer])), []).append(layer)
    classes = []
    for layers in members.values():
        groups = list(dict.fromkeys(g for layer in layers for g in chosen[layer]))
        counts = {g: dict(Counter(chosen[layer][g] for layer in layers)) for g in groups}
        classes.append(LayerClass(tuple(layers), counts))
    return tuple(sorted(classes, key=lambda c: c.layers[0]))


def layer_ranges(layers: Sequence[int]) -> str:
    """Sorted layer numbers as comma-separated runs, ``[0, 1, 2, 5] -> '0-2,5'``."""
    runs: list[str] = []
    ordered = sorted(layers)
    start = previous = ordered[0] if ordered else 0
    for layer in [*ordered[1:], None]:
        if layer is not None and layer == previous + 1:
            previous = layer
            continue
        runs.append(str(start) if start == previous else f"{start}-{previous}")
        if layer is not None:
            start = previous = layer
    return ",".join(runs) if ordered else ""
