"""The design of the transferable model: each stored row costed once, with its groups.

`build_terms` decomposes every row at efficiency 1 (`calibration.rows.decompose`, per
runtime with the runtime's weight and KV formats), counts the kernels each pass launches
(operators that take time, times their layer count: the costing's own rule for kernel
overhead, `genz.costing.cost_pass`), computes the physics-only (``ideal``) prediction,
and indexes each row's device, device class, runtime, stack (runtime x harness), source
and weight-format bucket, so `calibration.transfer` can fit and predict with array
operations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from genz import load_model
from genz.fitting import Array, evaluate
from roofline import InputError, data_dir, load_platform

from .calibrate import load_formats, load_kv_formats
from .device_priors import device_fractions, load_microbenchmarks, row_priors
from .measurements import Measurement
from .rows import CalibrationRows, decompose, row_inputs
from .store import StoredRow
from .transfer_graphs import decode_graphs

#: Weight-format buckets by nominal bits: 16-bit (no factor), 8-bit, 4-6-bit, other.
FORMAT_BUCKETS = ("16", "8", "4", "other")
#: Harnesses that time the passes alone (llama-bench's ``ppN`` / ``tgN`` rates, its
#: combined ``-pg`` test): no per-request cost is part of what they report.
PASS_TIMED_HARNESSES = ("llama-bench", "llama-bench-pg")
#: Where the device terms' prior means come from: the presets' efficiencies, or the
#: published microbenchmarks of `calibration.device_priors` where cited.
DEVICE_PRIORS = ("preset", "microbenchmarks")
#: How the stack terms are structured. ``runtime`` (the default, what the shipped
#: profiles and docs/accuracy.md's figures come from): stacks shrunk towards a runtime
#: level, no weight-format factor on compute, a per-request cost on every row.
#: ``harness`` (issue 20 part B, opt-in: it loses to physics on TTFT out of source): stacks
#: shrunk towards a runtime plus a harness level, a weight-format factor on compute, no
#: per-request cost on `PASS_TIMED_HARNESSES` rows, tighter runtime-level priors
#: (`calibration.transfer.HARNESS_PRIORS`).
STACKS = ("runtime", "harness")
#: ``DEVICE_PRIORS/STACKS`` of the library's default model.
DEFAULT_VARIANT = "preset/runtime"


def parse_variant(text: str) -> tuple[str, str]:
    """``DEVICE_PRIORS/STACKS`` (e.g. ``microbenchmarks/harness``) -> the pair; anything
    else is an `InputError` naming the accepted values."""
    device_priors, _, stacks = text.strip().partition("/")
    if device_priors not in DEVICE_PRIORS or stacks not in STACKS:
        raise InputError(
            f"--variant: {text!r} is not DEVICE_PRIORS/STACKS with DEVICE_PRIORS one of "
            f"{', '.join(DEVICE_PRIORS)} and STACKS one of {', '.join(STACKS)}"
        )
    return device_priors, stacks


def stack_key(item: StoredRow) -> str:
    """``runtime|harness|year``: the unit of stack terms (a release year stands for the
    version family where a source states none)."""
    return f"{item.row.runtime}|{item.info.harness}|{item.info.date[:4] or 'undated'}"


def format_bucket(bits: float) -> str:
    """The bucket of a row's nominal weight bits."""
    if bits >= 15.5:
        return "16"
    if 7.5 <= bits <= 8.6:
        return "8"
    if 3.5 <= bits <= 6.7:
        return "4"
    return "other"


@dataclass(frozen=True)
class Levels:
    """Category of every row (index into ``names``)."""

    names: tuple[str, ...]
    index: Array

    @classmethod
    def of(cls, labels: Sequence[str]) -> Levels:
        names = tuple(sorted(set(labels)))
        lookup = {name: i for i, name in enumerate(names)}
        return cls(names, np.array([lookup[label] for label in labels], int))


@dataclass(frozen=True)
class TransferTerms:
    """Every row decomposed (per runtime, concatenated in row order) and indexed.

    ``parts`` are ``(row indices, CalibrationRows)`` per runtime; ``kernels_prefill`` /
    ``kernels_decode`` the kernel launches of one prefill / decode pass per row;
    ``ideal`` the physics-only TTFT, ITL and batch latency (seconds, the platform
    presets' efficiencies and kernel overheads); ``measured`` the measured ones (NaN
    where absent); ``prior_compute`` / ``prior_memory`` the device terms' prior means
    (the presets' efficiencies, or cited microbenchmark fractions: ``cited_compute`` /
    ``cited_memory`` say where; ``device_priors`` which of `DEVICE_PRIORS`);
    ``harness`` the harness of every row; ``stacks`` one of `STACKS`; ``graphs`` whether
    the row's decode steps replay as CUDA graphs (`calibration.transfer_graphs`; all
    false, the default model without the graph term, unless `with_graphs` ``True``);
    ``step_cost`` whether the model has a per-step cost ``tau`` per stack
    (`with_step_cost`; off in the default model); ``sublinear`` whether the
    per-sequence cost of a step of ``S`` sequences is ``sigma x S ** theta`` with
    ``theta`` fitted (`with_sublinear`; off: ``theta = 1``, the default model);
    ``theta_harness`` whether ``theta`` has a harness level between the global and the
    runtime one and ``theta_capped`` whether it is capped at 1 (both opt-in variants of
    the sublinear term, `with_sublinear`).
    """

    stored: tuple[StoredRow, ...]
    parts: tuple[tuple[Array, CalibrationRows], ...]
    kernels_prefill: Array
    kernels_decode: Array
    ideal: dict[str, Array]
    measured: dict[str, Array]
    prior_compute: Array
    prior_memory: Array
    device: Levels
    device_class: Levels
    runtime: Levels
    stack: Levels
    source: Levels
    source_runtime: Levels
    class_runtime: Levels
    fmt: Levels
    harness: Levels = field(default_factory=lambda: Levels((), np.zeros(0, int)))
    cited_compute: Array = field(default_factory=lambda: np.zeros(0, bool))
    cited_memory: Array = field(default_factory=lambda: np.zeros(0, bool))
    stacks: str = "runtime"
    device_priors: str = "preset"
    graphs: Array = field(default_factory=lambda: np.zeros(0, bool))
    step_cost: bool = False
    sublinear: bool = False
    theta_harness: bool = False
    theta_capped: bool = False

    def __len__(self) -> int:
        return len(self.stored)

    @cached_property
    def request_cost_applies(self) -> Array:
        """Per row, whether its time includes a per-request cost: every row under
        ``stacks="runtime"``; under ``"harness"`` not for `PASS_TIMED_HARNESSES`."""
        if self.stacks == "runtime":
            return np.ones(len(self.stored), bool)
        return np.array(
            [item.info.harness not in PASS_TIMED_HARNESSES for item in self.stored], bool
        )

    @cached_property
    def output_tokens(self) -> Array:
        """Generated tokens of every row (read once: the fit predicts thousands of times)."""
        return np.array([item.row.output_tokens for item in self.stored], float)


def build_terms(
    stored: Sequence[StoredRow],
    device_priors: str = "preset",
    stacks: str = "runtime",
    graphs: bool = False,
) -> TransferTerms:
    """Decompose and index ``stored`` (see the module docstring); ``device_priors`` is
    one of `DEVICE_PRIORS` (`with_device_priors`), ``stacks`` one of `STACKS`
    (`with_stacks`); ``graphs`` turns on the opt-in CUDA-graph attribute (`with_graphs`;
    off in the default model: genz profiles cannot carry it, docs/accuracy.md)."""
    rows = [item.row for item in stored]
    n = len(rows)
    by_runtime: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_runtime.setdefault(row.runtime, []).append(i)
    parts = []
    for runtime, indices in sorted(by_runtime.items()):
        formats, kv_formats = _runtime_formats(runtime)
        decomposed = decompose([rows[i] for i in indices], formats, kv_formats)
        parts.append((np.array(indices, int), decomposed))
    physics = physics_times(rows)
    ideal = {name: physics[name] for name in ("ttft_s", "itl_s", "batch_latency_s")}
    measured = {name: np.full(n, np.nan) for name in ideal}
    for positions, decomposed in parts:
        for name in measured:
            measured[name][positions] = decomposed.measured[name]
    terms = TransferTerms(
        stored=tuple(stored),
        parts=tuple(parts),
        kernels_prefill=physics["kernels_prefill"],
        kernels_decode=physics["kernels_decode"],
        ideal=ideal,
        measured=measured,
        prior_compute=physics["preset_compute"],
        prior_memory=physics["preset_memory"],
        device=Levels.of([row.hw for row in rows]),
        device_class=Levels.of([str(kind) for kind in physics["device_class"]]),
        runtime=Levels.of([row.runtime for row in rows]),
        stack=Levels.of([stack_key(item) for item in stored]),
        source=Levels.of([item.info.source_id for item in stored]),
        source_runtime=Levels.of([f"{item.info.source_id}|{item.row.runtime}" for item in stored]),
        class_runtime=Levels.of([f"{row.hw}|{row.runtime}" for row in rows]),
        fmt=Levels.of([f"{row.runtime}|{format_bucket(row.weight_bits)}" for row in rows]),
        harness=Levels.of([item.info.harness for item in stored]),
        cited_compute=np.zeros(n, bool),
        cited_memory=np.zeros(n, bool),
        graphs=np.zeros(n, bool),
    )
    return with_graphs(with_stacks(with_device_priors(terms, device_priors), stacks), graphs)


def with_graphs(terms: TransferTerms, graphs: bool) -> TransferTerms:
    """``terms`` with the CUDA-graph attribute of every row (`calibration.transfer_graphs`),
    or with none (``graphs=False``: every decode pass charged the eager launch cost)."""
    if not graphs:
        return dataclasses.replace(terms, graphs=np.zeros(len(terms.stored), bool))
    kinds = [terms.device_class.names[k] for k in terms.device_class.index]
    return dataclasses.replace(terms, graphs=decode_graphs(terms.stored, kinds))


def with_step_cost(terms: TransferTerms, step_cost: bool) -> TransferTerms:
    """``terms`` with (or without) the per-step cost ``tau`` of each stack
    (`calibration.transfer`: a cost per forward step whatever its batch, beside the
    per-sequence cost ``sigma``)."""
    return dataclasses.replace(terms, step_cost=bool(step_cost))


def with_sublinear(
    terms: TransferTerms, sublinear: bool, harness: bool = False, capped: bool = False
) -> TransferTerms:
    """``terms`` with (or without) the fitted exponent ``theta`` of the per-sequence cost
    (`calibration.transfer`: a step of ``S`` sequences pays ``sigma x S ** theta``; the
    host work per sequence that a scheduler vectorises grows less than linearly).
    ``harness``: ``theta`` has a harness level (a held-out source of a known harness gets
    that harness's exponent); ``capped``: ``theta <= 1`` (a per-sequence host cost does
    not grow faster than its sequences). Both need ``sublinear``."""
    if (harness or capped) and not sublinear:
        raise ValueError("the harness level and the cap of theta need sublinear=True")
    return dataclasses.replace(
        terms, sublinear=bool(sublinear), theta_harness=bool(harness), theta_capped=bool(capped)
    )


def with_stacks(terms: TransferTerms, stacks: str) -> TransferTerms:
    """``terms`` with the stack structure ``stacks`` (one of `STACKS`)."""
    if stacks not in STACKS:
        raise ValueError(f"stacks must be one of {', '.join(STACKS)}")
    return dataclasses.replace(terms, stacks=stacks)


def with_device_priors(terms: TransferTerms, device_priors: str) -> TransferTerms:
    """``terms`` with the device terms' prior means from ``device_priors`` (one of
    `DEVICE_PRIORS`): the presets' efficiencies, or cited microbenchmark fractions."""
    if device_priors not in DEVICE_PRIORS:
        raise ValueError(f"device_priors must be one of {', '.join(DEVICE_PRIORS)}")
    rows = [item.row for item in terms.stored]
    platforms = {hw: load_platform(hw) for hw in {row.hw for row in rows}}
    compute = np.array([platforms[row.hw].efficiency.compute for row in rows], float)
    memory = np.array([platforms[row.hw].efficiency.memory for row in rows], float)
    cited_c, cited_m = np.zeros(len(rows), bool), np.zeros(len(rows), bool)
    if device_priors == "microbenchmarks":
        fractions = device_fractions(load_microbenchmarks())
        compute, memory, cited_c, cited_m = row_priors(rows, compute, memory, fractions)
    return dataclasses.replace(
        terms,
        prior_compute=compute,
        prior_memory=memory,
        cited_compute=cited_c,
        cited_memory=cited_m,
        device_priors=device_priors,
    )


def physics_times(rows: Sequence[Measurement]) -> dict[str, Array]:
    """Per row, the physics-only (``ideal``) TTFT, ITL and batch latency (s), the kernels
    one prefill and one decode pass launch, the preset's efficiencies and device class."""
    n = len(rows)
    out = {
        name: np.zeros(n)
        for name in (
            "ttft_s",
            "itl_s",
            "kernels_prefill",
            "kernels_decode",
            "preset_compute",
            "preset_memory",
        )
    }
    out["device_class"] = np.empty(n, dtype=object)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault((row.model, row.hw), []).append(i)
    for (model_name, hw), indices in groups.items():
        platform, model = load_platform(hw), load_model(model_name)
        inputs = row_inputs([rows[i] for i in indices])
        physics = evaluate(model, platform, inputs)
        counting = evaluate(model, dataclasses.replace(platform, kernel_overhead_s=1.0), inputs)
        out["ttft_s"][indices] = physics.ttft_s
        out["itl_s"][indices] = physics.tpot_s
        out["kernels_prefill"][indices] = counting.prefill.overhead_s.sum(axis=0)
        out["kernels_decode"][indices] = counting.decode.overhead_s.sum(axis=0)
        out["preset_compute"][indices] = platform.efficiency.compute
        out["preset_memory"][indices] = platform.efficiency.memory
        out["device_class"][indices] = platform.device_class
    outputs = np.array([row.output_tokens for row in rows], float)
    out["batch_latency_s"] = out["ttft_s"] + (outputs - 1) * out["itl_s"]
    return out


def _runtime_formats(runtime: str) -> tuple[tuple, tuple]:
    """The runtime's weight and KV formats from ``data/runtime_formats`` (none if absent)."""
    path = data_dir() / "runtime_formats" / f"{runtime}.yaml"
    if not path.is_file():
        return (), ()
    return load_formats(path)[0], load_kv_formats(path)[0]
