"""Parametric loss forms: what is fitted, in log space, and a registry to plug in more.

A `LawForm` maps a fit-space parameter vector ``theta`` and named feature arrays
(``params`` N, ``tokens`` D, and the shape ratios) to predicted log-loss. The
fitter (`scaling_law.fit.fit_law`) works with any registered form; forms that
supply an analytic Jacobian are fitted with it, others by finite differences.

Shipped forms
-------------
``chinchilla``
    ``L = E + A / N^alpha + B / D^beta`` (Hoffmann et al. 2022), fitted as
    ``log L = LSE(a - alpha log N, b - beta log D, e)`` with ``A, B, E = exp(a, b, e)``.
``chinchilla-shape``
    The N term multiplied by ``exp(s)`` with the explicit shape penalty
    ``s = c_a1 u + c_a2 u^2 + c_f1 v + c_f2 v^2 + c_g w``, where
    ``u = log(aspect / 128)`` (aspect = hidden / layers), ``v = log(ffn_ratio / 4)``
    and ``w = log(heads / kv_heads)``. Quadratic-in-log terms let the data place an
    optimum shape (at ``u* = -c_a1 / (2 c_a2)``); ``w >= 0`` so GQA enters linearly.
    A coefficient whose feature does not vary in the data is held at 0 and
    reported as not identifiable (the Chinchilla set has no shape variation).

The Gemstones power-sum forms (``gemstones-wdt``, ``gemstones-wdpt``) live in
`scaling_law.power_sum` and register themselves in the same registry.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

Array = NDArray[np.float64]
Features = Mapping[str, Array]
LogLoss = Callable[[Array, Features], Array]
LogLossJacobian = Callable[[Array, Features], tuple[Array, Array]]
Transform = Callable[[Array], Array]

ASPECT_REFERENCE = 128.0
FFN_RATIO_REFERENCE = 4.0
FEATURE_NAMES = (
    "params",
    "tokens",
    "width",
    "depth",
    "aspect_ratio",
    "ffn_ratio",
    "gqa_ratio",
    "vocab",
    "non_embedding_params",
    "dataset",
)


def _identity(theta: Array) -> Array:
    return np.asarray(theta, dtype=float)


def _no_fixed(features: Features) -> dict[int, float]:
    return {}


@dataclass(frozen=True, eq=False)
class LawForm:
    """A parametric loss law, fitted in log space.

    Parameters
    ----------
    name
        Registry key, e.g. ``'chinchilla'``.
    parameter_names
        Names of the fit-space parameters ``theta`` (what the optimiser moves).
    public_names
        Names of the reported parameters, in the same order (e.g. ``A`` for ``a``).
    log_loss
        ``log_loss(theta, features) -> log L``, shape ``(n,)`` for ``theta`` of shape
        ``(p,)``; when ``batched`` it must also map ``(k, p)`` to ``(k, n)``.
    initial_grid
        Start points, shape ``(g, p)``, in fit space.
    required_features
        Feature names read by ``log_loss`` (from `FEATURE_NAMES`).
    jacobian
        Optional ``(theta, features) -> (log L, d log L / d theta of shape (n, p))``.
    bounds
        Optional ``(low, high)`` per parameter (None = unbounded), fit space.
    to_public, from_public
        Maps between fit space and reported values, over the last axis.
    fixed_parameters
        ``features -> {index: value}`` of parameters to hold fixed because the data
        cannot identify them.
    batched
        True when ``log_loss`` accepts a stack of parameter vectors.
    """

    name: str
    parameter_names: tuple[str, ...]
    public_names: tuple[str, ...]
    log_loss: LogLoss
    initial_grid: Array
    required_features: tuple[str, ...] = ("params", "tokens")
    jacobian: LogLossJacobian | None = None
    bounds: tuple[tuple[float | None, float | None], ...] | None = None
    to_public: Transform = _identity
    from_public: Transform = _identity
    fixed_parameters: Callable[[Features], Mapping[int, float]] = _no_fixed
    batched: bool = False
    description: str = field(default="")

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError("form.name must be a non-empty string")
        count = len(self.parameter_names)
        if count == 0 or len(set(self.parameter_names)) != count:
            raise InputError(f"form {self.name!r}: parameter_names must be unique and non-empty")
        if len(self.public_names) != count or len(set(self.public_names)) != count:
            raise InputError(
                f"form {self.name!r}: public_names must be {count} unique names, one per parameter"
            )
        grid = np.asarray(self.initial_grid, dtype=float)
        if grid.ndim != 2 or grid.shape[1] != count or grid.shape[0] == 0:
            raise InputError(
                f"form {self.name!r}: initial_grid must have shape (g, {count}), got {grid.shape}"
            )
        if not np.all(np.isfinite(grid)):
            raise InputError(f"form {self.name!r}: initial_grid must be finite")
        object.__setattr__(self, "initial_grid", grid)
        unknown = sorted(set(self.required_features) - set(FEATURE_NAMES))
        if unknown:
            raise InputError(
                f"form {self.name!r}: unknown feature {unknown[0]!r}; accepted: "
                + ", ".join(FEATURE_NAMES)
            )
        if self.bounds is not None and len(self.bounds) != count:
            raise InputError(f"form {self.name!r}: bounds must have {count} (low, high) pairs")

    @property
    def size(self) -> int:
        """Number of parameters."""
        return len(self.parameter_names)

    def public_values(self, theta: Array) -> dict[str, float]:
        """Reported parameter values of one fit-space vector, by public name."""
        values = self.to_public(np.asarray(theta, dtype=float))
        return {name: float(value) for name, value in zip(self.public_names, values, strict=True)}

    def theta_from_public(self, values: Mapping[str, float]) -> Array:
        """Fit-space vector from reported values (keys must be the public names)."""
        missing = [name for name in self.public_names if name not in values]
        if missing:
            raise InputError(f"form {self.name!r}: missing parameter {missing[0]!r}")
        return self.from_public(np.array([values[name] for name in self.public_names], float))


_REGISTRY: dict[str, LawForm] = {}


def register_form(form: LawForm, replace: bool = False) -> LawForm:
    """Add ``form`` to the registry (``replace=True`` to override a name); returns it."""
    if form.name in _REGISTRY and not replace:
        raise InputError(f"form {form.name!r} is already registered; pass replace=True")
    _REGISTRY[form.name] = form
    return form


def get_form(form: str | LawForm) -> LawForm:
    """Look a form up by name (a `LawForm` passes through)."""
    if isinstance(form, LawForm):
        return form
    if form not in _REGISTRY:
        raise InputError(f"unknown form {form!r}; accepted: {', '.join(list_forms())}")
    return _REGISTRY[form]


def list_forms() -> list[str]:
    """Registered form names, sorted."""
    return sorted(_REGISTRY)


def _columns(theta: Array, count: int) -> list[Array]:
    """Parameters as arrays that broadcast against per-point features.

    ``theta`` of shape ``(p,)`` gives shape-``(1,)`` columns; ``(k, p)`` gives
    ``(k, 1)`` so every stacked vector is evaluated on every point.
    """
    theta = np.asarray(theta, dtype=float)
    return [theta[..., index, None] for index in range(count)]


def _log_sum_exp3(first: Array, second: Array, third: Array) -> tuple[Array, Array, Array, Array]:
    """Stable ``log(e^x + e^y + e^z)`` and the three softmax weights (broadcasting)."""
    top = np.maximum(np.maximum(first, second), third)
    w1, w2, w3 = np.exp(first - top), np.exp(second - top), np.exp(third - top)
    total = w1 + w2 + w3
    return top + np.log(total), w1 / total, w2 / total, w3 / total


def _chinchilla_log_loss(theta: Array, features: Features) -> Array:
    a, b, e, alpha, beta = _columns(theta, 5)
    value, *_ = _log_sum_exp3(
        a - alpha * np.log(features["params"]), b - beta * np.log(features["tokens"]), e
    )
    return value


def _chinchilla_jacobian(theta: Array, features: Features) -> tuple[Array, Array]:
    a, b, e, alpha, beta = _columns(theta, 5)
    log_n, log_d = np.log(features["params"]), np.log(features["tokens"])
    value, w1, w2, w3 = _log_sum_exp3(a - alpha * log_n, b - beta * log_d, e)
    return value, np.stack([w1, w2, w3, -w1 * log_n, -w2 * log_d], axis=-1)


def _exp_scale(theta: Array) -> Array:
    """``(a, b, e, ...)`` to ``(A, B, E, ...)``: exponentiate the first three."""
    out = np.array(theta, dtype=float)
    out[..., :3] = np.exp(out[..., :3])
    return out


def _log_scale(values: Array) -> Array:
    """Inverse of `_exp_scale`; A, B, E must be > 0."""
    out = np.array(values, dtype=float)
    if np.any(~(out[..., :3] > 0)):
        raise InputError("A, B and E must be > 0")
    out[..., :3] = np.log(out[..., :3])
    return out


def chinchilla_grid() -> Array:
    """Epoch AI's start grid (Besiroglu et al. 2024): 4,500 points in (a, b, e, alpha, beta).

    ``a, b`` in {0, 5, ..., 25}, ``e`` in {-1, -0.5, ..., 1}, ``alpha, beta`` in
    {0, 0.5, ..., 2}.
    """
    return np.array(
        list(
            itertools.product(
                np.arange(0.0, 30.0, 5.0),
                np.arange(0.0, 30.0, 5.0),
                np.arange(-1.0, 1.5, 0.5),
                np.arange(0.0, 2.5, 0.5),
                np.arange(0.0, 2.5, 0.5),
            )
        )
    )


_EXPONENT_BOUNDS = (0.0, 10.0)
CHINCHILLA = LawForm(
    name="chinchilla",
    parameter_names=("a", "b", "e", "alpha", "beta"),
    public_names=("A", "B", "E", "alpha", "beta"),
    log_loss=_chinchilla_log_loss,
    jacobian=_chinchilla_jacobian,
    initial_grid=chinchilla_grid(),
    bounds=((None, None), (None, None), (None, None), _EXPONENT_BOUNDS, _EXPONENT_BOUNDS),
    to_public=_exp_scale,
    from_public=_log_scale,
    batched=True,
    description="L = E + A / N^alpha + B / D^beta (Hoffmann et al. 2022)",
)


def shape_coordinates(features: Features) -> tuple[Array, Array, Array]:
    """``(u, v, w)``: log aspect, FFN and GQA ratios about their reference points."""
    return (
        np.log(features["aspect_ratio"] / ASPECT_REFERENCE),
        np.log(features["ffn_ratio"] / FFN_RATIO_REFERENCE),
        np.log(features["gqa_ratio"]),
    )


def _shape_terms(features: Features) -> list[Array]:
    u, v, w = shape_coordinates(features)
    return [u, u * u, v, v * v, w]


def _shape_log_loss(theta: Array, features: Features) -> Array:
    a, b, e, alpha, beta, *coefficients = _columns(theta, 10)
    penalty = sum(c * term for c, term in zip(coefficients, _shape_terms(features), strict=True))
    value, *_ = _log_sum_exp3(
        a - alpha * np.log(features["params"]) + penalty,
        b - beta * np.log(features["tokens"]),
        e,
    )
    return value


def _shape_jacobian(theta: Array, features: Features) -> tuple[Array, Array]:
    a, b, e, alpha, beta, *coefficients = _columns(theta, 10)
    terms = _shape_terms(features)
    penalty = sum(c * term for c, term in zip(coefficients, terms, strict=True))
    log_n, log_d = np.log(features["params"]), np.log(features["tokens"])
    value, w1, w2, w3 = _log_sum_exp3(a - alpha * log_n + penalty, b - beta * log_d, e)
    columns = [w1, w2, w3, -w1 * log_n, -w2 * log_d] + [w1 * term for term in terms]
    return value, np.stack(columns, axis=-1)


def _shape_fixed(features: Features) -> dict[int, float]:
    """Hold coefficients at 0 when their shape feature has too few distinct values."""
    u, v, w = shape_coordinates(features)
    fixed: dict[int, float] = {}
    for linear, quadratic, coordinate in ((5, 6, u), (7, 8, v), (9, None, w)):
        distinct = np.unique(np.round(coordinate, 9)).size
        if distinct < 2:
            fixed[linear] = 0.0
        if quadratic is not None and distinct < 3:
            fixed[quadratic] = 0.0
    return fixed


_CHINCHILLA_GRID = chinchilla_grid()
CHINCHILLA_SHAPE = LawForm(
    name="chinchilla-shape",
    parameter_names=(*CHINCHILLA.parameter_names, "c_a1", "c_a2", "c_f1", "c_f2", "c_g"),
    public_names=(
        *CHINCHILLA.public_names,
        "aspect_linear",
        "aspect_quadratic",
        "ffn_linear",
        "ffn_quadratic",
        "gqa_linear",
    ),
    log_loss=_shape_log_loss,
    jacobian=_shape_jacobian,
    initial_grid=np.hstack([_CHINCHILLA_GRID, np.zeros((len(_CHINCHILLA_GRID), 5))]),
    required_features=("params", "tokens", "aspect_ratio", "ffn_ratio", "gqa_ratio"),
    bounds=(
        *CHINCHILLA.bounds,  # type: ignore[misc]
        (None, None),
        (0.0, None),
        (None, None),
        (0.0, None),
        (None, None),
    ),
    to_public=_exp_scale,
    from_public=_log_scale,
    fixed_parameters=_shape_fixed,
    batched=True,
    description="Chinchilla with the N term scaled by exp(quadratic-in-log shape penalty)",
)

register_form(CHINCHILLA)
register_form(CHINCHILLA_SHAPE)
