"""Scale of the co-design grid: a 1,024,000-point space (examples/scale_space.yaml)
evaluated in one process, with its progress bar; target under 60 s on 2 cores.

Prints the points evaluated, seconds, points per second and the ratio to the 60 s
target (the time includes loading the law, the frontier and the result table).

Run: ``python benchmarks/codesign_scale.py`` (``--method ray`` uses Ray if installed).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from search.codesign import load_space, search_designs

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default=str(ROOT / "examples" / "scale_space.yaml"))
    parser.add_argument("--method", choices=("grid", "ray"), default="grid")
    args = parser.parse_args()
    space = load_space(args.space)
    print(f"space {space.name}: {space.size:,} points, objectives loss, tpot, throughput")
    start = time.perf_counter()
    result = search_designs(space, method=args.method, progress=True)
    elapsed = time.perf_counter() - start
    print(result.message)
    print(f"evaluated {result.evaluated_count:,} points in {elapsed:.1f} s")
    print(f"{result.evaluated_count / elapsed:,.0f} points/s")
    print(f"target {TARGET_S:.0f} s: {elapsed / TARGET_S:.2f} of the budget")


if __name__ == "__main__":
    main()
