"""Peer comparison with genz-llm (GenZ-LLM-Analyzer, PyPI ``genz-llm``).

Runs our `genz.predictor` and genz-llm's ``prefill_moddeling`` / ``decode_moddeling``
on one grid (Llama-2-7B and Llama-2-70B on A100-SXM-80GB and H100-SXM, batch 1 and
16, 1024 tokens in, 128 out, 16-bit weights, activations and KV cache) and prints:

A. the ratio of our TTFT and TPOT to genz-llm's at equal efficiency (ours derated
   to compute/memory/interconnect efficiency 1.0 with no kernel overhead, genz-llm
   at its default ``system_eff=1``), and for every operator group whose time differs
   by more than 20% (and takes at least 1% of the phase) what differs, computed from
   both tools' per-operator FLOP and compute/memory times;
B. the same ratios with our shipped presets (genz-llm still at 1.0), split into our
   efficiency factor per bound and the operator-model ratio of table A;
C. what each tool does past the capacity wall (one call that does not fit).

Speed (predictions per second of each tool, interleaved in one process, and one
`evaluate_grid` call over 10,000 scenarios) is measured by ``benchmarks/vs_peers.py``,
against llm-analysis as well.

genz-llm gets our presets' numbers. It reads bandwidths and memory sizes in binary
units (its "GB" is 2^30 bytes), so our decimal SI values are converted; it runs with
``Bb=1`` (its decode default is 4 beams) and ``bits='bf16'``. Llama-2-70B runs on the
smallest tensor-parallel degree at which it fits. genz-llm writes a CSV per call
under /tmp/genz/data (its own behaviour).

Run: ``pip install -e '.[bench]' && python benchmarks/vs_genz.py`` (the bench extra
installs genz-llm; this script installs nothing).
"""

from __future__ import annotations

import importlib.metadata
import os
import platform as host
import sys
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from genz import (
    ModelConfig,
    OperatorCost,
    Parallelism,
    Prediction,
    Scenario,
    load_model,
    predict,
)
from roofline import Efficiency, Platform, derive_platform, load_platform

GENZ_MODELS = {"llama-2-7b": "llama2_7b", "llama-2-70b": "llama2_70b"}
HARDWARE = {"a100-sxm-80gb": "A100_80GB_GPU", "h100-sxm": "H100_GPU"}  # ours: genz-llm preset
BATCHES = (1, 16)
INPUT_TOKENS, OUTPUT_TOKENS = 1024, 128
TP_CHOICES = (1, 2, 4, 8)
GIB = 2.0**30
FLAG = 0.2  # |ratio - 1| above which an operator group is explained ...
MIN_SHARE = 0.01  # ... if it takes at least this share of the phase on either side
OUR_GROUPS = {
    "attn_norm": "norms+act",
    "ffn_norm": "norms+act",
    "ffn_activation": "norms+act",
    "final_norm": "norms+act",
}
GENZ_GROUPS = {
    "embeddings": "embedding",
    "QKV": "qkv_proj",
    "Out Proj": "out_proj",
    "up+gate": "ffn_up_gate",
    "down": "ffn_down",
    "classifier": "lm_head",
}


@dataclass
class Side:
    """One tool's totals for one operator group in one phase (all layers), SI units."""

    time_s: float = 0.0
    memory_s: float = 0.0
    flop: float = 0.0
    calls: dict[str, float] = field(default_factory=dict)
    bounds: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, times: tuple[float, float], flop: float, bound: str, calls: float):
        self.time_s += times[0]
        self.memory_s += times[1]
        self.flop += flop
        self.calls[name] = self.calls.get(name, 0.0) + calls
        self.bounds[bound] = self.bounds.get(bound, 0.0) + times[0]

    @property
    def bound(self) -> str:
        return max(self.bounds, key=self.bounds.__getitem__)

    def per_call_s(self) -> float:
        return self.time_s / sum(self.calls.values())

    def listing(self) -> str:
        return ", ".join(f"{name} x{calls:g}" for name, calls in self.calls.items())


def our_groups(operators: Iterable[OperatorCost]) -> dict[str, Side]:
    groups: dict[str, Side] = {}
    for op in operators:
        group = "collectives" if op.kind == "collective" else OUR_GROUPS.get(op.name, op.name)
        times = (op.time_s, op.memory_s)
        groups.setdefault(group, Side()).add(op.name, times, op.flop, op.bound.value, op.layers)
    return groups


def genz_groups(model_df) -> dict[str, Side]:
    """Per-group totals of a genz-llm op table (its Repeat blocks expanded)."""
    groups: dict[str, Side] = {}
    multiplier = 1.0
    columns = ("Latency (msec)", "Memory time (msec)")
    for row in model_df.to_dict("records"):
        kind, name = row["Op Type"], row["Layer Name"]
        if kind in ("Repeat", "EndRepeat"):
            multiplier = (
                multiplier * row["Dimension"] if kind == "Repeat" else multiplier / row["Dimension"]
            )
            continue
        if kind in ("Logit", "Attend"):
            group = "attention"
        else:
            group = "collectives" if kind == "Sync" else GENZ_GROUPS.get(name, name)
        times = tuple(float(row[column]) * 1e-3 * multiplier for column in columns)
        bound = {"Compute": "compute", "Memory": "memory"}.get(row["Bound"], "interconnect")
        flop = float(row["Num ops (MFLOP)"]) * 1e6 * multiplier
        groups.setdefault(group, Side()).add(name, times, flop, bound, multiplier)
    return groups


def genz_system(platform: Platform) -> dict[str, float | bool]:
    """Our preset's numbers in genz-llm's units (TFLOP/s; its GB = GiB for size and bw)."""
    link = platform.interconnect
    assert link is not None
    return {
        "Flops": platform.peak("bf16") / 1e12,
        "Memory_size": platform.main_memory.capacity_bytes / GIB,
        "Memory_BW": platform.main_memory.bandwidth_bytes_per_s / GIB,
        "ICN": link.link_bandwidth_bytes_per_s / GIB,
        "ICN_LL": link.link_latency_s * 1e6,
        "real_values": True,
    }


def run_genz(
    genz,
    name: str,
    system: dict,
    batch: int,
    tp: int,
    phase: str,
    tokens: tuple[int, int] = (INPUT_TOKENS, OUTPUT_TOKENS),
):
    """One genz-llm call at its default efficiency 1.0 (``tokens`` = input, output);
    returns its output dict."""
    common = {"model": name, "batch_size": batch, "input_tokens": tokens[0]}
    common |= {"system_name": system, "system_eff": 1, "bits": "bf16", "tensor_parallel": tp}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if phase == "prefill":
            return genz.prefill_moddeling(**common)
        return genz.decode_moddeling(**common, output_tokens=tokens[1], Bb=1)


@dataclass(frozen=True)
class Case:
    model: ModelConfig
    genz_name: str
    hardware: str
    batch: int
    tp: int

    @property
    def scenario(self) -> Scenario:
        mesh = Parallelism(tp=self.tp)
        return Scenario(self.batch, INPUT_TOKENS, OUTPUT_TOKENS, parallelism=mesh)

    @property
    def label(self) -> str:
        return f"{self.model.name:<11} {self.hardware:<13} tp{self.tp}  {self.batch:>5}"


def cases() -> list[Case]:
    """The grid; each model on the smallest tp at which our prediction fits batch 16."""
    rows = []
    for key, genz_name in GENZ_MODELS.items():
        model = load_model(key)
        for hardware in HARDWARE:
            preset = load_platform(hardware)
            tp = next(
                tp
                for tp in TP_CHOICES
                if predict(
                    model, preset, Case(model, genz_name, hardware, max(BATCHES), tp).scenario
                ).fits
            )
            rows.extend(Case(model, genz_name, hardware, batch, tp) for batch in BATCHES)
    return rows


def ratio(mine: float, theirs: float) -> str:
    return f"x{mine / theirs:.3g}" if theirs else "n/a"


def described(value: float, expected: float, meaning: str) -> str:
    """``value``, saying what it equals only when it does (to 0.1%)."""
    if abs(value - expected) <= 1e-3 * abs(expected):
        return f"{value:,.0f} = {meaning}"
    return f"{value:,.0f} (not {meaning} = {expected:,.0f})"


def pairs_per_head(side: Side, case: Case, softmax: bool) -> float:
    """(query, key) pairs per head per sequence, recovered from attention FLOP: genz-llm's
    Logit + Attend do 4 d FLOP per pair, ours 4 d + 5 (softmax)."""
    model = case.model
    per_pair = 4.0 * model.head_dim + (5.0 if softmax else 0.0)
    return side.flop / (per_pair * case.batch * model.num_heads / case.tp * model.num_layers)


def explain(genz, group: str, ours: Side, theirs: Side, case: Case, phase: str) -> str:
    """Why one operator group differs, from the numbers both tools report."""
    if not theirs.calls:
        return f"only ours ({ours.listing()}; {ours.bound}-bound): genz-llm has no such operator"
    if not ours.calls:
        return f"only genz-llm ({theirs.listing()}; {theirs.bound}-bound)"
    parts = [
        f"{ours.bound}-bound ours, {theirs.bound}-bound genz-llm; FLOP "
        f"{ratio(ours.flop, theirs.flop)}, memory time {ratio(ours.memory_s, theirs.memory_s)}"
    ]
    if group == "attention" and phase == "prefill":
        mine, peer = pairs_per_head(ours, case, True), pairs_per_head(theirs, case, False)
        prompt = INPUT_TOKENS
        parts.append(
            f"pairs per head: ours {described(mine, prompt * (prompt + 1) / 2, 'causal s(s+1)/2')},"
            f" genz-llm {described(peer, prompt**2, 's^2, the full square: no causal mask')}"
        )
    elif group == "attention":
        mine, peer = pairs_per_head(ours, case, True), pairs_per_head(theirs, case, False)
        parts.append(
            "context per decode step: ours "
            f"{described(mine, INPUT_TOKENS + OUTPUT_TOKENS / 2, 'input + output/2, the mean')}, "
            f"genz-llm {described(peer, INPUT_TOKENS + OUTPUT_TOKENS, 'input + output, the final')}"
        )
    elif group == "lm_head":
        per_row = 2 * case.model.hidden_size * case.model.vocab_size / case.tp * case.batch
        parts.append(
            f"positions through the LM head per sequence: ours {ours.flop / per_row:g}, "
            f"genz-llm {theirs.flop / per_row:g}"
        )
    elif group == "embedding" and ours.flop == 0:
        model = case.model
        one_hot_gflop = 2e-9 * case.batch * INPUT_TOKENS * model.hidden_size * model.vocab_size
        meaning = "2 B s h V/tp GFLOP, a one-hot GEMM over the vocabulary"
        parts.append(
            f"genz-llm {described(theirs.flop / 1e9, one_hot_gflop / case.tp, meaning)}; "
            "ours a gather (no FLOP)"
        )
    elif group == "collectives":
        preset = load_platform(case.hardware)
        latency = 2 * (case.tp - 1) * preset.interconnect.link_latency_s
        system = genz.get_inference_system(system_name=genz_system(preset), bits="bf16")
        tiny = genz.get_AR_time(1, case.tp, system) * 1e-3
        parts.append(
            f"per call ours {ours.per_call_s() * 1e6:.1f} us ({ours.listing()}), genz-llm "
            f"{theirs.per_call_s() * 1e6:.1f} us ({theirs.listing()}); ring latency 2(n-1) x "
            f"link latency = {latency * 1e6:.1f} us in both; genz-llm's all-reduce of 1 byte takes "
            f"{tiny * 1e6:.1f} us: a fixed {(tiny - latency) * 1e6:.1f} us per collective"
        )
    return "; ".join(parts)


def operator_notes(genz, case: Case, phase: str, ours: Prediction, genz_out) -> list[str]:
    """Explanations of the operator groups whose times differ by more than FLAG."""
    mine_phase = getattr(ours, phase)
    groups, peer = our_groups(mine_phase.operators), genz_groups(genz_out["model_df"])
    peer_total = float(genz_out["Latency"]) * 1e-3
    notes = []
    for name in sorted(set(groups) | set(peer), key=lambda g: -groups.get(g, Side()).time_s):
        mine, theirs = groups.get(name, Side()), peer.get(name, Side())
        share = max(mine.time_s / mine_phase.time_s, theirs.time_s / peer_total)
        if share < MIN_SHARE or (
            mine.calls and theirs.calls and abs(mine.time_s / theirs.time_s - 1) <= FLAG
        ):
            continue
        notes.append(
            f"    {phase:<7} {name:<12} {ratio(mine.time_s, theirs.time_s):>7} "
            f"({mine.time_s * 1e3:.3f} vs {theirs.time_s * 1e3:.3f} ms): "
            + explain(genz, name, mine, theirs, case, phase)
        )
    return notes


def efficiency_notes(case: Case, phase: str, shipped: Prediction, equal: Prediction, peer_s: float):
    """Split a shipped-defaults ratio: our efficiency factor per bound x the operator model."""
    mine, base = getattr(shipped, phase), getattr(equal, phase)
    if abs(mine.time_s / peer_s - 1) <= FLAG:
        return []
    efficiency = load_platform(case.hardware).efficiency
    derate = {"compute": efficiency.compute, "memory": efficiency.memory}
    derate["interconnect"] = efficiency.interconnect
    at_equal = {op.name: op.time_s for op in base.operators}
    parts = []
    for bound in ("compute", "memory", "interconnect", "overhead"):
        ops = [op for op in mine.operators if op.bound.value == bound]
        if not ops:
            continue
        shipped_s, equal_s = sum(op.time_s for op in ops), sum(at_equal[op.name] for op in ops)
        if bound in derate:
            change = f"x{shipped_s / equal_s:.2f} (1/{derate[bound]:g} = {1 / derate[bound]:.2f})"
        else:  # launch-dominated: a ratio to a near-zero time says nothing
            change = f"{equal_s * 1e3:.3f} -> {shipped_s * 1e3:.3f} ms"
        parts.append(f"{bound}-bound [{' '.join(op.name for op in ops)}] {change}")
    overhead_ms = sum(op.overhead_s for op in mine.operators) * 1e3
    return [
        f"    {phase:<7} x{mine.time_s / peer_s:.2f} = our efficiencies x{mine.time_s / base.time_s:.2f}"
        f" x operator model x{base.time_s / peer_s:.2f} (table A); by our bound: "
        + "; ".join(parts)
        + f"; kernel overhead {overhead_ms:.2f} ms of it"
    ]


def comparison_table(genz, shipped: bool, rows: list[Case], peer: dict) -> None:
    print(
        f"{'model':<11} {'hardware':<13} mesh batch | TTFT ours / genz-llm = ratio | TPOT ours / genz-llm = ratio"
    )
    for case in rows:
        preset = load_platform(case.hardware)
        ideal = derive_platform(preset, efficiency=Efficiency(1.0, 1.0, 1.0), kernel_overhead_s=0.0)
        equal = predict(case.model, ideal, case.scenario)
        ours = predict(case.model, preset, case.scenario) if shipped else equal
        prefill_s = float(peer[case, "prefill"]["Latency"]) * 1e-3
        decode_s = float(peer[case, "decode"]["Latency"]) * 1e-3
        print(
            f"{case.label} | {ours.ttft_s * 1e3:8.2f} / {prefill_s * 1e3:8.2f} ms = {ours.ttft_s / prefill_s:4.2f}"
            f" | {ours.tpot_s * 1e3:6.2f} / {decode_s * 1e3:6.2f} ms = {ours.tpot_s / decode_s:4.2f}"
        )
        if shipped:
            notes = efficiency_notes(case, "prefill", ours, equal, prefill_s)
            notes += efficiency_notes(case, "decode", ours, equal, decode_s)
        else:
            notes = operator_notes(genz, case, "prefill", ours, peer[case, "prefill"])
            notes += operator_notes(genz, case, "decode", ours, peer[case, "decode"])
        print("\n".join(notes))


def capacity_wall(genz) -> None:
    """genz-llm raises when a model does not fit; we return a capacity verdict."""
    model, hardware = load_model("llama-2-70b"), "a100-sxm-80gb"
    preset = load_platform(hardware)
    ours = predict(model, preset, Scenario(1, INPUT_TOKENS, OUTPUT_TOKENS))
    try:
        run_genz(genz, GENZ_MODELS["llama-2-70b"], genz_system(preset), 1, 1, "decode")
        theirs = "returned a result"
    except ValueError as error:
        theirs = f"raises ValueError: {str(error).splitlines()[0].strip()}"
    print(f"\nC. Capacity wall: {model.name}, tp1, batch 1 on {hardware}")
    print(f"  genz-llm {theirs}")
    print(
        f"  ours: fits={ours.fits}, footprint {ours.footprint.total_bytes / 1e9:.1f} GB (decimal) > "
        f"{preset.main_memory.capacity_bytes / 1e9:.0f} GB, TTFT {ours.ttft_s * 1e3:.0f} ms and TPOT "
        f"{ours.tpot_s * 1e3:.1f} ms still reported; {ours.suggestions[0] if ours.suggestions else ''}"
    )


def main() -> int:
    start = time.perf_counter()
    try:
        import GenZ as genz
        from Systems.system_configs import system_configs
    except ImportError:
        sys.exit("vs_genz: genz-llm is not installed (optional): pip install -e '.[bench]'")
    import_s = time.perf_counter() - start
    print(
        f"Machine: nproc {len(os.sched_getaffinity(0))}, {host.machine()}, load average "
        f"{os.getloadavg()[0]:.2f}; Python {host.python_version()}, numpy {np.__version__}, "
        f"genz-llm {importlib.metadata.version('genz-llm')} (import {import_s:.1f} s, not timed below)"
    )
    print("genz-llm systems built from our presets (its GB = 2^30 bytes):")
    for hardware, theirs in HARDWARE.items():
        system = genz_system(load_platform(hardware))
        own = system_configs[theirs]["Memory_BW"] * GIB / 1e9
        print(
            f"  {hardware}: {', '.join(f'{k}={v:.4g}' for k, v in system.items() if k != 'real_values')}"
            f"  (its own preset {theirs} would read {own:,.0f} GB/s where ours says "
            f"{system['Memory_BW'] * GIB / 1e9:,.0f})"
        )
    rows = cases()
    peer = {}
    for case in rows:
        system = genz_system(load_platform(case.hardware))
        for phase in ("prefill", "decode"):
            peer[case, phase] = run_genz(genz, case.genz_name, system, case.batch, case.tp, phase)
    print(
        "\nA. Equal efficiency: ours compute/memory/interconnect efficiency 1.0, no kernel overhead;"
    )
    print("   genz-llm system_eff=1 (its default). Operator groups off by > 20% are explained.")
    comparison_table(genz, False, rows, peer)
    shipped = "; ".join(
        f"{name} compute {p.efficiency.compute:g}, memory {p.efficiency.memory:g}, interconnect "
        f"{p.efficiency.interconnect:g}, {p.kernel_overhead_s * 1e6:g} us per kernel"
        for name, p in ((name, load_platform(name)) for name in HARDWARE)
    )
    print(f"\nB. Shipped defaults: ours as preset ({shipped}); genz-llm system_eff=1.")
    comparison_table(genz, True, rows, peer)
    capacity_wall(genz)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
