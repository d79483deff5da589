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
    D / N.

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
DOMAIN_QUANTITIES = ("width", "depth", "params", "tokens", "tokens_per_parameter")
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


def domain_of(features: Mapping[str, Array]) -> dict[str, tuple[float, float]]:
    """``{quantity: (min, max)}`` over the fitted rows' features."""
    return {
        name: (float(np.min(values)), float(np.max(values)))
        for name, values in domain_quantities(features).items()
    }


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
