"""Cold start of the ``codesign`` CLI, side by side with llm-analysis' CLI.

Each command runs in a fresh interpreter (subprocess) ``--runs`` times after one
discarded warm-up run (which fills the OS file cache and writes ``.pyc`` files, as an
installed package has them); the median wall time is reported. Targets (issue #11):
``codesign --help`` < 0.3 s and ``codesign predict`` < 1.0 s. llm-analysis, when
installed, runs its ``infer`` on a comparable 7B model and H100 in the same run, so the
ratios hold under the machine's load at that moment (the absolute times do not).

Run from the repository root: ``python benchmarks/startup.py [--runs 9]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS_S = {"codesign --help": 0.3, "codesign predict": 1.0}


def commands() -> dict[str, list[str]]:
    """Label -> argv of every command timed (llm-analysis only when installed)."""
    python = sys.executable
    timed = {
        "python -c pass (interpreter floor)": [python, "-c", "pass"],
        "codesign --help": [python, "-m", "app.cli", "--help"],
        "codesign predict": [
            python,
            "-m",
            "app.cli",
            "predict",
            "--model",
            "llama-3.1-8b",
            "--hw",
            "h100-sxm",
        ],
    }
    if importlib.util.find_spec("llm_analysis") is not None:
        timed["llm-analysis infer (7B, H100)"] = [
            python,
            "-m",
            "llm_analysis.analysis",
            "infer",
            "--model_name",
            "NousResearch_Llama-2-7b-hf",
            "--gpu_name",
            "h100-sxm-80gb",
            "--log_level",
            "ERROR",
        ]
    return timed


def environment() -> dict[str, str]:
    """This checkout's code and data; bytecode caching on (as after ``pip install``)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(ROOT)
    env["CODESIGN_DATA_DIR"] = str(ROOT / "data")
    return env


def median_wall_s(argv: list[str], runs: int, env: dict[str, str]) -> float:
    """Median wall time of ``runs`` fresh processes, seconds (after one warm-up run)."""
    times = []
    for index in range(runs + 1):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True)
        if index:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="timed runs per command")
    args = parser.parse_args()
    env = environment()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    medians = {}
    for label, argv in commands().items():
        medians[label] = median_wall_s(argv, args.runs, env)
        print(f"{label:<40} median {medians[label]:.3f} s over {args.runs} runs")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    floor = medians["python -c pass (interpreter floor)"]
    peer = next((label for label in medians if label.startswith("llm-analysis")), None)
    for label, target in TARGETS_S.items():
        ratios = f"{medians[label] / floor:.1f}x the interpreter floor"
        if peer is not None:
            ratios += f", {medians[label] / medians[peer]:.2f}x llm-analysis infer"
        verdict = "met" if medians[label] < target else "missed"
        print(f"{label}: {medians[label]:.3f} s ({ratios}); target < {target} s {verdict}")
    if peer is None:
        print("llm-analysis not installed: no peer comparison (pip install llm-analysis)")


if __name__ == "__main__":
    main()
