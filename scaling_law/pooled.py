"""One law fitted on several training-run tables at once, with one irreducible loss per table.

Why: tables from different suites measure loss on different data with different
tokenizers (Gemstones: training loss on Dolma; open_lm: Paloma validation loss on C4,
RedPajama or RefinedWeb), so their loss levels differ by an amount no architecture or
token term explains. Pooling raw losses would push that difference into the shared
terms. `fit_pooled_law` instead fits ``chinchilla-shape`` (or its beta-prior variant)
with every parameter shared except ``E``, which each table gets its own of:

    L_i = E_k(i) + A exp(s_i) / N_i^alpha + B / D_i^beta,   E_k = E_1 exp(d_k), d_1 = 0,

table 1 being the *reference* (its E is the reported one). ``A, alpha, B, beta`` and the
shape coefficients are then identified by every table together: the token exponent by
whichever spans the most decades of D. Fitting, bootstrap and leave-one-architecture-out
are `scaling_law.fit_law`'s (the offsets are extra parameters of a form registered for
the number of tables, ``chinchilla-shape+E<k>``). `reference_law` turns the result into
a plain ``chinchilla-shape`` law at the reference table's loss scale, which everything
downstream (prediction, compute-optimal allocation, co-design) reads unchanged; loss
*differences* at one D, what the co-design compares, do not depend on which E is used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from roofline import InputError

from .data import SOURCE_COLUMN, ScalingData
from .fit import fit_law
from .fit_result import FitResult
from .forms import (
    CHINCHILLA_SHAPE,
    Features,
    LawForm,
    _columns,
    _exp_scale,
    _log_scale,
    _log_sum_exp3,
    _shape_terms,
    get_form,
    list_forms,
    register_form,
)
from .law import ScalingLaw

Array = NDArray[np.float64]
#: Base forms a pooled fit supports (E is their third parameter; 10 parameters).
POOLABLE_FORMS = ("chinchilla-shape", "chinchilla-shape-beta-prior")
#: Columns a pooled table keeps (the rest differ between suites or are bookkeeping).
POOLED_COLUMNS = ("loss", "tokens", "params", "layers", "hidden", "tie_embeddings")
_BASE_SIZE = CHINCHILLA_SHAPE.size
_OFFSET_BOUND = 3.0  # |log(E_k / E_1)| <= 3: a factor of 20 between loss floors


def pool_tables(tables: Mapping[str, ScalingData]) -> ScalingData:
    """One table of every run, with a ``dataset`` column (1 = the first table given).

    Every table needs ``loss``, ``tokens``, ``params``, ``layers`` and ``hidden``; N is each
    table's own ``params`` (embeddings included). Vocabulary and heads are dropped (they
    differ between suites only by suite, so no term could be fitted on them).
    """
    if len(tables) < 2:
        raise InputError(f"pooling needs at least 2 tables, got {len(tables)}")
    parts: dict[str, list[Array]] = {name: [] for name in (*POOLED_COLUMNS, SOURCE_COLUMN)}
    for index, (name, data) in enumerate(tables.items(), start=1):
        for column in POOLED_COLUMNS:
            if column == "tie_embeddings" and column not in data.columns:
                parts[column].append(np.zeros(len(data)))
                continue
            if column not in data.columns:
                raise InputError(f"table {name!r} ({data.origin}) has no {column!r} column")
            parts[column].append(np.asarray(data.columns[column], float))
        parts[SOURCE_COLUMN].append(np.full(len(data), float(index)))
    origin = "pooled: " + ", ".join(f"{name} ({data.origin})" for name, data in tables.items())
    return ScalingData.from_columns(
        {column: np.concatenate(values) for column, values in parts.items()}, origin
    )


def per_dataset_form(base: str, tables: int) -> LawForm:
    """``base`` with one E per table (registered as ``<base>+E<tables>``)."""
    if base not in POOLABLE_FORMS:
        raise InputError(f"pooled form {base!r}: accepted: {', '.join(POOLABLE_FORMS)}")
    if isinstance(tables, bool) or not isinstance(tables, int) or tables < 2:
        raise InputError(f"tables must be an integer >= 2, got {tables!r}")
    name = f"{base}+E{tables}"
    if name in list_forms():
        return get_form(name)
    base_form = get_form(base)
    extra = tables - 1
    offsets = tuple(f"d_{k}" for k in range(2, tables + 1))
    base_fixed = base_form.fixed_parameters
    grid = base_form.initial_grid
    return register_form(
        dataclasses.replace(
            base_form,
            name=name,
            parameter_names=(*base_form.parameter_names, *offsets),
            public_names=(*base_form.public_names, *(f"E_ratio_{k}" for k in range(2, tables + 1))),
            log_loss=_pooled_log_loss,
            jacobian=_pooled_jacobian,
            initial_grid=np.hstack([grid, np.zeros((len(grid), extra))]),
            required_features=(*base_form.required_features, SOURCE_COLUMN),
            bounds=(*base_form.bounds, *((-_OFFSET_BOUND, _OFFSET_BOUND),) * extra),  # type: ignore[misc]
            to_public=_to_public,
            from_public=_from_public,
            fixed_parameters=lambda features: dict(base_fixed(features)),
            description=f"{base} with one E per training-run table ({tables} tables)",
        )
    )


def fit_pooled_law(
    tables: Mapping[str, ScalingData], base: str = "chinchilla-shape", **options: Any
) -> FitResult:
    """`fit_law` of ``per_dataset_form(base, len(tables))`` on `pool_tables` (``options`` are
    `fit_law`'s: bootstrap, cross_validation='architecture', seed, ...)."""
    data = pool_tables(tables)
    return fit_law(data, per_dataset_form(base, len(tables)), **options)


def reference_law(fit: FitResult, table_names: Sequence[str]) -> ScalingLaw:
    """The pooled fit as a plain ``base`` law at the first table's loss scale; every table's
    E (and its bootstrap band) is kept in ``metadata.pooled``."""
    law = fit.law
    base = law.form.split("+E")[0]
    form = get_form(base)
    if len(table_names) != len(law.params) - form.size + 1:
        raise InputError(f"{len(table_names)} table names for a {law.form} law")
    names = form.public_names
    ratios = [law.params[f"E_ratio_{k}"] for k in range(2, len(table_names) + 1)]
    floors = {
        table: law.params["E"] * ratio
        for table, ratio in zip(table_names, [1.0, *ratios], strict=True)
    }
    samples = tuple(sample[: form.size] for sample in law.bootstrap_params)
    metadata = dict(law.metadata)
    metadata["pooled"] = {
        "form": law.form,
        "reference_table": table_names[0],
        "irreducible_loss_per_table": floors,
        "E_ratio_intervals": {
            table: law.intervals.get(f"E_ratio_{k}")
            for k, table in enumerate(table_names[1:], start=2)
        },
        "note": (
            "one E per table (different data and tokenizers); A, alpha, B, beta and the "
            "shape coefficients shared; E here is the reference table's"
        ),
    }
    return ScalingLaw(
        form=base,
        params={name: law.params[name] for name in names},
        intervals={name: law.intervals[name] for name in names if name in law.intervals},
        standard_errors={
            name: law.standard_errors[name] for name in names if name in law.standard_errors
        },
        fixed=tuple(name for name in law.fixed if name in names),
        confidence=law.confidence,
        bootstrap_params=samples,
        include_embeddings=law.include_embeddings,
        moe_parameters=law.moe_parameters,
        gamma_w=law.gamma_w,
        reference_bits=law.reference_bits,
        metadata=metadata,
        domain=law.domain,
    )


def _floor_log(theta: Array, features: Features) -> Array:
    """``log E_k`` per point: the reference ``e`` plus the point's table offset."""
    theta = np.asarray(theta, dtype=float)
    offsets = np.concatenate([np.zeros((*theta.shape[:-1], 1)), theta[..., _BASE_SIZE:]], axis=-1)
    index = np.asarray(features[SOURCE_COLUMN]).astype(np.int64) - 1
    return theta[..., 2, None] + offsets[..., index]


def _pooled_log_loss(theta: Array, features: Features) -> Array:
    a, b, _, alpha, beta, *coefficients = _columns(np.asarray(theta)[..., :_BASE_SIZE], 10)
    penalty = sum(c * term for c, term in zip(coefficients, _shape_terms(features), strict=True))
    value, *_ = _log_sum_exp3(
        a - alpha * np.log(features["params"]) + penalty,
        b - beta * np.log(features["tokens"]),
        _floor_log(theta, features),
    )
    return value


def _pooled_jacobian(theta: Array, features: Features) -> tuple[Array, Array]:
    theta = np.asarray(theta, dtype=float)
    a, b, _, alpha, beta, *coefficients = _columns(theta[:_BASE_SIZE], 10)
    terms = _shape_terms(features)
    penalty = sum(c * term for c, term in zip(coefficients, terms, strict=True))
    log_n, log_d = np.log(features["params"]), np.log(features["tokens"])
    value, w1, w2, w3 = _log_sum_exp3(
        a - alpha * log_n + penalty, b - beta * log_d, _floor_log(theta, features)
    )
    index = np.asarray(features[SOURCE_COLUMN]).astype(np.int64)
    offsets = [w3 * (index == k) for k in range(2, len(theta) - _BASE_SIZE + 2)]
    columns = [w1, w2, w3, -w1 * log_n, -w2 * log_d, *(w1 * term for term in terms), *offsets]
    return value, np.stack(columns, axis=-1)


def _to_public(theta: Array) -> Array:
    out = _exp_scale(theta)
    out[..., _BASE_SIZE:] = np.exp(out[..., _BASE_SIZE:])
    return out


def _from_public(values: Array) -> Array:
    out = np.array(values, dtype=float)
    if np.any(~(out[..., _BASE_SIZE:] > 0)):
        raise InputError("E ratios must be > 0")
    out[..., _BASE_SIZE:] = np.log(out[..., _BASE_SIZE:])
    return _log_scale(out)
