"""Service-level objectives and how a prediction fares against them.

Every requirement search judges a platform by the same checks: TTFT and TPOT
ceilings, a throughput floor (output tokens per second over all replicas) and,
always, the capacity wall (per-device footprint within main memory).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from genz import Prediction
from roofline import Bound, require_positive

SLO_NAMES = ("ttft", "tpot", "throughput", "capacity")


@dataclass(frozen=True)
class ServiceLevel:
    """Objectives a deployment must meet; None leaves one unconstrained.

    ``max_ttft_s`` and ``max_tpot_s`` in seconds; ``min_throughput_tokens_per_s``
    counts generated tokens per second over every replica. The concurrency
    level is the scenario's ``batch`` (concurrent requests per replica).
    """

    max_ttft_s: float | None = None
    max_tpot_s: float | None = None
    min_throughput_tokens_per_s: float | None = None

    def __post_init__(self) -> None:
        for label in ("max_ttft_s", "max_tpot_s", "min_throughput_tokens_per_s"):
            value = getattr(self, label)
            if value is not None:
                require_positive(label, value)

    def describe(self) -> str:
        """``'TTFT <= 2 s, TPOT <= 30 ms'``-style summary."""
        parts = []
        if self.max_ttft_s is not None:
            parts.append(f"TTFT <= {format_seconds(self.max_ttft_s)}")
        if self.max_tpot_s is not None:
            parts.append(f"TPOT <= {format_seconds(self.max_tpot_s)}")
        if self.min_throughput_tokens_per_s is not None:
            parts.append(f"throughput >= {self.min_throughput_tokens_per_s:.4g} tok/s")
        return ", ".join(parts) or "none given (only the capacity wall is checked)"


@dataclass(frozen=True)
class SloCheck:
    """One objective at one platform: ``ratio`` > 1 means violated by that factor.

    ``ratio`` is value / limit for ceilings (TTFT, TPOT, footprint) and
    limit / value for the throughput floor.
    """

    name: str
    value: float
    limit: float
    ok: bool
    ratio: float

    def to_dict(self) -> dict[str, object]:
        """Plain values (JSON-ready)."""
        return asdict(self)

    def describe(self) -> str:
        """``'TTFT 2.54 s > 2 s'``-style text."""
        if self.name == "throughput":
            sign = ">=" if self.ok else "<"
            return f"throughput {self.value:.4g} {sign} {self.limit:.4g} tok/s"
        if self.name == "capacity":
            sign = "<=" if self.ok else ">"
            return (
                f"footprint {format_bytes(self.value)} {sign} {format_bytes(self.limit)} per device"
            )
        sign = "<=" if self.ok else ">"
        return (
            f"{self.name.upper()} {format_seconds(self.value)} {sign} {format_seconds(self.limit)}"
        )


def format_seconds(value: float) -> str:
    """Seconds as s or ms (4 significant digits)."""
    return f"{value:.4g} s" if value >= 1 else f"{value * 1e3:.4g} ms"


def format_bytes(value: float) -> str:
    """Decimal GB or TB (4 significant digits)."""
    return f"{value / 1e12:.4g} TB" if value >= 1e12 else f"{value / 1e9:.4g} GB"


def _ceiling(name: str, value: float, limit: float) -> SloCheck:
    return SloCheck(name, value, limit, value <= limit, value / limit)


def check_slo(prediction: Prediction, slo: ServiceLevel) -> tuple[SloCheck, ...]:
    """Every objective of ``slo`` plus the capacity wall, at ``prediction``."""
    checks = []
    if slo.max_ttft_s is not None:
        checks.append(_ceiling("ttft", prediction.ttft_s, slo.max_ttft_s))
    if slo.max_tpot_s is not None:
        checks.append(_ceiling("tpot", prediction.tpot_s, slo.max_tpot_s))
    if slo.min_throughput_tokens_per_s is not None:
        value = prediction.throughput_tokens_per_s
        limit = slo.min_throughput_tokens_per_s
        checks.append(SloCheck("throughput", value, limit, value >= limit, limit / value))
    checks.append(
        _ceiling("capacity", prediction.footprint.total_bytes, prediction.capacity.capacity_bytes)
    )
    return tuple(checks)


def worst(checks: tuple[SloCheck, ...]) -> SloCheck:
    """The most violated check (or, when all pass, the one with least slack)."""
    return max(checks, key=lambda check: check.ratio)


def phase_bound(prediction: Prediction, slo_name: str) -> Bound:
    """The bound of the phase that sets ``slo_name`` (capacity: the capacity wall)."""
    if slo_name == "capacity":
        return Bound.CAPACITY
    if slo_name == "ttft":
        return prediction.prefill.bound
    if slo_name == "tpot":
        return prediction.decode.bound
    return (
        prediction.prefill.bound
        if prediction.ttft_s >= prediction.decode_s
        else prediction.decode.bound
    )


def binding_of(checks: tuple[SloCheck, ...], prediction: Prediction) -> tuple[str, Bound]:
    """(binding SLO, binding resource): the worst of ``checks``, bounded as in ``prediction``.

    Pass the checks just below the answer (where the binding SLO fails) and the
    prediction at the answer (which fits, so its phase bounds are roofline bounds).
    """
    name = worst(checks).name
    return name, phase_bound(prediction, name)


def describe_checks(checks: tuple[SloCheck, ...]) -> str:
    """All checks as one line."""
    return ", ".join(check.describe() for check in checks)
