"""Fit a runtime profile's free parameters to measured runs (``codesign calibrate``).

Free parameters (both phases share the efficiencies and the per-step cost: batch
latencies alone cannot tell a prefill step's fixed cost from a decode step's)::

    compute_efficiency, memory_efficiency   fractions of the platform's peaks, (1e-3, 1]
                                            (or ``inherit``: each platform preset's own)
    step_overhead_s                         fixed cost per forward step, [0, 0.2] s
    sequence_overhead_s                     fixed cost per sequence per step, [0, 0.01] s
    all_reduce_latency_s                    one small-message all-reduce, [0, 0.01] s
    <format>.memory_efficiency_scale        per weight format other than 16 bit, [0.05, 2]
                                            (times memory_efficiency, at most 1)
    routing_independence                    optional (`OPTIONAL`): how independently a
                                            step's tokens pick experts, [0, 1]
    <kv format>.emulated_memory_efficiency_scale
                                            optional (`OPTIONAL_KINDS`): per KV-cache
                                            format, the rate (times the memory fraction)
                                            at which its cached bytes stream on a device
                                            without its native dtype, [0.01, 1]; only
                                            when some row has it on such a device

Residuals are ``log(predicted / measured)`` of every measured metric (batch latency,
TTFT, inter-token latency), each weighted by ``1 / sqrt(rows of its hardware)`` so that every hardware weighs the
same (as in leave-one-hardware-out scoring), minimised with
``scipy.optimize.least_squares`` under a soft-L1 loss with ``f_scale`` 0.05 on the
weighted residuals (a row counts linearly beyond ``5 % x sqrt(rows of its hardware)``,
so the loss is robust to a few bad rows of a thinly measured device and close to least
squares on a device measured hundreds of times) within the bounds. This weighting and
loss were chosen among three variants (unweighted soft-L1; this; soft-L1 at 5 % of
each raw residual) by the leave-one-hardware-out errors of ``benchmarks/validate.py``.
A parameter no row depends on (an all-reduce latency with no tp > 1 row, a format no
row uses) is left out and reported. The fit is refused when the Jacobian of the
residuals, columns normalised, has a condition number above `MAX_CONDITION`: the
data then cannot separate the parameters named (batch-1 rows of one model cannot
tell step cost from bandwidth efficiency); an optional term (`is_optional`) the data
cannot identify, in that sense or because its 95 % interval covers its whole range,
is left at its neutral value (1, the physics) and reported in ``Fit.refused``
instead. The routing independence needs mixture-of-experts rows decoding two or
more sequences (``Fit.unused`` says so otherwise). Intervals: 95 % from the sandwich
covariance of the weighted Gauss-Newton fit, ``A^-1 B A^-1`` with ``A = J^T J`` and
``B = s^2 J^T W J`` (``J`` the weighted Jacobian, ``W`` the squared weights), ``s`` a
robust residual scale (1.4826 MAD of the unweighted residuals).
scipy is imported inside `fit_profile` only (the numerical core imports no scipy).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from genz import KVFormat, PhaseProfile, RuntimeProfile, WeightFormat
from genz.fitting import INHERITABLE, Array
from roofline import InputError

from .rows import CalibrationRows

#: Largest accepted condition number of the column-normalised Jacobian.
MAX_CONDITION = 1e3
#: Relative change of a prediction below which a parameter counts as unused.
UNUSED = 1e-9
#: (low, high, log-scaled) bounds of each kind of parameter.
BOUNDS = {
    "compute_efficiency": (1e-3, 1.0, True),
    "memory_efficiency": (1e-3, 1.0, True),
    "step_overhead_s": (0.0, 0.2, False),
    "sequence_overhead_s": (0.0, 0.01, False),
    "all_reduce_latency_s": (0.0, 0.01, False),
    "memory_efficiency_scale": (0.05, 2.0, True),
    "routing_independence": (0.0, 1.0, False),
    "emulated_memory_efficiency_scale": (0.01, 1.0, True),
}
#: Optional terms: a term the rows cannot identify is left at its neutral value (1,
#: the physics) and reported, instead of refusing the whole fit. `OPTIONAL` are phase
#: terms, `OPTIONAL_KINDS` the kinds of per-format terms (``<format>.<kind>``).
OPTIONAL = ("routing_independence",)
OPTIONAL_KINDS = ("emulated_memory_efficiency_scale",)
START = {
    "compute_efficiency": 0.5,
    "memory_efficiency": 0.7,
    "step_overhead_s": 1e-3,
    "sequence_overhead_s": 1e-5,
    "all_reduce_latency_s": 1e-5,
    "memory_efficiency_scale": 1.0,
    "routing_independence": 0.5,
    "emulated_memory_efficiency_scale": 0.5,
}
METRICS = ("batch_latency_s", "ttft_s", "itl_s")
#: How `_solve` names a parameter whose Jacobian column is zero at the optimum.
NO_ROW_DEPENDS = "no measured row depends on"


@dataclass(frozen=True)
class Fit:
    """Result of `fit_profile`, scipy-shaped (``success``, ``status``, ``message``)."""

    profile: RuntimeProfile
    values: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    unused: dict[str, str]
    refused: dict[str, str]
    held: tuple[str, ...]
    inherited: tuple[str, ...]
    rows: int
    residuals: int
    condition: float
    success: bool
    status: int
    message: str
    #: Weight-format scales no row's prediction moves with at the optimum, and why:
    #: held at their upper bound (`_flat_format_scale`), not fitted.
    capped: dict[str, str] = field(default_factory=dict)


def is_optional(name: str) -> bool:
    """True for a term the fit may leave out (`OPTIONAL`, `OPTIONAL_KINDS`)."""
    return name in OPTIONAL or _kind(name) in OPTIONAL_KINDS


def kv_scale_name(fmt: KVFormat) -> str:
    """The parameter name of a KV format's emulated memory-efficiency scale."""
    return f"{fmt.name}.emulated_memory_efficiency_scale"


def parameter_names(
    data: CalibrationRows,
    formats: Sequence[WeightFormat],
    kv_formats: Sequence[KVFormat] = (),
) -> list[str]:
    """Every candidate parameter for the rows' formats (format scales: non-16-bit only;
    every KV format's scale, `_unused` drops those no row is emulated with)."""
    names = [
        "compute_efficiency",
        "memory_efficiency",
        "step_overhead_s",
        "sequence_overhead_s",
        "all_reduce_latency_s",
        *OPTIONAL,
    ]
    present = set(np.round(data.nominal_bits, 6).tolist())
    for fmt in formats:
        if fmt.nominal_bits != 16 and round(fmt.nominal_bits, 6) in present:
            names.append(f"{fmt.name}.memory_efficiency_scale")
    names += [kv_scale_name(fmt) for fmt in kv_formats]
    return names


def _kind(name: str) -> str:
    return name.split(".")[-1]


def build_profile(
    name: str,
    values: dict[str, float],
    formats: Sequence[WeightFormat],
    description: str = "",
    kv_formats: Sequence[KVFormat] = (),
) -> RuntimeProfile:
    """A profile from parameter values; absent ones take their neutral value (no all-reduce
    latency: the platform's ring latencies; format scales 1)."""
    phase = PhaseProfile(
        compute_efficiency=values.get("compute_efficiency"),  # absent: inherited (None)
        memory_efficiency=values.get("memory_efficiency"),
        step_overhead_s=values["step_overhead_s"],
        sequence_overhead_s=values.get("sequence_overhead_s", 0.0),
        **{term: values[term] for term in OPTIONAL if term in values},
    )
    scaled = tuple(
        dataclasses.replace(
            fmt,
            memory_efficiency_scale=values.get(
                f"{fmt.name}.memory_efficiency_scale", fmt.memory_efficiency_scale
            ),
        )
        for fmt in formats
    )
    return RuntimeProfile(
        name=name,
        description=description,
        phases={"prefill": phase, "decode": phase},
        all_reduce_latency_s=values.get("all_reduce_latency_s"),
        weight_formats=scaled,
        kv_formats=tuple(
            dataclasses.replace(
                fmt,
                emulated_memory_efficiency_scale=values.get(
                    kv_scale_name(fmt), fmt.emulated_memory_efficiency_scale
                ),
            )
            for fmt in kv_formats
        ),
    )


def _to_values(x: Array, names: Sequence[str]) -> dict[str, float]:
    return {
        name: float(np.exp(v) if BOUNDS[_kind(name)][2] else v)
        for name, v in zip(names, x, strict=True)
    }


def _to_coordinates(values: Mapping[str, float], names: Sequence[str]) -> Array:
    return np.array([np.log(values[n]) if BOUNDS[_kind(n)][2] else values[n] for n in names], float)


def _residuals(data: CalibrationRows, profile: RuntimeProfile) -> Array:
    """Log ratios predicted / measured of every measured metric, metric by metric."""
    predicted = data.predict(profile)
    parts = []
    for metric in METRICS:
        measured = data.measured[metric]
        have = np.isfinite(measured)
        parts.append(np.log(predicted[metric][have] / measured[have]))
    return np.concatenate(parts)


def _weights(data: CalibrationRows) -> Array:
    """Per residual (the order of `_residuals`), ``1 / sqrt(rows of its hardware)``: every
    hardware weighs the same in the fit, as it does in leave-one-hardware-out scoring."""
    hardware = np.array(data.hw)
    names, counts = np.unique(hardware, return_counts=True)
    weight = 1.0 / np.sqrt(counts[np.searchsorted(names, hardware)])
    return np.concatenate([weight[np.isfinite(data.measured[metric])] for metric in METRICS])


def _jacobian(residuals: Callable[[Array], Array], x: Array, names: Sequence[str]) -> Array:
    """Forward-difference Jacobian of ``residuals`` in the fitted coordinates (a step
    back from an upper bound)."""
    base = residuals(x)
    columns = []
    for index, parameter in enumerate(names):
        _, high, log = BOUNDS[_kind(parameter)]
        step = 1e-4 if log else max(1e-7, abs(x[index]) * 1e-3)
        if x[index] + step > (np.log(high) if log else high):
            step = -step
        moved = x.copy()
        moved[index] += step
        columns.append((residuals(moved) - base) / step)
    return np.stack(columns, axis=1)


def _unused(data: CalibrationRows, kv_formats: Sequence[KVFormat] = ()) -> dict[str, str]:
    """Parameters no row depends on, with the reason (the physics' own model is kept)."""
    unused = {}
    for fmt in kv_formats:
        if not np.any(data.emulated(fmt)):
            unused[kv_scale_name(fmt)] = (
                f"no row has a {fmt.name} KV cache (kv_bits {fmt.nominal_bits:g}) on a "
                f"device without {fmt.native_dtype} arithmetic"
            )
    if not np.any(data.prefill.all_reduces + data.decode.all_reduces > 0):
        unused["all_reduce_latency_s"] = "no row runs an all-reduce (all tp 1)"
    if np.all(data.decode.sequences == data.decode.sequences[0]):
        unused["sequence_overhead_s"] = "one batch size: the same as the step cost"
    moe = data.decode.num_experts > 0
    if not np.any(moe):
        unused["routing_independence"] = "no mixture-of-experts row"
    elif not np.any(moe & (data.decode.routed_tokens > 1)):
        unused["routing_independence"] = "no mixture-of-experts row decodes two or more sequences"
    return unused


def _solve(
    data: CalibrationRows,
    name: str,
    formats: Sequence[WeightFormat],
    held: Mapping[str, float],
    names: Sequence[str],
    weights: Array,
    kv_formats: Sequence[KVFormat] = (),
) -> tuple[Any, Array, float, tuple[tuple[str, ...], str] | None]:
    """Robust least squares over ``names``; the Jacobian at the optimum, its condition
    number and, when the rows cannot identify the parameters, the ones involved (most
    involved first) and the refusal message."""
    from scipy.optimize import least_squares

    bounds = [
        [
            np.log(BOUNDS[_kind(n)][side]) if BOUNDS[_kind(n)][2] else BOUNDS[_kind(n)][side]
            for n in names
        ]
        for side in (0, 1)
    ]

    def residuals(x: Array) -> Array:
        values = {**held, **_to_values(x, names)}
        profile = build_profile(name, values, formats, kv_formats=kv_formats)
        return weights * _residuals(data, profile)

    x0 = _to_coordinates({n: START[_kind(n)] for n in names}, names)
    scale = np.array([1.0 if BOUNDS[_kind(n)][2] else START[_kind(n)] for n in names])
    result = least_squares(
        residuals, x0, bounds=bounds, loss="soft_l1", f_scale=0.05, x_scale=scale
    )
    jac = _jacobian(residuals, result.x, names)
    norms = np.linalg.norm(jac, axis=0)
    if np.any(norms == 0):
        flat = names[int(np.argmin(norms))]
        message = f"{NO_ROW_DEPENDS} {flat}"
        if flat in INHERITABLE:
            message += f" (--inherit {flat} takes each platform preset's own value instead)"
        return result, jac, float("inf"), ((flat,), message)
    _, singular, vt = np.linalg.svd(jac / norms)
    condition = float(singular[0] / singular[-1]) if singular[-1] > 0 else float("inf")
    if condition <= MAX_CONDITION:
        return result, jac, condition, None
    order = np.argsort(-np.abs(vt[-1]))[:2]
    involved = " and ".join(names[i] for i in sorted(order))
    message = (
        f"the measurements cannot separate {involved} (Jacobian condition number "
        f"{condition:.3g} > {MAX_CONDITION:g}): add rows that vary batch, tokens or model size"
    )
    return result, jac, condition, (tuple(names[i] for i in order), message)


def _intervals(
    x: Array, jac: Array, raw: Array, weights: Array, names: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """95 % intervals of the parameters (sandwich covariance, see the module doc),
    clipped to their bounds."""
    spread = 1.4826 * float(np.median(np.abs(raw - np.median(raw))))
    try:  # sandwich covariance of the weighted fit, residual scale from the raw ones
        bread = np.linalg.inv(jac.T @ jac)
        meat = spread**2 * (jac * weights[:, None] ** 2).T @ jac
        half = 1.96 * np.sqrt(np.clip(np.diag(bread @ meat @ bread), 0, None))
    except np.linalg.LinAlgError:
        half = np.full(len(names), np.inf)
    intervals = {}
    for index, parameter in enumerate(names):
        low, high, log = BOUNDS[_kind(parameter)]
        ends = x[index] + np.array([-half[index], half[index]])
        ends = np.exp(np.clip(ends, -50, 50)) if log else ends
        intervals[parameter] = (
            float(np.clip(ends[0], low, high)),
            float(np.clip(ends[1], low, high)),
        )
    return intervals


def _unconstrained(
    intervals: Mapping[str, tuple[float, float]],
) -> tuple[tuple[str, ...], str] | None:
    """An optional term whose 95 % interval spans its whole accepted range (the rows do
    not constrain it), and the message; None when there is none."""
    for parameter in intervals:
        if is_optional(parameter):
            low, high, _ = BOUNDS[_kind(parameter)]
            if intervals[parameter] == (low, high):
                return (parameter,), (
                    f"the measurements do not constrain {parameter}: its 95% interval "
                    f"covers the whole range [{low:g}, {high:g}]"
                )
    return None


def _flat_format_scale(problem: tuple[tuple[str, ...], str]) -> str | None:
    """The weight-format scale of ``problem`` when it is a zero Jacobian column: rows use
    the format (`parameter_names` lists only those), but at the optimum none of their
    predictions moves with the scale, because every one streams weights at the peak
    bandwidth (scale x memory efficiency capped at 1) or is not memory-bound. None for
    any other problem."""
    parameter = problem[0][0]
    if _kind(parameter) == "memory_efficiency_scale" and problem[1].startswith(NO_ROW_DEPENDS):
        return parameter
    return None


def fit_profile(
    data: CalibrationRows,
    name: str,
    formats: Sequence[WeightFormat] = (),
    *,
    held: Mapping[str, float] | None = None,
    inherit: Sequence[str] = (),
    check: bool = True,
    description: str = "",
    kv_formats: Sequence[KVFormat] = (),
) -> Fit:
    """Fit the free parameters of profile ``name`` to ``data`` (rows of one runtime).

    ``held`` parameters keep the values given (not fitted, no interval); ``inherit``
    names efficiencies (`genz.runtime.INHERITABLE`) not fitted at all: each row's
    platform preset's own value applies (None in the profile).
    ``check=False`` skips the identifiability refusal (cross-validation folds).
    ``kv_formats``: the runtime's KV-cache formats (their scales fitted where rows
    use them on a device without their native dtype; ``data`` from `decompose` with
    the same formats). Raises `InputError` naming the parameters the data cannot
    separate; an optional term (`is_optional`) the data cannot identify is left out
    instead (``refused``).
    """
    if len(data.rows) < 3:
        raise InputError(f"calibration needs at least 3 measured rows, got {len(data.rows)}")
    held = dict(held or {})
    repeated = sorted({name for name in inherit if list(inherit).count(name) > 1})
    if repeated:
        raise InputError(f"--inherit: {', '.join(repeated)} named more than once")
    for parameter in inherit:
        if parameter not in INHERITABLE:
            raise InputError(
                f"--inherit: {parameter!r} cannot come from the platform; "
                f"accepted: {', '.join(INHERITABLE)}"
            )
    unused = {n: why for n, why in _unused(data, kv_formats).items() if n not in held}
    names = [
        n
        for n in parameter_names(data, formats, kv_formats)
        if n not in unused and n not in held and n not in inherit
    ]
    weights = _weights(data)
    refused: dict[str, str] = {}
    capped: dict[str, str] = {}
    while True:
        result, jac, condition, problem = _solve(
            data, name, formats, held, names, weights, kv_formats
        )
        raw = _residuals(
            data,
            build_profile(
                name, {**held, **_to_values(result.x, names)}, formats, kv_formats=kv_formats
            ),
        )
        intervals = _intervals(result.x, jac, raw, weights, names)
        problem = problem or _unconstrained(intervals)
        if not problem:
            break
        flat = _flat_format_scale(problem)
        if flat is not None:  # held at its upper bound: the rows stay where they are
            held[flat] = BOUNDS["memory_efficiency_scale"][1]
            capped[flat] = (
                f"no row's prediction moves with it at the optimum (every row in "
                f"{flat.split('.')[0]} streams weights at the peak bandwidth, scale x memory "
                f"efficiency capped at 1, or is not memory-bound): held at its upper bound "
                f"{held[flat]:g}"
            )
            names.remove(flat)
            continue
        culprit = next((n for n in problem[0] if is_optional(n)), None)
        if culprit is not None:  # an optional term the rows cannot identify: left out
            refused[culprit] = problem[1]
            names.remove(culprit)
        elif check:
            raise InputError(problem[1])
        else:
            break
    values = {**held, **_to_values(result.x, names)}
    return Fit(
        profile=build_profile(name, values, formats, description, kv_formats),
        values=values,
        intervals=intervals,
        unused=unused,
        refused=refused,
        held=tuple(held),
        inherited=tuple(inherit),
        rows=len(data.rows),
        residuals=len(raw),
        condition=condition,
        success=bool(result.success),
        status=int(result.status),
        message=str(result.message),
        capped=capped,
    )
