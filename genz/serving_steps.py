"""Cost of one serving step (a forward pass over a mix of prefill chunks and decode
sequences), vectorised over many steps, from genz's own operator graph and costing.

A continuous-batching step runs one forward pass over ``T`` tokens: the prefill
chunks of some sequences (``q`` new tokens attending to ``c`` tokens each) and one
token of every decoding sequence. genz's operators split into three kinds by what
their FLOP and bytes depend on (found by probing the graph, not by name):

- *token* operators (projections, FFN or MoE, norms, collectives, embedding,
  pipeline hand-offs) depend on the step's token count ``T`` only; their genz cost
  (roofline ``max(compute, memory)`` + interconnect + launch overhead, MoE weights of
  the expected experts touched by ``T`` tokens) is tabulated at every integer ``T``;
- *head* operators (final norm, LM head) run on the ``H`` rows that emit a token
  (decoding sequences and prefills finishing their prompt), tabulated at every ``H``;
- *context* operators (attention; MLA's K/V decompression) have compute and memory
  times affine in ``(1, T_prefill, sum of chunk contexts, sum of causal pairs)`` for the
  prefill chunks and ``(1, D, sum of decode contexts)`` for the ``D`` decode tokens;
  the coefficients are solved from genz's costed graph at probe shapes (exact: the
  graph is affine in these aggregates, checked on construction) and the step pays
  ``max(compute, memory) + overhead`` per operator over all its sequences at once.

Prefill-form and decode-form passes are costed separately (they differ for MLA and in
runtime efficiencies); a mixed step blends the two by its prefill share of tokens
(exact for pure steps, which reproduce `genz.predict`'s TTFT and TPOT). Contexts
count the tokens in the KV cache after the step (genz's convention).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError, Platform

from .costing import cost_pass
from .graph import Array, pass_ops
from .inputs import pass_shape, scenario_inputs
from .memory import activation_bytes_per_device, kv_cache_bytes_per_device
from .memory import weight_bytes_per_device as _weight_bytes
from .model import ModelConfig
from .predictor import check_parallelism
from .runtime import RuntimeProfile
from .runtime_cost import physics_platform, retime_pass, stored_bits
from .scenario import Parallelism, Precision, Scenario

#: Largest token count or sequence count a step-cost table covers.
MAX_TABLE = 4_000_000
#: Relative residual above which the affine fit of a context operator is refused.
FIT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class _PassTimes:
    """Per-operator time terms of one probe pass, seconds, shape ``(operators, probes)``."""

    compute_s: Array
    memory_s: Array
    overhead_s: Array
    time_s: Array


def _cost(
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    runtime: RuntimeProfile | None,
    **shape: Any,
) -> _PassTimes:
    """genz's costing of one pass shape (broadcast arrays), per operator, through the
    runtime profile's two hooks as `genz.predict` applies them (its per-step fixed cost
    is left out here: `StepCost` adds it per step)."""
    nominal = scenario_inputs(scenario)
    inputs = nominal if runtime is None else stored_bits(runtime, nominal)
    retimed = runtime is not None and bool(runtime.phases)
    costed_on = physics_platform(platform) if retimed else platform
    batch = np.asarray(shape.pop("batch"), float)
    ps = dataclasses.replace(pass_shape(inputs, **shape), batch=batch)
    ops = pass_ops(model, ps)
    stacked = cost_pass(ops, costed_on)
    if retimed:
        assert runtime is not None
        form = "prefill" if ps.prefill else "decode"
        nominal_bits = nominal.weight_bits["attn_qkv"]
        stacked = retime_pass(runtime, form, costed_on, ops, stacked, nominal_bits, 0.0, batch)
    full = np.broadcast_shapes(np.shape(stacked.time_s), (1, *batch.shape))

    def wide(values: Array) -> Array:
        rows = np.asarray(values, float)
        return np.broadcast_to(rows.reshape(rows.shape + (1,) * (len(full) - rows.ndim)), full)

    return _PassTimes(
        wide(stacked.compute_s),
        wide(stacked.memory_s),
        wide(stacked.overhead_s + stacked.interconnect_s),
        wide(stacked.time_s),
    )


def _probe(
    model: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    runtime: RuntimeProfile | None,
    form: str,
    batch: ArrayLike,
    query: ArrayLike,
    context: ArrayLike,
    head_share: float = 1.0,
) -> _PassTimes:
    query_arr = np.asarray(query, float)
    return _cost(
        model,
        platform,
        scenario,
        runtime,
        batch=batch,
        query_tokens=query_arr if form == "prefill" else np.ones_like(query_arr),
        context=np.asarray(context, float),
        prefill=form == "prefill",
        head_share=head_share,
    )


def _features(form: str, batch: Array, query: Array, context: Array) -> Array:
    """Step aggregates of a uniform pass (rows: probes)."""
    if form == "prefill":
        pairs = query * context - query * (query - 1) / 2
        return np.stack([np.ones_like(batch), batch * query, batch * context, batch * pairs], 1)
    return np.stack([np.ones_like(batch), batch, batch * context], 1)


#: Probe shapes (batch, query, context) for the affine fits, one row each.
_PREFILL_PROBES = np.array(
    [(1, 1, 1), (1, 16, 16), (3, 16, 80), (2, 100, 300), (5, 7, 7), (1, 512, 2048), (4, 33, 90)],
    float,
)
_DECODE_PROBES = np.array([(1, 1, 10), (2, 1, 10), (5, 1, 400), (3, 1, 4096), (8, 1, 77)], float)


@dataclass(frozen=True)
class StepCost:
    """Time of serving steps of one model replica, from genz's cost model (seconds).

    Built by `step_cost`. Tables are indexed by form (0 prefill, 1 decode). Call
    `step_times` with the aggregates of each step (numbers or equal-length arrays).
    ``kv_bytes_per_token`` is per device for one token of one sequence (all the
    device's layers); ``weights_bytes`` per device.
    """

    model: str
    platform: str
    token_time_s: NDArray[np.float64]  # (2, max_tokens + 1)
    head_time_s: NDArray[np.float64]  # (2, max_sequences + 1)
    context_compute: NDArray[np.float64]  # (2, operators, features=4); decode uses 3
    context_memory: NDArray[np.float64]
    context_overhead_s: NDArray[np.float64]  # (2, operators)
    kv_bytes_per_token: float
    weights_bytes: float
    capacity_bytes: float
    fixed_step_s: NDArray[np.float64]  # (2,): the runtime's fixed cost per step
    fixed_sequence_s: NDArray[np.float64]  # (2,): and per sequence in the step
    runtime: str = "ideal"

    @property
    def max_tokens(self) -> int:
        """Largest token count per step the tables cover."""
        return self.token_time_s.shape[1] - 1

    @property
    def max_sequences(self) -> int:
        """Largest count of token-emitting sequences per step the tables cover."""
        return self.head_time_s.shape[1] - 1

    def step_times(
        self,
        prefill_tokens: ArrayLike,
        prefill_context_sum: ArrayLike,
        prefill_pairs_sum: ArrayLike,
        decode_sequences: ArrayLike,
        decode_context_sum: ArrayLike,
        emitting: ArrayLike,
        sequences: ArrayLike,
    ) -> NDArray[np.float64]:
        """Time of each step, seconds, for equal-length arrays of step aggregates.

        Parameters
        ----------
        prefill_tokens
            New prompt tokens in the step (sum of chunk sizes ``q``).
        prefill_context_sum
            Sum over the chunks of the context after the chunk ``c`` (tokens).
        prefill_pairs_sum
            Sum over the chunks of causal query-key pairs ``q c - q (q - 1) / 2``.
        decode_sequences
            Sequences decoding one token in the step (``D``).
        decode_context_sum
            Sum of their contexts after the step (tokens).
        emitting
            Rows through the LM head: ``D`` plus prefills that finish their prompt.
        sequences
            Sequences in the step (decoding plus those with a prompt chunk); the runtime
            profile's per-sequence cost counts them.
        """
        tp = np.asarray(prefill_tokens, float)
        d = np.asarray(decode_sequences, float)
        rows = np.asarray(emitting, np.int64)
        tokens = (tp + d).astype(np.int64)
        self._check(int(np.max(tokens, initial=0)), int(np.max(rows, initial=0)))
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.where(tokens > 0, tp / tokens, 0.0)
        total = self._combine(
            (self.token_time_s[0][tokens], self.token_time_s[1][tokens]),
            (self.head_time_s[0][rows], self.head_time_s[1][rows]),
            w,
            (tp, np.asarray(prefill_context_sum, float), np.asarray(prefill_pairs_sum, float)),
            (d, np.asarray(decode_context_sum, float)),
            np.asarray(sequences, float),
            np.maximum,
        )
        return np.where(tokens > 0, total, 0.0)

    def step_time(
        self,
        prefill_tokens: int,
        prefill_context_sum: float,
        prefill_pairs_sum: float,
        decode_sequences: int,
        decode_context_sum: float,
        emitting: int,
        sequences: int,
    ) -> float:
        """`step_times` of one step in plain Python arithmetic (the simulator's hot path:
        a few microseconds where numpy on scalars takes a hundred), seconds."""
        tokens = prefill_tokens + decode_sequences
        if tokens <= 0:
            return 0.0
        w = prefill_tokens / tokens
        token_lists, head_lists = self._lists
        try:
            token = (token_lists[0][tokens], token_lists[1][tokens])
            head = (head_lists[0][emitting], head_lists[1][emitting])
        except IndexError:
            self._check(tokens, emitting)
            raise
        return float(
            self._combine(
                token,
                head,
                w,
                (prefill_tokens, prefill_context_sum, prefill_pairs_sum),
                (decode_sequences, decode_context_sum),
                sequences,
                max,
            )
        )

    @cached_property
    def _lists(self) -> tuple[list[list[float]], list[list[float]]]:
        return self.token_time_s.tolist(), self.head_time_s.tolist()

    @cached_property
    def _fixed(self) -> tuple[list[float], list[float]]:
        return self.fixed_step_s.tolist(), self.fixed_sequence_s.tolist()

    @cached_property
    def _coefficients(self) -> list[tuple[list[list[float]], list[list[float]], list[float]]]:
        """Per context operator: compute and memory coefficients and overhead, by form."""
        return [
            (
                self.context_compute[:, op].tolist(),
                self.context_memory[:, op].tolist(),
                self.context_overhead_s[:, op].tolist(),
            )
            for op in range(self.context_compute.shape[1])
        ]

    def _check(self, tokens: int, rows: int) -> None:
        if tokens > self.max_tokens or rows > self.max_sequences:
            raise InputError(
                f"a step of {tokens} tokens and {rows} emitting sequences exceeds the "
                f"{self.max_tokens} tokens and {self.max_sequences} sequences this step "
                "cost covers"
            )

    def _combine(
        self,
        token: tuple[Any, Any],
        head: tuple[Any, Any],
        w: Any,
        prefill_x: tuple[Any, Any, Any],
        decode_x: tuple[Any, Any],
        sequences: Any,
        maximum: Any,
    ) -> Any:
        """The step formula on numbers or arrays (see the module doc)."""
        v = 1 - w
        step, per = self._fixed
        total = w * token[0] + v * token[1] + w * head[0] + v * head[1]
        total = total + w * step[0] + v * step[1] + (w * per[0] + v * per[1]) * sequences
        for compute, memory, overhead in self._coefficients:
            terms = []
            for pre, dec in (compute, memory):
                terms.append(
                    w * pre[0]
                    + v * dec[0]
                    + pre[1] * prefill_x[0]
                    + pre[2] * prefill_x[1]
                    + pre[3] * prefill_x[2]
                    + dec[1] * decode_x[0]
                    + dec[2] * decode_x[1]
                )
            total = total + maximum(terms[0], terms[1]) + w * overhead[0] + v * overhead[1]
        return total

    def kv_capacity_tokens(self, memory_utilization: float, activation_bytes: float) -> int:
        """Tokens of KV cache the replica holds: ``memory_utilization`` of each device's
        memory minus weights and ``activation_bytes`` of working set, over the KV bytes
        of one token (0 when the weights alone do not fit)."""
        free = memory_utilization * self.capacity_bytes - self.weights_bytes - activation_bytes
        return max(int(free // self.kv_bytes_per_token), 0)


def _classify(
    model: ModelConfig, platform: Platform, scenario: Scenario, runtime: RuntimeProfile | None
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Masks of the context operators and the head operators of the graph."""
    short = _probe(model, platform, scenario, runtime, "decode", 4.0, 1.0, 64.0).time_s[:, 0]
    long = _probe(model, platform, scenario, runtime, "decode", 4.0, 1.0, 4096.0).time_s[:, 0]
    context = ~np.isclose(short, long, rtol=1e-12, atol=0.0)
    with_head = _probe(model, platform, scenario, runtime, "prefill", 2.0, 64.0, 64.0, 1.0).time_s[
        :, 0
    ]
    without = _probe(model, platform, scenario, runtime, "prefill", 2.0, 64.0, 64.0, 0.0).time_s[
        :, 0
    ]
    head = ~np.isclose(with_head, without, rtol=1e-12, atol=0.0) & ~context
    return context, head


def _fit(values: Array, features: Array) -> Array:
    """Exact affine coefficients of each operator's ``values`` (operators x probes)."""
    coef, *_ = np.linalg.lstsq(features, values.T, rcond=None)
    residual = np.abs(features @ coef - values.T)
    scale = np.maximum(np.abs(values.T), 1e-30)
    if np.any(residual > FIT_TOLERANCE * scale.max(axis=0) + 1e-300):
        raise RuntimeError("a context operator of the genz graph is not affine in the step sums")
    return np.asarray(coef.T)


def step_cost(
    model: ModelConfig,
    platform: Platform,
    precision: Precision | None = None,
    parallelism: Parallelism | None = None,
    *,
    max_tokens: int,
    max_sequences: int,
    runtime: RuntimeProfile | None = None,
) -> StepCost:
    """Precompute the cost of serving steps of ``model`` on one replica.

    Parameters
    ----------
    max_tokens
        Most tokens one step may hold (the scheduler's token budget).
    max_sequences
        Most sequences one step may hold.
    runtime
        A serving-stack profile (`genz.load_runtime`): stored weight bits, per-phase
        fractions of peak, all-reduce latency and the fixed cost of each step
        (``step_overhead_s + sequence_overhead_s x sequences``), as `genz.predict`
        applies them. None: physics only.
    """
    precision = precision or Precision()
    parallelism = parallelism or Parallelism()
    check_parallelism(model, parallelism)
    for label, value in (("max_tokens", max_tokens), ("max_sequences", max_sequences)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TABLE:
            raise InputError(f"{label} must be an integer in [1, {MAX_TABLE}], got {value!r}")
    scenario = Scenario(precision=precision, parallelism=parallelism)
    context, head = _classify(model, platform, scenario, runtime)
    token = ~context & ~head
    tokens = np.arange(max_tokens + 1, dtype=float)
    rows = np.arange(max_sequences + 1, dtype=float)
    token_tables: list[Array] = []
    head_tables: list[Array] = []
    compute: list[Array] = []
    memory: list[Array] = []
    overhead: list[Array] = []
    for form, probes in (("prefill", _PREFILL_PROBES), ("decode", _DECODE_PROBES)):
        # Token operators see T tokens (prefill: one sequence of T; decode: T sequences).
        if form == "prefill":
            by_tokens = _probe(model, platform, scenario, runtime, form, 1.0, tokens, tokens)
        else:
            by_tokens = _probe(model, platform, scenario, runtime, form, tokens, 1.0, 1.0)
        by_rows = _probe(model, platform, scenario, runtime, form, rows, 1.0, 1.0)
        token_tables.append(np.where(tokens > 0, by_tokens.time_s[token].sum(axis=0), 0.0))
        head_tables.append(np.where(rows > 0, by_rows.time_s[head].sum(axis=0), 0.0))
        batch, query, ctx = probes.T
        timed = _probe(model, platform, scenario, runtime, form, batch, query, ctx)
        features = _features(form, batch, query, ctx)
        width = 4
        for target, values in ((compute, timed.compute_s), (memory, timed.memory_s)):
            coef = _fit(values[context], features)
            target.append(np.pad(coef, ((0, 0), (0, width - coef.shape[1]))))
        overhead.append(timed.overhead_s[context][:, 0])
    inputs = scenario_inputs(scenario)
    if runtime is not None:
        inputs = stored_bits(runtime, inputs)
    phases = (
        [runtime.phase(form, platform) for form in ("prefill", "decode")]
        if (runtime is not None and runtime.phases)
        else []
    )
    one = np.ones(1)
    kv_token = kv_cache_bytes_per_device(
        model, one, one, inputs.kv_bits, inputs.tp, inputs.ep, inputs.pp
    )
    weights = _weight_bytes(model, inputs.weight_bits, inputs.tp, inputs.ep, inputs.pp)
    return StepCost(
        model=model.name,
        platform=platform.name,
        token_time_s=np.stack(token_tables),
        head_time_s=np.stack(head_tables),
        context_compute=np.stack(compute),
        context_memory=np.stack(memory),
        context_overhead_s=np.stack(overhead),
        kv_bytes_per_token=float(kv_token[0]),
        weights_bytes=float(weights[0]),
        capacity_bytes=platform.main_memory.capacity_bytes,
        fixed_step_s=np.array([phase.step_overhead_s for phase in phases] or [0.0, 0.0]),
        fixed_sequence_s=np.array([phase.sequence_overhead_s for phase in phases] or [0.0, 0.0]),
        runtime="ideal" if runtime is None else runtime.name,
    )


def step_activation_bytes(
    model: ModelConfig, precision: Precision, parallelism: Parallelism, tokens: int
) -> float:
    """Per-device activation working set of a step of ``tokens`` tokens (genz's
    prefill-chunk formula for one sequence of that many tokens), bytes."""
    inputs = scenario_inputs(Scenario(precision=precision, parallelism=parallelism))
    value = activation_bytes_per_device(
        model,
        np.ones(1),
        np.asarray([float(tokens)]),
        np.asarray([float(tokens)]),
        inputs.activation_bits,
        inputs.tp,
        inputs.ep,
    )
    return float(value[0])
