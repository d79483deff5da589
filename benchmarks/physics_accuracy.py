"""Physics alone against every stored row: print its error per source, and (``--write``)
store its accuracy block in the ``ideal`` profile so ``predict --runtime ideal`` gives
80 % intervals (`calibration.physics_accuracy`).

    python benchmarks/physics_accuracy.py                                # print (~20 s)
    python benchmarks/physics_accuracy.py --write data/runtimes/ideal.yaml
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from calibration import load_store, measured_metrics
from calibration.physics_accuracy import physics_accuracy
from calibration.transfer_terms import physics_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="the ideal profile to update")
    args = parser.parse_args()
    if args.write is not None and not args.write.is_file():
        parser.error(f"--write must name an existing profile YAML, got {args.write}")
    stored = load_store()
    rows = [item.row for item in stored]
    physics, measured = physics_times(rows), measured_metrics(rows)
    sources = np.array([item.info.source_id for item in stored])
    print(f"{'source':46s} {'metric':16s} {'n':>5s} {'MAPE':>7s} {'bias':>7s}")
    for source in sorted(set(sources), key=lambda s: -np.sum(sources == s)):
        for metric in ("batch_latency_s", "ttft_s", "itl_s"):
            own = (sources == source) & np.isfinite(measured[metric])
            if not own.any():
                continue
            error = physics[metric][own] / measured[metric][own] - 1
            print(
                f"{source[:46]:46s} {metric:16s} {own.sum():5d} "
                f"{100 * np.mean(np.abs(error)):6.1f}% {100 * np.mean(error):+6.1f}%"
            )
    if args.write:
        document = yaml.safe_load(args.write.read_text(encoding="utf-8"))
        document["accuracy"] = physics_accuracy(stored)
        args.write.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        print(f"wrote the accuracy block of {args.write}")


if __name__ == "__main__":
    main()
