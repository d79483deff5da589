"""Speed against the peers, in one process: warm `genz.predict()` against llm-analysis
(PyPI ``llm-analysis``) and genz-llm (PyPI ``genz-llm``), and `genz.evaluate_grid`
over 10,000 scenarios.

Each case is one serving scenario (16-bit weights, activations and KV cache) that all
tools are given with their own shipped configs: ours from ``data/``, llm-analysis
from its ``model_configs`` / ``gpu_configs`` (``infer()``, its one-call API, with the
configs already loaded), genz-llm from our presets converted as in
``benchmarks/vs_genz.py`` (``prefill_moddeling`` + ``decode_moddeling``). Calls are
warm (one untimed call first) and interleaved round by round, so the tools share the
machine's load; each time is the median over rounds of the mean of a batch of calls,
wall clock, with CPU time in brackets (on a shared machine wall time includes waiting
for a core; CPU time does not).

Prints a table of medians and ratios and "target ... met/missed" lines for the
targets of issue #11: warm predict() under 0.3 ms (every case, wall clock) and
faster than llm-analysis, evaluate_grid over 10,000 scenarios under 0.05 s.

Run: ``pip install -e '.[bench]' && python benchmarks/vs_peers.py [--rounds 7]``
(the bench extra installs llm-analysis and genz-llm; a peer that is not installed
is skipped and said so).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import logging
import os
import platform as host
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from genz import Parallelism, Scenario, evaluate_grid, load_model, predict
from roofline import load_platform

PREDICT_TARGET_S = 0.3e-3
GRID_TARGET_S = 0.05
GRID_SCENARIOS = 10_000
#: genz-llm takes about a second per scenario: fewer rounds of it.
GENZ_ROUNDS = 3


@dataclass(frozen=True)
class Case:
    """One scenario and the names each tool knows its model and hardware by."""

    model: str
    hardware: str
    batch: int
    input_tokens: int
    output_tokens: int
    tp: int
    llm_analysis_model: str
    llm_analysis_gpu: str
    genz_model: str

    @property
    def label(self) -> str:
        return (
            f"{self.model} {self.hardware} tp{self.tp} b{self.batch} "
            f"{self.input_tokens}/{self.output_tokens}"
        )


CASES = (
    Case("llama-2-7b", "a100-sxm-80gb", 1, 1024, 128, 1,
         "NousResearch_Llama-2-7b-hf", "a100-sxm-80gb", "llama2_7b"),
    Case("llama-2-7b", "h100-sxm", 16, 4096, 256, 1,
         "NousResearch_Llama-2-7b-hf", "h100-sxm-80gb", "llama2_7b"),
    Case("llama-2-70b", "h100-sxm", 16, 1024, 128, 4,
         "upstage_Llama-2-70b-instruct-v2", "h100-sxm-80gb", "llama2_70b"),
)  # fmt: skip


def timed(function: Callable[[], object], calls: int) -> tuple[float, float]:
    """(wall, CPU) seconds per call of ``function``, over ``calls`` calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        function()
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    """Median wall and median CPU seconds of (wall, CPU) samples."""
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def ours(case: Case) -> Callable[[], object]:
    model, platform = load_model(case.model), load_platform(case.hardware)
    scenario = Scenario(
        case.batch, case.input_tokens, case.output_tokens, parallelism=Parallelism(tp=case.tp)
    )
    return lambda: predict(model, platform, scenario)


def llm_analysis(case: Case) -> Callable[[], object] | None:
    try:
        from llm_analysis.analysis import infer
    except ImportError:
        return None
    logging.getLogger("llm_analysis").setLevel(logging.ERROR)
    arguments = {
        "model_name": case.llm_analysis_model,
        "gpu_name": case.llm_analysis_gpu,
        "dtype_name": "w16a16e16",
        "log_level": "ERROR",
        "batch_size_per_gpu": case.batch,
        "seq_len": case.input_tokens,
        "num_tokens_to_generate": case.output_tokens,
        "tp_size": case.tp,
    }
    return lambda: infer(**arguments)


def genz_llm(case: Case) -> Callable[[], object] | None:
    try:
        import GenZ
    except ImportError:
        return None
    from vs_genz import genz_system, run_genz  # the accuracy comparison next to this script

    system = genz_system(load_platform(case.hardware))

    def both() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            for phase in ("prefill", "decode"):
                run_genz(
                    GenZ,
                    case.genz_model,
                    system,
                    case.batch,
                    case.tp,
                    phase,
                    tokens=(case.input_tokens, case.output_tokens),
                )

    return both


def version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def grid_axes() -> dict[str, np.ndarray]:
    """batch x input x output x tp x weight bits = 10 x 10 x 10 x 5 x 2 scenarios."""
    return {
        "batch": np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512.0])[:, None, None, None, None],
        "input_tokens": np.geomspace(128, 65536, 10).round()[None, :, None, None, None],
        "output_tokens": np.geomspace(16, 8192, 10).round()[None, None, :, None, None],
        "tp": np.array([1, 2, 4, 8, 16.0])[None, None, None, :, None],
        "weight_bits": np.array([16.0, 4.0])[None, None, None, None, :],
    }


def verdict(met: bool) -> str:
    return "met" if met else "missed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--calls", type=int, default=200, help="our calls per round")
    args = parser.parse_args()
    print(
        f"Machine: nproc {len(os.sched_getaffinity(0))}, {host.machine()}, load average "
        f"{os.getloadavg()[0]:.2f}; Python {host.python_version()}, numpy {np.__version__}; "
        f"llm-analysis {version('llm-analysis')}, genz-llm {version('genz-llm')}"
    )
    tools = {"ours": ours, "llm-analysis": llm_analysis, "genz-llm": genz_llm}
    calls = {"ours": args.calls, "llm-analysis": max(1, args.calls // 4), "genz-llm": 1}
    results: dict[tuple[str, str], tuple[float, float]] = {}
    for case in CASES:
        functions = {name: make(case) for name, make in tools.items()}
        runnable = {name: f for name, f in functions.items() if f is not None}
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in runnable}
        for function in runnable.values():
            function()  # warm: first-call imports and caches are not timed
        for _ in range(args.rounds):
            for name, function in runnable.items():
                if name != "genz-llm" or len(samples[name]) < GENZ_ROUNDS:
                    samples[name].append(timed(function, calls[name]))
        for name, values in samples.items():
            results[case.label, name] = medians(values)
    print(
        f"\nWarm predict() per scenario, median of {args.rounds} interleaved rounds "
        f"(genz-llm: {GENZ_ROUNDS} rounds of one call); wall clock [CPU]:"
    )
    header = (
        f"{'case':<42} {'ours':>17} {'llm-analysis':>17} {'ratio':>7} {'genz-llm':>15} {'ratio':>7}"
    )
    print(header)
    for case in CASES:
        wall, cpu = results[case.label, "ours"]
        row = f"{case.label:<42} {wall * 1e3:7.3f} [{cpu * 1e3:.3f}] ms"
        for peer, unit, scale in (("llm-analysis", "ms", 1e3), ("genz-llm", "s", 1.0)):
            if (case.label, peer) not in results:
                row += f" {'not installed':>17} {'':>7}"
                continue
            peer_wall, peer_cpu = results[case.label, peer]
            row += (
                f" {peer_wall * scale:7.3f} [{peer_cpu * scale:.3f}] {unit}"
                f" {peer_wall / wall:6.1f}x"
            )
        print(row)
    print("  (ratio = peer time / our time, wall clock; > 1: ours is faster)")

    case = CASES[0]
    model, platform = load_model(case.model), load_platform(case.hardware)
    axes = grid_axes()
    grid = evaluate_grid(model, platform, **axes)
    assert grid.ttft_s.size == GRID_SCENARIOS
    grid_samples = [timed(lambda: evaluate_grid(model, platform, **axes), 1) for _ in range(9)]
    grid_wall, grid_cpu = medians(grid_samples)
    print(
        f"\nevaluate_grid over {GRID_SCENARIOS:,} scenarios ({case.model}, {case.hardware}; "
        "batch x input x output x tp x weight bits), median of 9 calls: "
        f"{grid_wall:.4f} s [{grid_cpu:.4f} s CPU] = {GRID_SCENARIOS / grid_wall:,.0f} scenarios/s"
    )

    slowest = max(results[c.label, "ours"][0] for c in CASES)
    print(
        f"\ntarget warm predict() < {PREDICT_TARGET_S * 1e3:g} ms (slowest case, wall clock): "
        f"{verdict(slowest < PREDICT_TARGET_S)} ({slowest * 1e3:.3f} ms; CPU "
        f"{max(results[c.label, 'ours'][1] for c in CASES) * 1e3:.3f} ms)"
    )
    if all((c.label, "llm-analysis") in results for c in CASES):
        ratios = [results[c.label, "llm-analysis"][0] / results[c.label, "ours"][0] for c in CASES]
        cpu = [results[c.label, "llm-analysis"][1] / results[c.label, "ours"][1] for c in CASES]
        print(
            f"target warm predict() faster than llm-analysis (every case, wall clock): "
            f"{verdict(min(ratios) > 1)} (ratios {', '.join(f'{r:.2f}x' for r in ratios)}; "
            f"CPU time {', '.join(f'{r:.2f}x' for r in cpu)})"
        )
    else:
        print("target warm predict() faster than llm-analysis: not measured (not installed)")
    print(
        f"target evaluate_grid {GRID_SCENARIOS:,} scenarios < {GRID_TARGET_S:g} s: "
        f"{verdict(grid_wall < GRID_TARGET_S)} ({grid_wall:.4f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
