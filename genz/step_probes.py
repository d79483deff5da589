"""Build a `genz.serving_steps.StepCost` by probing genz's own operator graph and
costing (the method is in that module's doc): classify the operators, tabulate the
token and head operators, solve the affine coefficients of the context operators."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError, Platform

from .adapter_steps import adapter_operators
from .graph import pass_ops
from .inputs import GridInputs, pass_shape, scenario_inputs
from .memory import activation_bytes_per_device, kv_cache_bytes_per_device
from .memory import weight_bytes_per_device as _weight_bytes
from .model import ModelConfig
from .offload import require_host
from .op_terms import Array
from .resolved import ResolvedProfile, resolve
from .runtime import RuntimeProfile
from .runtime_cost import cost_phase
from .scenario import Parallelism, Precision, Scenario
from .scenario_checks import check_parallelism
from .serving_steps import StepCost
from .windows import window_keys, window_pairs

#: Largest token count or sequence count a step-cost table covers.
MAX_TABLE = 4_000_000
#: Token counts probed at once when tabulating (bounds the memory of long tables).
TABLE_SLICE = 65_536
#: Relative residual above which the affine fit of a context operator is refused.
FIT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class _PassTimes:
    """Per-operator time terms of one probe pass, seconds, shape ``(operators, probes)``,
    and the per-device FLOP and main-memory bytes of the operators that take time."""

    compute_s: Array
    memory_s: Array
    overhead_s: Array
    time_s: Array
    flop: Array
    bytes: Array


def _cost(
    model: ModelConfig, resolved: ResolvedProfile, inputs: GridInputs, **shape: Any
) -> _PassTimes:
    """genz's costing of one pass shape (broadcast arrays), per operator, over the
    resolved runtime profile as `genz.predict` applies it (its per-step fixed cost is
    left out here: `StepCost` adds it per step)."""
    batch = np.asarray(shape.pop("batch"), float)
    form = "prefill" if shape["prefill"] else "decode"
    shape["routing_independence"] = resolved.phases[form].routing_independence
    ps = dataclasses.replace(pass_shape(inputs, **shape), batch=batch)
    stacked = cost_phase(resolved, form, pass_ops(model, ps), 0.0, batch)
    full = np.broadcast_shapes(np.shape(stacked.time_s), (1, *batch.shape))

    def wide(values: Array) -> Array:
        rows = np.asarray(values, float)
        return np.broadcast_to(rows.reshape(rows.shape + (1,) * (len(full) - rows.ndim)), full)

    time_s = wide(stacked.time_s)
    busy = time_s > 0  # as genz.predict's PhaseCost counts FLOP and bytes
    return _PassTimes(
        wide(stacked.compute_s),
        wide(stacked.memory_s),
        wide(stacked.overhead_s + stacked.interconnect_s),
        time_s,
        np.where(busy, wide(stacked.flop), 0.0),
        np.where(busy, wide(stacked.bytes), 0.0),
    )


def _probe(
    model: ModelConfig,
    resolved: ResolvedProfile,
    inputs: GridInputs,
    form: str,
    batch: ArrayLike,
    query: ArrayLike,
    context: ArrayLike,
    head_share: float = 1.0,
) -> _PassTimes:
    query_arr = np.asarray(query, float)
    return _cost(
        model,
        resolved,
        inputs,
        batch=batch,
        query_tokens=query_arr if form == "prefill" else np.ones_like(query_arr),
        context=np.asarray(context, float),
        prefill=form == "prefill",
        head_share=head_share,
    )


def _features(form: str, batch: Array, query: Array, context: Array, window: float = 0.0) -> Array:
    """Step aggregates of a uniform pass (rows: probes); with ``window`` w' > 0, those
    of a windowed layer: keys ``min(c, q + w' - 1)`` and pairs `genz.windows.window_pairs`
    in place of the context and the causal pairs."""
    if window:
        keys, pairs = window_keys(query, context, window), window_pairs(query, context, window)
    else:
        keys, pairs = context, query * context - query * (query - 1) / 2
    if form == "prefill":
        return np.stack([np.ones_like(batch), batch * query, batch * keys, batch * pairs], 1)
    return np.stack([np.ones_like(batch), batch, batch * keys], 1)


#: Probe shapes (batch, query, context) for the affine fits, one row each.
_PREFILL_PROBES = np.array(
    [(1, 1, 1), (1, 16, 16), (3, 16, 80), (2, 100, 300), (5, 7, 7), (1, 512, 2048), (4, 33, 90)],
    float,
)
_DECODE_PROBES = np.array([(1, 1, 10), (2, 1, 10), (5, 1, 400), (3, 1, 4096), (8, 1, 77)], float)


def _window_probes(probes: Array, window: float) -> Array:
    """``probes`` plus shapes past the window ``w'`` (so the windowed fits see the
    clipped regime as well as the growing one)."""
    w = float(window)
    extra = np.array(
        [(1, 1, 2 * w), (2, 1, 3 * w + 5), (3, 1, w + 1), (1, 16, 2 * w), (2, 33, 3 * w + 7)],
        float,
    )
    if probes[0, 1] == 1 and np.all(probes[:, 1] == 1):  # decode probes: one query each
        extra = extra[extra[:, 1] == 1]
    return np.concatenate([probes, extra])


def _classify(
    model: ModelConfig, resolved: ResolvedProfile, inputs: GridInputs
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    """Masks of the context operators, the head operators and (among the context
    operators) the windowed ones, whose cost stops growing past the window."""
    w = float(model.kept_window_tokens) if model.num_window_layers else 0.0
    near = min(64.0, max(w / 2, 2.0)) if w else 64.0
    short = _probe(model, resolved, inputs, "decode", 4.0, 1.0, near).time_s[:, 0]
    long = _probe(model, resolved, inputs, "decode", 4.0, 1.0, 4096.0).time_s[:, 0]
    context = ~np.isclose(short, long, rtol=1e-12, atol=0.0)
    windowed = np.zeros_like(context)
    if w:
        past = _probe(model, resolved, inputs, "decode", 4.0, 1.0, 2 * w + 8).time_s[:, 0]
        far = _probe(model, resolved, inputs, "decode", 4.0, 1.0, 3 * w + 8).time_s[:, 0]
        windowed = context & np.isclose(past, far, rtol=1e-12, atol=0.0)
    with_head = _probe(model, resolved, inputs, "prefill", 2.0, 64.0, 64.0, 1.0).time_s[:, 0]
    without = _probe(model, resolved, inputs, "prefill", 2.0, 64.0, 64.0, 0.0).time_s[:, 0]
    head = ~np.isclose(with_head, without, rtol=1e-12, atol=0.0) & ~context
    return context, head, windowed


def _state_operators(
    model: ModelConfig, resolved: ResolvedProfile, inputs: GridInputs, token: NDArray[np.bool_]
) -> tuple[NDArray[np.bool_], Array, Array]:
    """Mask of the state operators among the token operators (their prefill memory
    grows with the sequences at a fixed token count: a state written per sequence), the
    memory seconds of one more state pass per state operator and the per-device FLOP and
    bytes of one more over all of them; the growth is checked to be linear."""
    whole = _probe(model, resolved, inputs, "prefill", 1.0, 64.0, 64.0)
    split = _probe(model, resolved, inputs, "prefill", 2.0, 32.0, 32.0)
    four = _probe(model, resolved, inputs, "prefill", 4.0, 16.0, 16.0)
    one, two, many = whole.memory_s[:, 0], split.memory_s[:, 0], four.memory_s[:, 0]
    state = token & ~np.isclose(one, two, rtol=1e-12, atol=0.0)
    per_pass = (two - one)[state]
    if not np.allclose(many[state] - one[state], 3.0 * per_pass, rtol=FIT_TOLERANCE, atol=0.0):
        raise RuntimeError("a state operator's prefill memory is not linear in the sequences")
    work = np.array(
        [
            float(np.sum((split.flop - whole.flop)[state, 0])),
            float(np.sum((split.bytes - whole.bytes)[state, 0])),
        ]
    )
    return state, per_pass, work


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
    weight_offload: float = 0.0,
    kv_offload: float = 0.0,
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
        applies them. None: physics only. A profile whose per-sequence cost is not
        linear in the batch (``sequence_overhead_exponent`` != 1) is an `InputError`:
        the serving simulator's tables charge it linearly.
    weight_offload, kv_offload
        Shares in [0, 1] of the weights and of the KV cache (and states) kept in the
        platform's host memory and streamed over its link every step (`genz.offload`):
        a step takes ``max(device time, link bytes / link bandwidth)``.
    """
    precision = precision or Precision()
    parallelism = parallelism or Parallelism()
    check_parallelism(model, parallelism)
    for label, value in (("max_tokens", max_tokens), ("max_sequences", max_sequences)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TABLE:
            raise InputError(f"{label} must be an integer in [1, {MAX_TABLE}], got {value!r}")
    for label, share in (("--weight-offload", weight_offload), ("--kv-offload", kv_offload)):
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise InputError(f"{label} must be a share in [0, 1], got {share!r}")
    host = require_host(platform) if weight_offload or kv_offload else None
    scenario = Scenario(precision=precision, parallelism=parallelism)
    # Windowed layers are affine in their own aggregates (keys min(c, q + w' - 1) and
    # window pairs), fitted on those; `StepCost` forms them from the step's sums.
    window = float(model.kept_window_tokens) if model.num_window_layers else 0.0
    nominal = scenario_inputs(scenario)
    resolved = resolve(platform, runtime, nominal)  # the profile, resolved once
    _check_linear_sequence_cost(resolved)
    inputs = resolved.stored(nominal)
    # Several LoRA adapters: the tables probe the single-adapter twin (one adapter
    # touched per step) and the step adds the weights of the others it touches
    # (`genz.adapter_steps`); the weights resident are the real model's.
    adapters = float(model.lora_adapters) if model.lora_rank and model.lora_adapters > 1 else 0.0
    real, model = model, dataclasses.replace(model, lora_adapters=1) if adapters else model
    context, head, windowed = _classify(model, resolved, inputs)
    token = ~context & ~head
    state_ops, state_pass_s, state_pass_work = _state_operators(model, resolved, inputs, token)
    adapter_ops = np.zeros_like(token)
    if adapters:
        adapter_ops, adapter_weight_s, adapter_work = adapter_operators(
            lambda one, *shape: _probe(model if one else real, resolved, inputs, *shape),
            adapters,
            token,
        )
    tokens = np.arange(max_tokens + 1, dtype=float)
    rows = np.arange(max_sequences + 1, dtype=float)
    token_tables: list[Array] = []
    head_tables: list[Array] = []
    compute: list[Array] = []
    memory: list[Array] = []
    overhead: list[Array] = []
    token_work = np.zeros((2, 2, len(tokens)))
    head_work = np.zeros((2, 2, len(rows)))
    context_work = np.zeros((2, 2, 2, 4))  # quantity, form, full / windowed, feature
    # Prefill form of the state operators: compute, memory, overhead at every T.
    state_prefill = np.zeros((3, int(state_ops.sum()), len(tokens)))
    # Both forms of the adapter operators: compute, memory, overhead at every T.
    adapter_tables = np.zeros((2, 3, int(adapter_ops.sum()), len(tokens)))
    forms = (("prefill", _PREFILL_PROBES), ("decode", _DECODE_PROBES))
    for f, (form, probes) in enumerate(forms):
        # Token operators see T tokens (prefill: one sequence of T; decode: T sequences),
        # probed in slices so a long table never holds every operator at once. In the
        # prefill form the state operators are tabulated apart (module doc of
        # `genz.serving_steps`); a decode pass of T sequences writes T states, as a step.
        timed_tokens = (token & ~state_ops if form == "prefill" else token) & ~adapter_ops
        table = np.zeros(len(tokens))
        for start in range(0, len(tokens), TABLE_SLICE):
            part = tokens[start : start + TABLE_SLICE]
            if form == "prefill":
                probe = _probe(model, resolved, inputs, form, 1.0, part, part)
                for i, terms in enumerate((probe.compute_s, probe.memory_s, probe.overhead_s)):
                    state_prefill[i, :, start : start + TABLE_SLICE] = terms[state_ops]
            else:
                probe = _probe(model, resolved, inputs, form, part, 1.0, 1.0)
            for i, terms in enumerate((probe.compute_s, probe.memory_s, probe.overhead_s)):
                adapter_tables[f, i, :, start : start + TABLE_SLICE] = terms[adapter_ops]
            table[start : start + TABLE_SLICE] = probe.time_s[timed_tokens].sum(axis=0)
            for q, values in enumerate((probe.flop, probe.bytes)):
                token_work[q, f, start : start + TABLE_SLICE] = values[token].sum(axis=0)
        token_tables.append(np.where(tokens > 0, table, 0.0))
        state_prefill[:, :, 0] = 0.0
        adapter_tables[f, :, :, 0] = 0.0
        token_work[:, f, 0] = 0.0
        by_rows = _probe(model, resolved, inputs, form, rows, 1.0, 1.0)
        head_tables.append(np.where(rows > 0, by_rows.time_s[head].sum(axis=0), 0.0))
        for q, values in enumerate((by_rows.flop, by_rows.bytes)):
            head_work[q, f] = np.where(rows > 0, values[head].sum(axis=0), 0.0)
        if window:
            probes = _window_probes(probes, window)
        batch, query, ctx = probes.T
        timed = _probe(model, resolved, inputs, form, batch, query, ctx)
        features = _features(form, batch, query, ctx)
        w_features = _features(form, batch, query, ctx, window) if window else features
        width = 4
        full_ops = context & ~windowed
        for target, values in ((compute, timed.compute_s), (memory, timed.memory_s)):
            coef = np.zeros((int(context.sum()), width))
            part = windowed[context]
            if np.any(~part):
                coef[~part, : features.shape[1]] = _fit(values[full_ops], features)
            if np.any(part):
                coef[part, : features.shape[1]] = _fit(values[windowed], w_features)
            target.append(coef)
        overhead.append(timed.overhead_s[context][:, 0])
        for q, values in enumerate((timed.flop, timed.bytes)):
            for mask, feats, row in ((full_ops, features, 0), (windowed, w_features, 1)):
                if np.any(mask):
                    summed = _fit(values[mask].sum(axis=0, keepdims=True), feats)[0]
                    context_work[q, f, row, : len(summed)] = summed
    model = real  # the cache and the resident weights are the real model's
    phases = [resolved.phases[form] for form in ("prefill", "decode")]
    # Per-token slope (an SSM or linear-attention layer's fixed state per sequence is
    # not per token: it is the intercept at one token less the slope).
    one, two = np.ones(1), np.full(1, 2.0)
    kv_token = kv_cache_bytes_per_device(
        model, one, two, inputs.kv_bits, inputs.tp, inputs.ep, inputs.pp
    ) - kv_cache_bytes_per_device(model, one, one, inputs.kv_bits, inputs.tp, inputs.ep, inputs.pp)
    state = (
        kv_cache_bytes_per_device(model, one, one, inputs.kv_bits, inputs.tp, inputs.ep, inputs.pp)
        - kv_token * 1.0
    )
    window_share = 0.0
    if window:  # per-token slope past the window: the full layers' share only
        past = np.full(1, 2 * window + 1)
        full_slope = kv_cache_bytes_per_device(
            model, one, past + 1, inputs.kv_bits, inputs.tp, inputs.ep, inputs.pp
        ) - kv_cache_bytes_per_device(
            model, one, past, inputs.kv_bits, inputs.tp, inputs.ep, inputs.pp
        )
        window_share = float(kv_token[0] - full_slope[0])
    weights = _weight_bytes(model, inputs.weight_bits, inputs.tp, inputs.ep, inputs.pp)
    resident = float(weights[0]) * (1.0 - weight_offload)
    if host is not None and weight_offload * float(weights[0]) > host.capacity_bytes:
        raise InputError(
            f"--weight-offload needs {weight_offload * float(weights[0]) / 1e9:.3g} GB (decimal) "
            f"of host memory, {platform.name}'s {host.name} holds {host.capacity_bytes / 1e9:.3g} GB"
        )
    return StepCost(
        model=model.name,
        platform=platform.name,
        token_time_s=np.stack(token_tables),
        head_time_s=np.stack(head_tables),
        context_compute=np.stack(compute),
        context_memory=np.stack(memory),
        context_overhead_s=np.stack(overhead),
        kv_bytes_per_token=float(kv_token[0]),
        state_bytes_per_sequence=float(state[0]),
        window_tokens=window,
        windowed=windowed[context] if window else None,
        window_kv_bytes_per_token=window_share,
        offloaded_weights_bytes=float(weights[0]) - resident,
        kv_offload=float(kv_offload),
        host_link_bytes_per_s=0.0 if host is None else host.link_bandwidth_bytes_per_s,
        weights_bytes=resident,
        capacity_bytes=platform.main_memory.capacity_bytes,
        fixed_step_s=np.array([phase.step_overhead_s for phase in phases]),
        fixed_sequence_s=np.array([phase.sequence_overhead_s for phase in phases]),
        token_work=token_work,
        head_work=head_work,
        context_work=context_work,
        runtime="ideal" if runtime is None else runtime.name,
        state_prefill_s=state_prefill if state_ops.any() else None,
        state_pass_s=state_pass_s if state_ops.any() else None,
        state_pass_work=state_pass_work if state_ops.any() else None,
        lora_adapters=adapters,
        adapter_tables=adapter_tables if adapters else None,
        adapter_weight_s=adapter_weight_s if adapters else None,
        adapter_work=adapter_work if adapters else None,
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


def _check_linear_sequence_cost(resolved: ResolvedProfile) -> None:
    """Refuse a profile whose per-sequence step cost grows as ``batch ** theta``, theta
    != 1 (`genz.PhaseProfile.sequence_overhead_exponent`): the step tables and the
    compiled scheduler loops charge ``sequence_overhead_s x sequences``, so serving it
    would silently drop the exponent."""
    for form, phase in resolved.phases.items():
        if phase.sequence_overhead_exponent != 1.0:
            raise InputError(
                f"runtime profile {resolved.name!r}: {form} sequence_overhead_exponent is "
                f"{phase.sequence_overhead_exponent:.4g}; the serving simulator accepts only 1 "
                "(its per-sequence cost is linear in the batch): use predict, or a profile "
                "fitted without the sublinear term"
            )
