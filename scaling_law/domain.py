"""The domain of a law: the ranges of the data it was fitted on, and extrapolation flags.

A fitted law is a summary of its training runs; outside their ranges it is an
extrapolation, however good its held-out error. `domain_of` records, for the rows
a law was fitted on, the ``[min, max]`` of

``width`` and ``depth``
    model width (``hidden``) and number of blocks, when the data gives an architecture;
``params``
    N under the law's counting convention (embeddings in or out, as fitted);
``tokens``
    training tokens D;
``tokens_per_parameter``
    D / N;
``gqa_ratio``, ``ffn_ratio``, ``vocab``, ``experts`` (`ARCHITECTURE_DIMENSIONS`)
    query heads per KV head, FFN width / model width, vocabulary, routed experts: recorded
    only when the data states them (columns, not defaults) *and* varies them.

A law prices an architecture dimension only if its data varied it: a dimension held at
one value (Gemstones: vocabulary 50,304) or not recorded at all (Gemstones: heads, FFN
width) has no term the data could fit, so the law's prediction does not respond to it.
`unpriced_dimensions` names them; the co-design search reports each design's distance
from its base model along them (`search.codesign`), since only a design that keeps the
base's value is compared with the base on what the law knows.

`domain_flags` marks the points of a prediction that fall outside any recorded range
(a quantity the domain or the query lacks is not checked). Ranges are closed and
compared with a relative tolerance of 1e-9, so the fitted points themselves are inside.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

Array = NDArray[np.float64]
#: Architecture dimensions a law prices only where its data varied them.
ARCHITECTURE_DIMENSIONS = ("gqa_ratio", "ffn_ratio", "vocab", "experts")
DOMAIN_QUANTITIES = (
    "width",
    "depth",
    "params",
    "tokens",
    "tokens_per_parameter",
    *ARCHITECTURE_DIMENSIONS,
)
_RELATIVE_TOLERANCE = 1e-9


def domain_quantities(features: Mapping[str, Array]) -> dict[str, Array]:
    """The domain quantities available in law features (``params``, ``tokens``, ...)."""
    quantities = {
        name: np.asarray(features[name], float) for name in ("width", "depth") if name in features
    }
    quantities["params"] = np.asarray(features["params"], float)
    quantities["tokens"] = np.asarray(features["tokens"], float)
    quantities["tokens_per_parameter"] = quantities["tokens"] / quantities["params"]
    return quantities


def domain_of(
    features: Mapping[str, Array], stated: Mapping[str, Array] | None = None
) -> dict[str, tuple[float, float]]:
    """``{quantity: (min, max)}`` over the fitted rows' features, plus the architecture
    dimensions of ``stated`` (values the data gives, `ScalingData.stated_dimensions`) that
    take more than one value."""
    quantities = domain_quantities(features)
    for name, values in (stated or {}).items():
        if name in ARCHITECTURE_DIMENSIONS and np.ptp(np.asarray(values, float)) > 0:
            quantities[name] = np.asarray(values, float)
    return {
        name: (float(np.min(values)), float(np.max(values))) for name, values in quantities.items()
    }


def dimension_report(
    domain: Mapping[str, tuple[float, float]], stated: Mapping[str, Array] | None = None
) -> dict[str, object]:
    """JSON-ready account of the architecture dimensions: ``varied`` (with ranges),
    ``held_constant`` (the one value the data states) and ``not_recorded``."""
    stated = stated or {}
    held = {
        name: float(np.asarray(stated[name], float).flat[0])
        for name in ARCHITECTURE_DIMENSIONS
        if name in stated and name not in domain
    }
    return {
        "varied": {name: list(domain[name]) for name in ARCHITECTURE_DIMENSIONS if name in domain},
        "held_constant": held,
        "not_recorded": [
            name for name in ARCHITECTURE_DIMENSIONS if name not in domain and name not in held
        ],
    }


def unpriced_dimensions(domain: Mapping[str, tuple[float, float]]) -> tuple[str, ...]:
    """The `ARCHITECTURE_DIMENSIONS` a law with this domain cannot price (its data did not
    vary them; an empty domain, i.e. unknown data, prices none)."""
    return tuple(name for name in ARCHITECTURE_DIMENSIONS if name not in domain)


def check_domain(
    domain: Mapping[str, object], origin: str = "law"
) -> dict[str, tuple[float, float]]:
    """Validated copy of a domain mapping (known quantities, finite ``low <= high``)."""
    checked: dict[str, tuple[float, float]] = {}
    for name, bounds in domain.items():
        if name not in DOMAIN_QUANTITIES:
            raise InputError(
                f"{origin}: domain has unknown quantity {name!r}; accepted: "
                + ", ".join(DOMAIN_QUANTITIES)
            )
        try:
            low, high = (float(value) for value in bounds)  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            raise InputError(f"{origin}: domain[{name}] must be [low, high]") from None
        if not (np.isfinite(low) and np.isfinite(high) and 0 < low <= high):
            raise InputError(f"{origin}: domain[{name}] must be 0 < low <= high, got {bounds!r}")
        checked[name] = (low, high)
    return checked


def domain_flags(
    domain: Mapping[str, tuple[float, float]], quantities: Mapping[str, Array]
) -> tuple[NDArray[np.bool_], dict[str, NDArray[np.bool_]]]:
    """``(extrapolated, outside)``: a flag per point, and per quantity which points lie
    outside its range. Arrays broadcast together; quantities missing on either side
    are skipped."""
    outside: dict[str, NDArray[np.bool_]] = {}
    for name, (low, high) in domain.items():
        if name not in quantities:
            continue
        values = np.asarray(quantities[name], dtype=float)
        slack = _RELATIVE_TOLERANCE * max(abs(low), abs(high))
        outside[name] = (values < low - slack) | (values > high + slack)
    if not outside:
        shape = np.broadcast_shapes(*(np.shape(v) for v in quantities.values()))
        return np.zeros(shape, dtype=bool), outside
    arrays = np.broadcast_arrays(*outside.values())
    return np.logical_or.reduce(arrays), dict(zip(outside, arrays, strict=True))
