"""Request streams for the serving simulator: arrivals, lengths, shared prefixes.

- Arrivals: Poisson (exponential gaps at ``rate``), gamma gaps with a coefficient of
  variation ``cv`` (``cv = 1`` is Poisson; ``cv > 1`` bursty, as measured production
  traces are), or the timestamps of a trace CSV.
- Lengths: lognormal prompt and output lengths with a stated mean and CV (the mean from
  a use-case preset, `genz.load_use_cases`; ``cv = 0`` gives the preset's fixed shape),
  a lognormal fitted to a trace's lengths, or the trace's own lengths; ShareGPT-like
  pairs (`sharegpt_lengths`: lognormal of given means under the benchmark scripts'
  length filter).
- Clients: open loop (every request sent at its arrival time, whatever the server
  does), or closed loop (``max_concurrency`` C: at most C requests in flight; a request
  is sent at its arrival time or, when C are in flight then, the moment one of them
  finishes, first come first served, as ``vllm bench serve --max-concurrency C`` and
  GenAI-Perf's concurrency mode do). A closed-loop workload's ``arrival_s`` is the
  earliest send time of each request (0 for all: "request rate inf"); the engine decides
  the actual one (`search.serving.engine`). ``requests`` draws a fixed number of
  requests (``--num-requests``) instead of those falling in a duration.
- Shared prefixes: a share ``prefix_share`` of requests start with one of
  ``prefix_count`` shared prefixes of ``prefix_tokens`` tokens (system prompts, agent
  contexts, earlier turns), drawn with Zipf popularity (weight of the k-th most popular
  prefix proportional to ``1 / k**prefix_zipf``; 0 is uniform), or the ``prefix_id``
  column of a trace. Whether a request finds its prefix cached is decided by the
  replica's prefix cache (`search.serving.engine`), not here.

A seed fixes every draw.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from genz import use_case
from roofline import (
    InputError,
    csv_failure,
    read_user_text,
    require_non_negative,
    require_positive,
)

#: Largest trace file read, bytes (about 10^6 rows).
MAX_TRACE_BYTES = 64_000_000
#: Largest prompt or output length drawn, tokens.
MAX_LENGTH = 1_000_000
TRACE_COLUMNS = ("arrival_s", "input_tokens", "output_tokens")
#: Optional trace columns naming each request's shared prefix and its length.
PREFIX_COLUMNS = ("prefix_id", "prefix_tokens")
#: Largest prefix id a trace may use.
MAX_PREFIX_ID = 2**31 - 1
#: Most closed-loop clients (requests in flight) and most requests drawn by count.
MAX_CONCURRENCY = 1_000_000
MAX_REQUESTS = 50_000_000
#: Most sequences per request (parallel samples or beams), as `genz.Scenario`'s axes.
MAX_SEQUENCES = 1024

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]


@dataclass(frozen=True)
class Workload:
    """Requests sorted by arrival: times (s), prompt and output tokens, and the tokens
    of the shared prefix each prompt starts with (0: none; included in the prompt).
    ``prefix_id`` names that prefix (-1: none); None means one prefix shared by every
    request with ``prefix_tokens > 0``. ``source`` says how it was made.
    ``max_concurrency`` (None: open loop) makes the clients closed-loop: at most that
    many requests in flight, ``arrival_s`` being each request's earliest send time
    (module doc). ``samples`` (parallel sampling, vLLM ``n``) or ``beams`` (beam
    search) decode that many sequences per request after one prefill, sharing the
    prompt's KV blocks (`occupancy`); every sample is returned, one beam is."""

    arrival_s: Floats
    input_tokens: Ints
    output_tokens: Ints
    prefix_tokens: Ints
    source: str
    prefix_id: Ints | None = None
    max_concurrency: int | None = None
    samples: int = 1
    beams: int = 1
    #: Images per request (a VLM's, `with_images`): their tokens are in ``input_tokens``
    #: and each request's prefill runs the vision tower on them once.
    images: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.images, bool) or not isinstance(self.images, int):
            raise InputError(f"images must be an integer in [0, 1024], got {self.images!r}")
        if not 0 <= self.images <= 1024:
            raise InputError(f"images must be an integer in [0, 1024], got {self.images!r}")
        for label in ("samples", "beams"):
            n = getattr(self, label)
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SEQUENCES:
                raise InputError(f"{label} must be an integer in [1, {MAX_SEQUENCES}], got {n!r}")
        if self.samples > 1 and self.beams > 1:
            raise InputError(
                f"give samples or beams, not both (got samples {self.samples}, beams {self.beams})"
            )
        c = self.max_concurrency
        if c is not None and (
            isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_CONCURRENCY
        ):
            raise InputError(
                f"max_concurrency must be an integer in [1, {MAX_CONCURRENCY}], got {c!r}"
            )

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def sequences(self) -> int:
        """Sequences each request decodes: its samples or its beams."""
        return self.samples * self.beams

    @property
    def prefixes(self) -> Ints:
        """Prefix id of every request (-1: none)."""
        if self.prefix_id is not None:
            return self.prefix_id
        return np.where(self.prefix_tokens > 0, 0, -1).astype(np.int64)

    @property
    def duration_s(self) -> float:
        """Time of the last arrival, seconds."""
        return float(self.arrival_s[-1]) if len(self) else 0.0


#: Peak memory one simulated request takes, bytes: its arrival and lengths, the loop's
#: per-request state, its share of the step, timeline and ITL logs (about 5 steps of
#: ``chat`` a request) and the result's arrays. Measured as the slope of the peak RSS of
#: ``codesign``'s ``run`` from 2 x 10^4 to 2 x 10^5 chat requests (docs/serving.md,
#: "Memory"): 940 with the compiled loop, 1,430 with the Python loop; the cap uses the
#: Python loop's figure, rounded up (the loop a run takes is known only later).
BYTES_PER_REQUEST = 1_500
#: Most requests of one simulation whatever the memory.
MAX_REQUESTS = 50_000_000


def max_requests() -> tuple[int, float]:
    """``(cap, available bytes)``: the requests one simulation may hold, the smaller of
    `MAX_REQUESTS` and half the memory available now over `BYTES_PER_REQUEST`.

    Available memory is Linux's ``MemAvailable``; elsewhere half the physical memory.
    """
    available = None
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    available = float(line.split()[1]) * 1024
    except OSError:
        pass
    if available is None:
        try:
            available = 0.5 * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            available = 2.0 * MAX_REQUESTS * BYTES_PER_REQUEST
    return int(min(MAX_REQUESTS, 0.5 * available / BYTES_PER_REQUEST)), available


def arrival_times(
    rate: float, duration_s: float, rng: np.random.Generator, cv: float = 1.0
) -> Floats:
    """Arrival times in ``[0, duration_s)`` of a renewal process of mean ``rate``
    (requests/s) whose gaps are gamma with coefficient of variation ``cv``."""
    require_positive("rate", rate)
    require_positive("duration_s", duration_s)
    require_positive("cv", cv)
    expected = rate * duration_s
    cap, available = max_requests()
    if expected > cap:
        raise InputError(
            f"rate x duration must be at most {cap:.3g} requests (5e7, or half of the "
            f"{available / 1e9:.1f} GB of memory available at {BYTES_PER_REQUEST} bytes per "
            f"request), got {expected:g}"
        )
    shape = 1.0 / cv**2
    count = int(expected + 6 * np.sqrt(expected) * max(cv, 1.0) + 16)
    gaps = rng.gamma(shape, 1.0 / (rate * shape), size=count)
    times = np.cumsum(gaps) - gaps[0]
    while times[-1] < duration_s:  # rare: the draw fell short of the window
        more = rng.gamma(shape, 1.0 / (rate * shape), size=count)
        times = np.concatenate([times, times[-1] + np.cumsum(more)])
    return times[times < duration_s]


def counted_arrivals(
    rate: float, requests: int, rng: np.random.Generator, cv: float = 1.0
) -> Floats:
    """Arrival times of exactly ``requests`` requests of a renewal process of mean
    ``rate`` (gamma gaps of coefficient of variation ``cv``, the first at 0); an infinite
    ``rate`` sends all of them at 0 ("request rate inf" of the benchmark scripts)."""
    if isinstance(requests, bool) or not isinstance(requests, int):
        raise InputError(f"requests must be an integer in [1, {MAX_REQUESTS}], got {requests!r}")
    if not 1 <= requests <= MAX_REQUESTS:
        raise InputError(f"requests must be an integer in [1, {MAX_REQUESTS}], got {requests!r}")
    if rate == math.inf:
        return np.zeros(requests)
    require_positive("rate", rate)
    require_positive("cv", cv)
    shape = 1.0 / cv**2
    gaps = rng.gamma(shape, 1.0 / (rate * shape), size=requests)
    return np.cumsum(gaps) - gaps[0]


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


def zipf_weights(count: int, exponent: float) -> Floats:
    """Popularity of ``count`` prefixes: ``1 / k**exponent`` for k = 1..count, summing to 1."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 1_000_000:
        raise InputError(f"prefix_count must be an integer in [1, 1000000], got {count!r}")
    require_non_negative("prefix_zipf", exponent)
    weights = np.arange(1, count + 1, dtype=float) ** -float(exponent)
    return weights / weights.sum()


def _prefixes(
    inputs: Ints,
    share: float,
    prefix_tokens: int,
    weights: Floats,
    rng: np.random.Generator,
) -> tuple[Ints, Ints, Ints]:
    """Prompts (a request with a prefix is at least the prefix plus one token), the
    prefix tokens and the prefix id (-1: none) of each request; ids are drawn from
    ``weights`` (only when there is more than one prefix)."""
    if not 0 <= share <= 1:
        raise InputError(f"prefix_share must be in [0, 1], got {share!r}")
    if prefix_tokens < 0:
        raise InputError(f"prefix_tokens must be >= 0, got {prefix_tokens!r}")
    none = np.full(len(inputs), -1, np.int64)
    if share == 0 or prefix_tokens == 0:
        return inputs, np.zeros_like(inputs), none
    shared = rng.random(len(inputs)) < share
    prompts = np.where(shared, np.maximum(inputs, prefix_tokens + 1), inputs)
    ids = rng.choice(len(weights), size=len(inputs), p=weights) if len(weights) > 1 else 0
    return (
        prompts,
        np.where(shared, prefix_tokens, 0).astype(np.int64),
        np.where(shared, ids, -1).astype(np.int64),
    )


def synthetic_workload(
    rate: float,
    duration_s: float,
    *,
    use_case_name: str = "chat",
    input_tokens: float | None = None,
    output_tokens: float | None = None,
    length_cv: float = 0.5,
    arrival_cv: float = 1.0,
    prefix_share: float = 0.0,
    prefix_tokens: int = 0,
    prefix_count: int = 1,
    prefix_zipf: float = 1.0,
    seed: int = 0,
    requests: int | None = None,
    max_concurrency: int | None = None,
) -> Workload:
    """Requests over ``duration_s`` seconds at ``rate`` requests/s; with ``requests``,
    exactly that many at ``rate`` whatever the duration (an infinite ``rate`` sends all
    at 0). ``max_concurrency`` makes the clients closed-loop (`Workload`).

    Mean lengths come from the use case unless ``input_tokens`` / ``output_tokens``
    are given; ``length_cv`` is the spread of both (lognormal). A share
    ``prefix_share`` of the prompts starts with one of ``prefix_count`` prefixes of
    ``prefix_tokens`` tokens, Zipf-popular with exponent ``prefix_zipf``.
    """
    rng = np.random.default_rng(seed)
    case = use_case(use_case_name)
    if requests is None:
        if rate == math.inf:
            raise InputError("an infinite rate (all requests at once) needs a request count")
        arrivals = arrival_times(rate, duration_s, rng, arrival_cv)
    else:
        arrivals = counted_arrivals(rate, requests, rng, arrival_cv)
    inputs = lognormal_lengths(input_tokens or case.input_tokens, length_cv, len(arrivals), rng)
    outputs = lognormal_lengths(output_tokens or case.output_tokens, length_cv, len(arrivals), rng)
    weights = zipf_weights(prefix_count, prefix_zipf)
    prompts, prefix, ids = _prefixes(inputs, prefix_share, prefix_tokens, weights, rng)
    kind = "Poisson" if arrival_cv == 1 else f"gamma (cv {arrival_cv:g})"
    window = f"for {duration_s:g} s" if requests is None else f"({requests} requests)"
    sending = f"{kind} arrivals at {rate:g}/s {window}"
    if rate == math.inf:
        sending = f"{requests} requests all at once"
    if max_concurrency is not None:
        sending += f", closed loop of {max_concurrency} clients"
    shared = ""
    if prefix.any():
        shared = (
            f"; {prefix_share:.0%} share one of {prefix_count} {prefix_tokens}-token prefixes"
            + (f" (Zipf {prefix_zipf:g})" if prefix_count > 1 else "")
        )
    return Workload(
        arrivals,
        prompts,
        outputs,
        prefix,
        f"{sending}; {use_case_name} lengths (lognormal, cv {length_cv:g}){shared}; seed {seed}",
        ids,
        max_concurrency,
    )


def _prefix_columns(header: list[str], source: Path) -> tuple[int, int] | None:
    """Positions of ``prefix_id`` and ``prefix_tokens`` (None when the trace has none)."""
    if "cached_tokens" in header:
        raise InputError(
            f"{source}: line 1: column 'cached_tokens' is not read (hits come from the "
            "prefix cache); give prefix_id and prefix_tokens instead"
        )
    present = [name for name in PREFIX_COLUMNS if name in header]
    if not present:
        return None
    if len(present) == 1:
        other = next(name for name in PREFIX_COLUMNS if name not in present)
        raise InputError(f"{source}: line 1: column {present[0]!r} needs a column {other!r}")
    return header.index("prefix_id"), header.index("prefix_tokens")


def _prefix_of(
    row: list[str], columns: tuple[int, int], n_in: int, source: Path, line: int
) -> tuple[int, int]:
    """A row's (prefix id, prefix tokens); an empty ``prefix_id`` cell is no prefix."""
    id_cell, tokens_cell = (row[i].strip() if i < len(row) else "" for i in columns)
    if not id_cell:
        return -1, 0
    try:
        prefix, tokens = int(id_cell), int(tokens_cell)
    except ValueError:
        raise InputError(
            f"{source}: line {line}: prefix_id and prefix_tokens must be integers, got "
            f"{id_cell!r} and {tokens_cell!r}"
        ) from None
    if not 0 <= prefix <= MAX_PREFIX_ID:
        raise InputError(
            f"{source}: line {line}: prefix_id must be in [0, {MAX_PREFIX_ID}] (empty: no "
            f"prefix), got {prefix}"
        )
    if not 1 <= tokens < n_in:
        raise InputError(
            f"{source}: line {line}: prefix_tokens must be in [1, input_tokens) = [1, {n_in}), "
            f"got {tokens}"
        )
    return prefix, tokens


def load_trace(path: str | Path) -> Workload:
    """A trace CSV with columns ``arrival_s, input_tokens, output_tokens`` (more
    columns are ignored), sorted by time. Optional ``prefix_id`` (an integer naming a
    shared prefix; empty: none) and ``prefix_tokens`` (its length, part of the prompt;
    the same on every row of one prefix) give shared prefixes."""
    source, text = read_user_text(path, kind="trace CSV", max_bytes=MAX_TRACE_BYTES)
    try:
        return _parse_trace(text, source)
    except csv.Error as error:
        raise csv_failure(source, _line_of(text), error) from None


def _line_of(text: str) -> int:
    """The line a ``csv.Error`` arose on (the reader's count is lost with it)."""
    reader = csv.reader(io.StringIO(text))
    try:
        for _ in reader:
            pass
    except csv.Error:
        return reader.line_num + 1
    return 1


def _parse_trace(text: str, source: Path) -> Workload:
    reader = csv.reader(io.StringIO(text))
    header = [name.strip() for name in next(reader, [])]
    missing = [name for name in TRACE_COLUMNS if name not in header]
    if missing:
        raise InputError(
            f"{source}: line 1: missing column {missing[0]!r}; needs {', '.join(TRACE_COLUMNS)}"
        )
    columns = [header.index(name) for name in TRACE_COLUMNS]
    prefix_at = _prefix_columns(header, source)
    times, inputs, outputs, prefix_tokens, prefix_ids = [], [], [], [], []
    lengths: dict[int, tuple[int, int]] = {}  # prefix id -> (tokens, first line)
    last = 0.0
    for line, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        try:
            t = float(row[columns[0]])
            n_in, n_out = int(row[columns[1]]), int(row[columns[2]])
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
        prefix, tokens = (
            (-1, 0) if prefix_at is None else _prefix_of(row, prefix_at, n_in, source, line)
        )
        if prefix >= 0:
            seen, first = lengths.setdefault(prefix, (tokens, line))
            if seen != tokens:
                raise InputError(
                    f"{source}: line {line}: prefix {prefix} has {tokens} prefix_tokens here "
                    f"but {seen} at line {first}"
                )
        last = t
        times.append(t)
        inputs.append(n_in)
        outputs.append(n_out)
        prefix_tokens.append(tokens)
        prefix_ids.append(prefix)
    if not times:
        raise InputError(f"{source}: no requests after the header line")
    return Workload(
        np.asarray(times, float),
        np.asarray(inputs, np.int64),
        np.asarray(outputs, np.int64),
        np.asarray(prefix_tokens, np.int64),
        f"trace {source.name} ({len(times)} requests)",
        np.asarray(prefix_ids, np.int64),
    )


def fitted_workload(
    trace: Workload, rate: float, duration_s: float, *, arrival_cv: float = 1.0, seed: int = 0
) -> Workload:
    """New arrivals at ``rate`` with lognormal lengths fitted to ``trace``'s (the mean
    and standard deviation of the log lengths) and its shared prefixes: the same share
    of requests carries a prefix, drawn with the trace's prefix frequencies as weights."""
    rng = np.random.default_rng(seed)
    arrivals = arrival_times(rate, duration_s, rng, arrival_cv)
    n = len(arrivals)

    def draw(lengths: Ints) -> Ints:
        logs = np.log(lengths.astype(float))
        values = rng.lognormal(logs.mean(), logs.std(), size=n)
        return np.clip(np.rint(values), 1, MAX_LENGTH).astype(np.int64)

    inputs, outputs = draw(trace.input_tokens), draw(trace.output_tokens)
    ids = np.full(n, -1, np.int64)
    prefix = np.zeros(n, np.int64)
    carried = trace.prefixes >= 0
    if carried.any():
        known, first, counts = np.unique(
            trace.prefixes[carried], return_index=True, return_counts=True
        )
        shared = rng.random(n) < carried.mean()
        pick = rng.choice(len(known), size=n, p=counts / counts.sum())
        ids = np.where(shared, known[pick], -1)
        prefix = np.where(shared, trace.prefix_tokens[carried][first][pick], 0)
        inputs = np.where(shared, np.maximum(inputs, prefix + 1), inputs)
    return Workload(
        arrivals,
        inputs,
        outputs,
        prefix.astype(np.int64),
        f"lognormal lengths fitted to {trace.source}; arrivals at {rate:g}/s; seed {seed}",
        ids.astype(np.int64),
    )


def with_images(workload: Workload, images: int, tokens_per_image: int) -> Workload:
    """``workload`` whose every request carries ``images`` images of ``tokens_per_image``
    prompt tokens each (a VLM's, `genz.vision`): its prompts grow by ``images x
    tokens_per_image`` tokens. Shared prefixes are refused (caching image prompts is not
    modelled: a request's first chunk is where its tower runs)."""
    if not images:
        return workload
    if bool(np.any(workload.prefix_tokens > 0)):
        raise InputError(
            "--images: prefix caching of image prompts is not modelled; drop --prefix-share "
            "(or the trace's prefix columns)"
        )
    added = images * tokens_per_image
    return replace(
        workload,
        input_tokens=workload.input_tokens + added,
        images=images,
        source=f"{workload.source}, {images} image(s) per request (+{added} prompt tokens)",
    )
