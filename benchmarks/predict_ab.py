"""Warm `genz.predict` of this checkout against an earlier commit's genz, in one process.

The earlier commit's ``genz/`` (``git archive``) is loaded beside this checkout's as the
package ``genz_base`` (both use this checkout's ``roofline``), and the two are timed in
interleaved rounds, so a shared machine's load moves both alike: per case (the three
scenarios of ``vs_peers.py``, without a runtime profile and with the vLLM and llama.cpp
profiles) the CPU medians, their ratio, and whether TTFT and TPOT are equal bit for bit.

    python benchmarks/predict_ab.py --base 82210b9 [--rounds 21]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import genz
from roofline import load_platform

ROOT = Path(__file__).resolve().parent.parent
#: (model, platform, tp, batch, input tokens, output tokens), as in vs_peers.py.
CASES = (
    ("llama-2-7b", "a100-sxm-80gb", 1, 1, 1024, 128),
    ("llama-2-7b", "h100-sxm", 1, 16, 4096, 256),
    ("llama-2-70b", "h100-sxm", 4, 16, 1024, 128),
)
RUNTIMES = (None, "vllm", "llama.cpp")
CALLS = 50


def load_base(commit: str, folder: Path) -> ModuleType:
    """``genz/`` of ``commit`` extracted into ``folder`` and imported as ``genz_base``."""
    archive = subprocess.run(
        ["git", "archive", commit, "genz"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    spec = importlib.util.spec_from_file_location(
        "genz_base",
        folder / "genz" / "__init__.py",
        submodule_search_locations=[str(folder / "genz")],
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["genz_base"] = module
    spec.loader.exec_module(module)
    return module


def cpu_s(call: Any) -> float:
    start = time.process_time()
    for _ in range(CALLS):
        call()
    return (time.process_time() - start) / CALLS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="commit whose genz is the baseline")
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = load_base(args.base, Path(folder))
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; base {args.base}")
        print(f"warm predict(), CPU median of {args.rounds} interleaved rounds of {CALLS} calls")
        for runtime in RUNTIMES:
            for model, hw, tp, batch, prompt, output in CASES:
                platform = load_platform(hw)
                calls, results = {}, {}
                for tag, package in (("base", base), ("new", genz)):
                    scenario = package.Scenario(
                        batch=batch,
                        input_tokens=prompt,
                        output_tokens=output,
                        parallelism=package.Parallelism(tp=tp),
                    )
                    profile = None if runtime is None else package.load_runtime(runtime)
                    loaded = package.load_model(model)

                    def call(p=package, m=loaded, h=platform, s=scenario, r=profile):  # type: ignore[no-untyped-def]
                        return p.predict(m, h, s, runtime=r)

                    calls[tag], results[tag] = call, call()
                    cpu_s(call)  # warm-up
                samples: dict[str, list[float]] = {"base": [], "new": []}
                for _ in range(args.rounds):
                    for tag, call in calls.items():
                        samples[tag].append(cpu_s(call))
                old, new = (statistics.median(samples[tag]) for tag in ("base", "new"))
                same = (results["base"].ttft_s, results["base"].tpot_s) == (
                    results["new"].ttft_s,
                    results["new"].tpot_s,
                )
                print(
                    f"{runtime or 'none':10s} {model:12s} {hw:14s} tp{tp} b{batch:<3d} "
                    f"base {old * 1e3:.4f} ms  new {new * 1e3:.4f} ms  new/base {new / old:.3f}  "
                    f"TTFT and TPOT equal: {same}"
                )


if __name__ == "__main__":
    main()
