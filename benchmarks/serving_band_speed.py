"""Cost of the co-design's serving band (`search.codesign.serving_band`) against its peer,
re-running the search once per serving scenario (what `benchmarks/codesign_orin.py`'s joint
band does), in the same process on ``examples/orin_space.yaml``.

Prints the wall time of one search without the band, of the band on its frontier (9
scenarios), and the ratio of the band to the 9 searches the peer would run (measured: one
search per scenario; the searches cost the same whatever the profile, within noise).

Run: ``python benchmarks/serving_band_speed.py [--space examples/orin_space.yaml]``
(about 30 s on 2 cores).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from search.codesign import add_serving_band, load_space, search_designs, serving_scenarios

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default=str(ROOT / "examples" / "orin_space.yaml"))
    args = parser.parse_args()
    space = load_space(args.space)
    search_designs(space)  # warm caches (presets, law files) for both timings
    start = time.perf_counter()
    result = search_designs(space)
    search_s = time.perf_counter() - start
    start = time.perf_counter()
    banded = add_serving_band(result.space, result.frontier)
    band_s = time.perf_counter() - start
    scenarios = len(serving_scenarios(space))
    architectures = len(
        banded.drop_duplicates(["layers", "hidden", "kv_heads", "intermediate_size"])
    )
    print(f"space {args.space}: {len(banded)} frontier designs, {architectures} architectures")
    print(f"one search (no band):            {search_s:7.2f} s")
    print(f"serving band, {scenarios} scenarios:      {band_s:7.2f} s")
    print(
        f"peer (one search per scenario): {scenarios * search_s:7.2f} s (estimated: "
        f"{scenarios} x the search above)"
    )
    print(
        f"band / one search = {band_s / search_s:.2f}; band / peer = "
        f"{band_s / (scenarios * search_s):.3f}"
    )


if __name__ == "__main__":
    main()
