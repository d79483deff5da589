"""Gemstones-form laws: ``L = E + sum_k A_k x_k^(-a_k)`` over named features.

McLeish et al. (2025, "Gemstones", arXiv 2502.06857, Section 4 and their
``depth_width.py``) fit this sum of power laws over (width, depth, tokens) and over
(width, depth, params, tokens), in log space with a Huber loss from a grid of
starts: ``log L = LSE(c_1 - a_1 log x_1, ..., c_K - a_K log x_K, e)`` with
``A_k = exp(c_k)`` and ``E = exp(e)``. `power_sum_form` builds such a form for any
features; two are registered:

``gemstones-wdt``
    features (width, depth, tokens): what shape and data buy, with no parameter count.
``gemstones-wdpt``
    features (width, depth, params, tokens).

Parameters (fit space, in order): ``c_<feature>`` per feature, ``e``, then
``a_<feature>`` per feature; reported as ``A_<feature>``, ``E``, ``alpha_<feature>``.
Exponents are bounded to [0, 10]. The start grid is Epoch's/Gemstones' lattice:
exponents {0, 0.5, ..., 2} and log-coefficients {0, 5, ..., 25} for three features
(135,000 points with ``e`` in {-1, -0.5, ..., 1}); a coarser one for four
(exponents {0, 0.5, 1, 1.5}, log-coefficients {0, 5, ..., 20}, ``e`` in {-1, 0, 1}:
480,000 points) so that evaluating the grid stays a few seconds.
"""

from __future__ import annotations

import numpy as np

from roofline import InputError

from .forms import Array, Features, LawForm, register_form

_EXPONENT_BOUNDS = (0.0, 10.0)


def power_sum_grid(features: int, exponents: Array, coefficients: Array, offsets: Array) -> Array:
    """Start grid ``(g, 2 K + 1)`` in fit-space order (coefficients, e, exponents).

    Rows in ``itertools.product`` order (the last column varies fastest), built with
    numpy: the two registered grids (615,000 rows) take tens of milliseconds at
    ``import scaling_law``, not the half second or more a Python list of tuples took.
    """
    axes = [
        np.asarray(axis, dtype=float)
        for axis in (*([coefficients] * features), offsets, *([exponents] * features))
    ]
    sizes = [axis.size for axis in axes]
    grid = np.empty((*sizes, len(axes)))
    for column, axis in enumerate(axes):  # each column broadcast along its own axis
        shape = [1] * len(axes)
        shape[column] = axis.size
        grid[..., column] = axis.reshape(shape)
    return grid.reshape(-1, len(axes))


def power_sum_form(name: str, features: tuple[str, ...], grid: Array, description: str) -> LawForm:
    """A `LawForm` for ``L = E + sum_k A_k x_k^(-a_k)`` over ``features``."""
    count = len(features)
    if count == 0 or len(set(features)) != count:
        raise InputError(f"form {name!r}: features must be unique and non-empty")

    def split(theta: Array) -> tuple[Array, Array, Array]:
        theta = np.asarray(theta, dtype=float)
        columns = theta[..., :, None]  # (..., p, 1): broadcast against (n,)
        return columns[..., :count, :], columns[..., count, :], columns[..., count + 1 :, :]

    def terms(theta: Array, values: Features) -> tuple[Array, Array, Array]:
        coefficients, offset, exponents = split(theta)
        logs = np.stack([np.log(values[feature]) for feature in features])  # (K, n)
        exponent_terms = coefficients - exponents * logs  # (..., K, n)
        every = np.concatenate([exponent_terms, offset[..., None, :] + 0 * logs[:1]], axis=-2)
        top = np.max(every, axis=-2, keepdims=True)
        weights = np.exp(every - top)
        total = np.sum(weights, axis=-2, keepdims=True)
        value = (top + np.log(total))[..., 0, :]
        return value, weights / total, logs

    def log_loss(theta: Array, values: Features) -> Array:
        return terms(theta, values)[0]

    def jacobian(theta: Array, values: Features) -> tuple[Array, Array]:
        value, weights, logs = terms(theta, values)
        power = weights[:count]  # (K, n)
        columns = [*power, weights[count], *(-power * logs)]
        return value, np.stack(columns, axis=-1)

    def to_public(theta: Array) -> Array:
        out = np.array(theta, dtype=float)
        out[..., : count + 1] = np.exp(out[..., : count + 1])
        return out

    def from_public(values: Array) -> Array:
        out = np.array(values, dtype=float)
        if np.any(~(out[..., : count + 1] > 0)):
            raise InputError(f"form {name!r}: coefficients A_k and E must be > 0")
        out[..., : count + 1] = np.log(out[..., : count + 1])
        return out

    return LawForm(
        name=name,
        parameter_names=(*(f"c_{f}" for f in features), "e", *(f"a_{f}" for f in features)),
        public_names=(*(f"A_{f}" for f in features), "E", *(f"alpha_{f}" for f in features)),
        log_loss=log_loss,
        jacobian=jacobian,
        initial_grid=grid,
        required_features=features,
        bounds=(*([(None, None)] * (count + 1)), *([_EXPONENT_BOUNDS] * count)),
        to_public=to_public,
        from_public=from_public,
        batched=True,
        description=description,
    )


_HALF_STEPS = np.arange(0.0, 2.5, 0.5)
GEMSTONES_WDT = register_form(
    power_sum_form(
        "gemstones-wdt",
        ("width", "depth", "tokens"),
        power_sum_grid(3, _HALF_STEPS, np.arange(0.0, 30.0, 5.0), np.arange(-1.0, 1.5, 0.5)),
        "L = E + A_w w^-a_w + A_d d^-a_d + A_D D^-a_D (McLeish et al. 2025)",
    )
)
GEMSTONES_WDPT = register_form(
    power_sum_form(
        "gemstones-wdpt",
        ("width", "depth", "params", "tokens"),
        power_sum_grid(
            4, np.arange(0.0, 2.0, 0.5), np.arange(0.0, 25.0, 5.0), np.arange(-1.0, 2.0)
        ),
        "L = E + A_w w^-a_w + A_d d^-a_d + A_N N^-a_N + A_D D^-a_D (McLeish et al. 2025)",
    )
)
