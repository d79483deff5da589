"""Serving-stack costs fitted on published serving numbers, per stack version family.

Three things the serving simulator (`search.serving`) takes from a runtime profile are
stack or device facts that the profile's own fit (offline batch latencies) cannot see:

- **version family** (`stack_of`): the engine and release line of a serving row's
  ``runtime`` text (`FAMILIES`, each dated by the sources' own dates). A profile was
  fitted on its ``stack.version_family`` or, for the shipped profiles without one,
  the family its ``domain.runtime_versions`` names (`PROFILE_FAMILIES`,
  `profile_stack`). On a row of a later family (`newer`) the profile's per-sequence
  host cost (``sequence_overhead_s``, fitted on older releases: 0.13 ms per sequence
  per step for the 2024 vLLM runs) is not charged; the per-output-chunk cost fitted
  on serving rows is charged instead (the family's, else its engine's other lines',
  else 0: what a family no profile and no serving row covers gets). Device terms
  (efficiencies, per-step cost) are kept.
- **front-end costs** (`fit_costs`, `held_out_costs`): a per-request cost
  (``SchedulerConfig.request_overhead_s``: HTTP, tokenisation, hand-off) and a
  per-output-chunk cost (``SchedulerConfig.chunk_overhead_s``: detokenisation,
  streaming, per sequence in every step), fitted from the residuals of a simulation
  without them. The request cost is the median of ``measured - simulated`` TTFT (P50
  and mean) over served numbers (`served`: HTTP benchmark clients, not in-process
  harnesses such as ``trtllm-bench`` or one static batch, which it is not charged to
  either) at low load (at most `LOW_LOAD` requests in flight by Little's law, or a
  simulated queueing delay of at most `QUEUED` of the TTFT). The chunk cost is the
  median of ``(measured - simulated) TPOT / requests in flight`` over the TPOT numbers
  (P50 and mean) simulated with a calibrated profile (with ``ideal`` physics the
  residual is mostly the kernels' efficiency, not host time). Both are clipped at 0.
  Out of source: a source's costs come from the other sources of its family, else of
  its engine's other lines, else (the request cost only: the front end is much alike
  across engines, an output path is not) of every other source (`BASES`), the first
  with `MIN_ROWS` numbers of the kind; 0 where none has.
- **achievable GEMM rate per device** (`gemm_scale`): a calibrated profile's compute
  efficiency is one number for every device it was fitted on; the cited
  max-achievable-matmul fractions (``data/hardware/microbenchmarks.csv``,
  `calibration.device_priors`) say how each device differs from that mean, for the
  row's GEMM dtype. The scale is the device's cited fraction over the mean of the
  profile's fitted devices' (1 where either is not cited).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from genz import RuntimeProfile
from genz.fitting import PHASES, DeviceOverride
from roofline import InputError, Platform

from .device_priors import device_fractions, load_microbenchmarks, preset_fractions

#: (pattern on the row's runtime text, engine, version family, release order, evidence).
#: First match wins. A family is a release line whose host path changed; the order
#: (release year, with a fraction for a mid-year line) says which line is later.
FAMILIES: tuple[tuple[str, str, str, float, str], ...] = (
    (r"TensorRT-LLM v?1\.\d", "tensorrt-llm", "1.x", 2025.0, "perf-overview.md v1.0 (2025)"),
    (r"TensorRT-LLM v?0\.5\b", "tensorrt-llm", "0.5", 2023.0, "H200launch.md, release/0.5.0"),
    (r"TensorRT-LLM|NIM", "tensorrt-llm", "0.9-0.11", 2024.0, "0.9.0 runs 2024-05, r24.07"),
    (r"vLLM v?0\.[0-5]\b", "vllm", "0.4-0.5", 2024.0, "0.4.1 runs of 2024-05-04"),
    (r"vLLM v?0\.6\b", "vllm", "0.6", 2024.5, "v0.6.0 post 2024-09-05: CPU overheads cut"),
    (r"vLLM", "vllm", "V1 (0.7+)", 2025.0, "vLLM 0.7 and later: the V1 engine"),
    (r"SGLang", "sglang", "0.3", 2024.5, "SGLang 0.3.0 (vLLM v0.6.0 post, 2024-09)"),
    (r"LMDeploy v?0\.[0-3]\b", "lmdeploy", "0.1-0.3", 2023.9, "v0.1.0a1 2023-12, v0.2.0 2024-01"),
    (r"LMDeploy", "lmdeploy", "0.4-0.6", 2024.0, "0.4.0 runs 2024-05; v0.6.0a0 2024-09"),
    (r"MLC", "mlc", "2024", 2024.0, "runs of 2024-05"),
)
#: Shipped profile -> (engine, family, order) it was fitted on, from its
#: ``domain.runtime_versions`` ("2024 releases of each framework (vLLM 0.4-0.5 era)").
PROFILE_FAMILIES: dict[str, tuple[str, str, float]] = {
    "vllm": ("vllm", "0.4-0.5", 2024.0),
    "tensorrt-llm": ("tensorrt-llm", "0.9-0.11", 2024.0),
}
#: Requests in flight (simulated, Little's law) at or below which TTFT has little queueing.
LOW_LOAD = 2.0
#: Or: the simulated mean queueing delay is at most this share of the mean TTFT.
QUEUED = 0.1
#: Fewest numbers of a kind (TTFT at low load, TPOT) a basis needs to fit that cost.
MIN_ROWS = 5
#: Fallback order of the rows a source's costs are fitted on.
BASES = ("family", "engine", "every other source")


@dataclass(frozen=True)
class Stack:
    """A serving row's engine, version family and the family's release order."""

    engine: str
    family: str
    order: float = 0.0

    def __str__(self) -> str:
        return f"{self.engine} {self.family}"


@dataclass(frozen=True)
class Residual:
    """One measured serving number against its simulation without front-end costs:
    ``metric`` ``ttft`` or ``tpot``, ``diff_s`` = measured - simulated, seconds;
    ``in_flight``: simulated requests in the engine (throughput x mean E2E);
    ``queued``: simulated mean queueing delay over mean TTFT (NaN: not known);
    ``profiled``: simulated with a calibrated runtime profile (not ``ideal``)."""

    source: str
    stack: Stack
    metric: str
    diff_s: float
    in_flight: float
    queued: float = float("nan")
    profiled: bool = True

    @property
    def low_load(self) -> bool:
        """At most `LOW_LOAD` requests in flight, or queueing at most `QUEUED` of TTFT."""
        return self.in_flight <= LOW_LOAD or self.queued <= QUEUED


@dataclass(frozen=True)
class FrontEndCosts:
    """Per-request and per-output-chunk costs, seconds, and what they were fitted on."""

    request_s: float
    chunk_s: float
    basis: str
    ttft_rows: int
    tpot_rows: int


def stack_of(runtime: str) -> Stack:
    """The engine and version family of a row's ``runtime`` text (`FAMILIES`)."""
    for pattern, engine, family, order, _ in FAMILIES:
        if re.search(pattern, runtime):
            return Stack(engine, family, order)
    raise InputError(f"runtime {runtime!r}: no version family matches (calibration.FAMILIES)")


def profile_stack(profile: RuntimeProfile) -> Stack | None:
    """The stack a profile was fitted on: its ``stack`` (release order = the leading
    year of ``version_family``), else `PROFILE_FAMILIES`; None: unknown."""
    if profile.stack is not None:
        year = re.match(r"\d{4}", profile.stack.version_family)
        order = float(year.group()) if year else 0.0
        return Stack(profile.stack.runtime, profile.stack.version_family, order)
    found = PROFILE_FAMILIES.get(profile.name)
    return None if found is None else Stack(*found)


def newer(profile: RuntimeProfile, stack: Stack) -> bool:
    """Whether the row's version family is a later release line than the profile's
    (False where the profile's is unknown). Only then are the profile's per-sequence
    host costs dropped: engines' host costs fell release by release, and an older row
    keeps them (the TensorRT-LLM 0.5 rows of 2023 score worse without them)."""
    fitted = profile_stack(profile)
    return fitted is not None and fitted.order > 0 and stack.order > fitted.order


#: In-process harnesses: no HTTP front end between the client and the engine.
IN_PROCESS = re.compile(r"trtllm-bench|static batch|in-process")


def served(runtime: str, scenario: str) -> bool:
    """Whether a row's requests go through a served front end (HTTP server,
    tokeniser): not one static batch, not an in-process harness (`IN_PROCESS`:
    ``trtllm-bench``, LMDeploy's in-process ``profile_throughput.py`` client)."""
    return scenario != "static" and not IN_PROCESS.search(runtime)


def fit_costs(residuals: Sequence[Residual]) -> tuple[float, float, int, int]:
    """Request and chunk cost (s, clipped at 0) and the TTFT / TPOT rows behind each
    (module docstring); 0 where no row of the kind is given."""
    ttft = [r.diff_s for r in residuals if r.metric == "ttft" and r.low_load]
    tpot = [
        r.diff_s / max(r.in_flight, 1.0) for r in residuals if r.metric == "tpot" and r.profiled
    ]
    request = max(float(np.median(ttft)), 0.0) if ttft else 0.0
    chunk = max(float(np.median(tpot)), 0.0) if tpot else 0.0
    return request, chunk, len(ttft), len(tpot)


def held_out_costs(
    residuals: Sequence[Residual], source: str, stack: Stack, chunk_bases: int = 2
) -> FrontEndCosts:
    """A source's costs fitted without its own rows, each on the first basis with at
    least `MIN_ROWS` numbers of its kind: the request cost (the front end: HTTP
    server, tokeniser, much alike across engines) on the other sources of its family,
    else of its engine, else on every other source (`BASES`); the chunk cost (the
    engine's own output path) on its family, else on its engine's other lines
    (``chunk_bases=1``: its family only). 0 where none has."""
    if chunk_bases not in (1, 2):
        raise InputError(f"chunk_bases must be 1 (family) or 2 (else engine), got {chunk_bases}")
    others = [r for r in residuals if r.source != source]
    pools = (
        [r for r in others if r.stack == stack],
        [r for r in others if r.stack.engine == stack.engine],
        others,
    )
    request = chunk = None
    counts = [0, 0]
    bases = ["", ""]
    for name, pool in zip(BASES, pools, strict=True):
        r, c, n_ttft, n_tpot = fit_costs(pool)
        if request is None and n_ttft >= MIN_ROWS:
            request, counts[0], bases[0] = r, n_ttft, name
        if chunk is None and n_tpot >= MIN_ROWS and name in BASES[:chunk_bases]:
            chunk, counts[1], bases[1] = c, n_tpot, name
    basis = f"request: {bases[0] or 'none'}, chunk: {bases[1] or 'none'}"
    return FrontEndCosts(request or 0.0, chunk or 0.0, basis, counts[0], counts[1])


@cache
def _fractions() -> dict[str, tuple[float | None, float | None]]:
    """Preset -> cited (16-bit, fp8) GEMM fraction of peak (`calibration.device_priors`;
    fp8 falls back to the 16-bit one where only that is cited)."""
    fractions = device_fractions(load_microbenchmarks())
    return {hw: preset_fractions(hw, fractions)[:2] for hw in fractions}


def gemm_scale(profile: RuntimeProfile, hardware: str, activation_bits: float) -> float:
    """The device's cited achievable GEMM fraction for the row's GEMM dtype (FP8 at 8
    or fewer activation bits where cited, so FP4 rows take the FP8 fraction: no FP4
    one is cited; else 16-bit) over the mean of the profile's fitted hardware
    (``domain.hardware``); 1 where the device, or every fitted one, is uncited."""
    which = 1 if activation_bits <= 8.5 else 0
    fitted = profile.domain.hardware if profile.domain is not None else ()
    own = _fraction(hardware, which)
    reference = [f for f in (_fraction(hw, which) for hw in fitted) if f is not None]
    if own is None or not reference:
        return 1.0
    return own / float(np.mean(reference))


def _fraction(hardware: str, which: int) -> float | None:
    found = _fractions().get(hardware)
    return None if found is None else found[which]


def adapt_profile(
    profile: RuntimeProfile,
    platform: Platform,
    compute_scale: float = 1.0,
    sequence_overhead_s: float | None = None,
) -> RuntimeProfile:
    """``profile`` with a ``devices`` entry for ``platform``: both phases' compute
    efficiency times ``compute_scale`` (capped at 1) and, where given, their
    per-sequence cost replaced; the preset's other values (launch cost, formats) kept."""
    if compute_scale == 1.0 and sequence_overhead_s is None:
        return profile
    on = profile.on_platform(platform)
    phases = {}
    for name in PHASES:
        phase = on.phase(name, platform)
        efficiency = min((phase.compute_efficiency or 0.0) * compute_scale, 1.0)
        phases[name] = dataclasses.replace(
            phase,
            compute_efficiency=efficiency,
            sequence_overhead_s=phase.sequence_overhead_s
            if sequence_overhead_s is None
            else sequence_overhead_s,
        )
    old = profile.devices.get(platform.name)
    device = DeviceOverride(phases) if old is None else dataclasses.replace(old, phases=phases)
    return dataclasses.replace(profile, devices={**profile.devices, platform.name: device})


def family_table(residuals: Iterable[Residual]) -> dict[Stack, FrontEndCosts]:
    """Every family's costs fitted on all its sources (in sample; for reporting)."""
    by_stack: dict[Stack, list[Residual]] = {}
    for r in residuals:
        by_stack.setdefault(r.stack, []).append(r)
    table = {}
    for stack, rows in sorted(by_stack.items(), key=lambda kv: str(kv[0])):
        request, chunk, n_ttft, n_tpot = fit_costs(rows)
        table[stack] = FrontEndCosts(request, chunk, "family, in sample", n_ttft, n_tpot)
    return table
