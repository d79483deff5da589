"""Request streams for the serving simulator: arrivals, lengths, shared prefixes.

- Arrivals: Poisson (exponential gaps at ``rate``), gamma gaps with a coefficient of
  variation ``cv`` (``cv = 1`` is Poisson; ``cv > 1`` bursty, as measured production
  traces are), or the timestamps of a trace CSV.
- Lengths: lognormal prompt and output lengths with a stated mean and CV (the mean from
  a use-case preset, `genz.load_use_cases`; ``cv = 0`` gives the preset's fixed shape),
  a lognormal fitted to a trace's lengths, or the trace's own lengths; ShareGPT-like
  pairs (`sharegpt_lengths`: lognormal of given means under the benchmark scripts'
  length filter).
- Shared prefixes: a share ``prefix_hit_rate`` of requests re-send the same
  ``prefix_tokens``-token prefix (system prompt, agent context) that the engine keeps
  cached once: those requests compute and store only their other tokens.

A seed fixes every draw.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from genz import use_case
from roofline import InputError, read_user_text, require_non_negative, require_positive

#: Largest trace file read, bytes (about 10^6 rows).
MAX_TRACE_BYTES = 64_000_000
#: Largest prompt or output length drawn, tokens.
MAX_LENGTH = 1_000_000
TRACE_COLUMNS = ("arrival_s", "input_tokens", "output_tokens")

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]


@dataclass(frozen=True)
class Workload:
    """Requests sorted by arrival: times (s), prompt and output tokens, and the cached
    prefix tokens of each (0 on a miss). ``source`` says how it was made."""

    arrival_s: Floats
    input_tokens: Ints
    output_tokens: Ints
    cached_tokens: Ints
    source: str

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def duration_s(self) -> float:
        """Time of the last arrival, seconds."""
        return float(self.arrival_s[-1]) if len(self) else 0.0

    def thinned(self, replicas: int, index: int = 0) -> Workload:
        """The requests one of ``replicas`` replicas receives under round-robin routing."""
        part = slice(index, None, replicas)
        return Workload(
            self.arrival_s[part],
            self.input_tokens[part],
            self.output_tokens[part],
            self.cached_tokens[part],
            f"{self.source}, replica {index + 1} of {replicas} (round-robin)",
        )


def arrival_times(
    rate: float, duration_s: float, rng: np.random.Generator, cv: float = 1.0
) -> Floats:
    """Arrival times in ``[0, duration_s)`` of a renewal process of mean ``rate``
    (requests/s) whose gaps are gamma with coefficient of variation ``cv``."""
    require_positive("rate", rate)
    require_positive("duration_s", duration_s)
    require_positive("cv", cv)
    expected = rate * duration_s
    if expected > 5e7:
        raise InputError(f"rate x duration must be at most 5e7 requests, got {expected:g}")
    shape = 1.0 / cv**2
    count = int(expected + 6 * np.sqrt(expected) * max(cv, 1.0) + 16)
    gaps = rng.gamma(shape, 1.0 / (rate * shape), size=count)
    times = np.cumsum(gaps) - gaps[0]
    while times[-1] < duration_s:  # rare: the draw fell short of the window
        more = rng.gamma(shape, 1.0 / (rate * shape), size=count)
        times = np.concatenate([times, times[-1] + np.cumsum(more)])
    return times[times < duration_s]


def lognormal_lengths(mean: float, cv: float, size: int, rng: np.random.Generator) -> Ints:
    """Token counts with the given mean and coefficient of variation (lognormal,
    rounded, at least 1); ``cv = 0`` repeats the mean."""
    require_positive("mean length", mean)
    require_non_negative("length cv", cv)
    if cv == 0:
        return np.full(size, max(round(mean), 1), dtype=np.int64)
    sigma2 = np.log1p(cv**2)
    draws = rng.lognormal(np.log(mean) - sigma2 / 2, np.sqrt(sigma2), size=size)
    return np.clip(np.rint(draws), 1, MAX_LENGTH).astype(np.int64)


#: Length filter of the ShareGPT sampler in vLLM's and SGLang's serving benchmarks
#: (``sample_sharegpt_requests`` in vllm-project/vllm ``benchmarks/benchmark_serving.py``,
#: copied by ``sglang.bench_serving``): prompt and output at least 4 tokens, prompt at
#: most 1024, prompt + output at most 2048.
SHAREGPT_FILTER = (4, 1024, 2048)


def sharegpt_lengths(
    mean_input: float, mean_output: float, cv: float, size: int, rng: np.random.Generator
) -> tuple[Ints, Ints]:
    """Prompt and output lengths of ``size`` ShareGPT-like requests: independent
    lognormal draws of the stated means and coefficient of variation, kept when they
    pass `SHAREGPT_FILTER` (so the kept means are slightly below the stated ones)."""
    shortest, longest_prompt, longest_pair = SHAREGPT_FILTER
    inputs: list[Ints] = []
    outputs: list[Ints] = []
    kept = 0
    while kept < size:
        n_in = lognormal_lengths(mean_input, cv, 2 * size, rng)
        n_out = lognormal_lengths(mean_output, cv, 2 * size, rng)
        ok = (
            (n_in >= shortest)
            & (n_out >= shortest)
            & (n_in <= longest_prompt)
            & (n_in + n_out <= longest_pair)
        )
        if not ok.any():
            raise InputError(
                f"sharegpt lengths: means {mean_input:g}/{mean_output:g} with cv {cv:g} "
                f"leave no request within the filter {SHAREGPT_FILTER}"
            )
        inputs.append(n_in[ok])
        outputs.append(n_out[ok])
        kept += int(ok.sum())
    return np.concatenate(inputs)[:size], np.concatenate(outputs)[:size]


def _prefixes(
    inputs: Ints, hit_rate: float, prefix_tokens: int, rng: np.random.Generator
) -> tuple[Ints, Ints]:
    """Prompts with the shared prefix on a hit (a hit's prompt is at least the prefix
    plus one token) and the cached tokens of each request."""
    if not 0 <= hit_rate <= 1:
        raise InputError(f"prefix_hit_rate must be in [0, 1], got {hit_rate!r}")
    if prefix_tokens < 0:
        raise InputError(f"prefix_tokens must be >= 0, got {prefix_tokens!r}")
    if hit_rate == 0 or prefix_tokens == 0:
        return inputs, np.zeros_like(inputs)
    hits = rng.random(len(inputs)) < hit_rate
    prompts = np.where(hits, np.maximum(inputs, prefix_tokens + 1), inputs)
    return prompts, np.where(hits, prefix_tokens, 0).astype(np.int64)


def synthetic_workload(
    rate: float,
    duration_s: float,
    *,
    use_case_name: str = "chat",
    input_tokens: float | None = None,
    output_tokens: float | None = None,
    length_cv: float = 0.5,
    arrival_cv: float = 1.0,
    prefix_hit_rate: float = 0.0,
    prefix_tokens: int = 0,
    seed: int = 0,
) -> Workload:
    """Requests over ``duration_s`` seconds at ``rate`` requests/s.

    Mean lengths come from the use case unless ``input_tokens`` / ``output_tokens``
    are given; ``length_cv`` is the spread of both (lognormal).
    """
    rng = np.random.default_rng(seed)
    case = use_case(use_case_name)
    arrivals = arrival_times(rate, duration_s, rng, arrival_cv)
    inputs = lognormal_lengths(input_tokens or case.input_tokens, length_cv, len(arrivals), rng)
    outputs = lognormal_lengths(output_tokens or case.output_tokens, length_cv, len(arrivals), rng)
    prompts, cached = _prefixes(inputs, prefix_hit_rate, prefix_tokens, rng)
    kind = "Poisson" if arrival_cv == 1 else f"gamma (cv {arrival_cv:g})"
    return Workload(
        arrivals,
        prompts,
        outputs,
        cached,
        f"{kind} arrivals at {rate:g}/s for {duration_s:g} s; {use_case_name} lengths "
        f"(lognormal, cv {length_cv:g}); seed {seed}",
    )


def load_trace(path: str | Path) -> Workload:
    """A trace CSV with columns ``arrival_s, input_tokens, output_tokens`` (more
    columns are ignored; ``cached_tokens`` is read when present), sorted by time."""
    source, text = read_user_text(path, kind="trace CSV", max_bytes=MAX_TRACE_BYTES)
    reader = csv.reader(io.StringIO(text))
    header = [name.strip() for name in next(reader, [])]
    missing = [name for name in TRACE_COLUMNS if name not in header]
    if missing:
        raise InputError(
            f"{source}: line 1: missing column {missing[0]!r}; needs {', '.join(TRACE_COLUMNS)}"
        )
    columns = [header.index(name) for name in TRACE_COLUMNS]
    cached_at = header.index("cached_tokens") if "cached_tokens" in header else None
    times, inputs, outputs, cached = [], [], [], []
    last = 0.0
    for line, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        try:
            t = float(row[columns[0]])
            n_in, n_out = int(row[columns[1]]), int(row[columns[2]])
            n_cached = int(row[cached_at]) if cached_at is not None else 0
        except (ValueError, IndexError):
            raise InputError(
                f"{source}: line {line}: needs a number in each of {', '.join(TRACE_COLUMNS)}"
            ) from None
        if not np.isfinite(t) or t < 0:
            raise InputError(f"{source}: line {line}: arrival_s must be >= 0, got {t:g}")
        if t < last:
            raise InputError(
                f"{source}: line {line}: arrival_s {t:g} is before the previous row's "
                f"{last:g}; sort the trace by time"
            )
        if not 1 <= n_in <= MAX_LENGTH or not 1 <= n_out <= MAX_LENGTH:
            raise InputError(
                f"{source}: line {line}: input_tokens and output_tokens must be in "
                f"[1, {MAX_LENGTH}], got {n_in} and {n_out}"
            )
        if not 0 <= n_cached < n_in:
            raise InputError(
                f"{source}: line {line}: cached_tokens must be in [0, input_tokens), got {n_cached}"
            )
        last = t
        times.append(t)
        inputs.append(n_in)
        outputs.append(n_out)
        cached.append(n_cached)
    if not times:
        raise InputError(f"{source}: no requests after the header line")
    return Workload(
        np.asarray(times, float),
        np.asarray(inputs, np.int64),
        np.asarray(outputs, np.int64),
        np.asarray(cached, np.int64),
        f"trace {source.name} ({len(times)} requests)",
    )


def fitted_workload(
    trace: Workload, rate: float, duration_s: float, *, arrival_cv: float = 1.0, seed: int = 0
) -> Workload:
    """New arrivals at ``rate`` with lognormal lengths fitted to ``trace``'s (the mean
    and standard deviation of the log lengths)."""
    rng = np.random.default_rng(seed)
    arrivals = arrival_times(rate, duration_s, rng, arrival_cv)

    def draw(lengths: Ints) -> Ints:
        logs = np.log(lengths.astype(float))
        values = rng.lognormal(logs.mean(), logs.std(), size=len(arrivals))
        return np.clip(np.rint(values), 1, MAX_LENGTH).astype(np.int64)

    return Workload(
        arrivals,
        draw(trace.input_tokens),
        draw(trace.output_tokens),
        np.zeros(len(arrivals), np.int64),
        f"lognormal lengths fitted to {trace.source}; arrivals at {rate:g}/s; seed {seed}",
    )
