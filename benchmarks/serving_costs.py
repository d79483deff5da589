"""Front-end and stack costs on the published serving numbers, out of source.

Scores every number of ``data/validation/serving/`` (`serving_validate.score_setup`)
four ways and prints, per source (CSV file) and per client model, the share within
the issue's targets and the MAPE of each:

- ``ideal``: physics only (``--runtime ideal``), beside every calibrated figure;
- ``before``: the rows' runtime profiles as shipped, no front-end costs (today's);
- ``stack``: the profiles adapted by `StackRules` (``--cited-gemm``: each device's
  cited achievable-GEMM scale; always: on a row of a version family the profile does
  not cover, no per-sequence host cost), still no front-end costs; its residuals are
  what the costs are fitted on;
- ``after``: ``stack`` plus a per-request cost (served rows only,
  `calibration.serving_costs.served`) and a per-output-chunk cost per source and
  stack, each fitted on the other sources only (`held_out_costs`: the source's version
  family, else its engine's other lines, else, the request cost only, every other
  source).

It also prints each family's costs fitted on all its sources (in sample, for
reading) and the held-out costs each source was simulated with.

Run: ``python benchmarks/serving_costs.py [--source NAME] [--seeds 3] [--cited-gemm]
[--chunk-basis family|engine] [--out-dir DIR]`` (about 3 minutes on one core for the shipped rows with 3 seeds).

``--write PATH`` runs the ``stack`` pass only and writes every family's costs fitted on
all rows (`calibration.serving_cost_table`, what ``codesign serve --engine-version``
charges) to PATH; ``--check PATH`` re-derives them and exits 1 unless PATH holds the
same bytes. The shipped table: ``python benchmarks/serving_costs.py --cited-gemm
--write data/runtimes/serving_costs/families.yaml`` (about a minute).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from serving_validate import (
    CLIENTS,
    SETUP,
    SHARE_TARGET,
    Measurement,
    Options,
    StackRules,
    group_of,
    load_rows,
    score_setup,
)

from calibration.serving_cost_table import dump_table, fit_table
from calibration.serving_costs import (
    FrontEndCosts,
    Residual,
    Stack,
    family_table,
    held_out_costs,
    served,
    stack_of,
)

Row = dict[str, object]
#: (metric, statistic) -> the residual kind the costs are fitted on
RESIDUALS = {
    ("ttft_ms", "p50"): "ttft",
    ("ttft_ms", "mean"): "ttft",
    ("tpot_ms", "p50"): "tpot",
    ("tpot_ms", "mean"): "tpot",
}


def score_all(
    files: dict[str, dict[tuple[str, ...], list[Measurement]]],
    options: Callable[[str, dict[str, str]], Options],
) -> list[Row]:
    """Every number of ``files`` scored with the options ``options(file, setup)`` gives."""
    rows: list[Row] = []
    for name, setups in files.items():
        for key, measurements in setups.items():
            setup = dict(zip(SETUP, key, strict=True))
            rows.extend(score_setup(name, setup, measurements, options(name, setup)))
    return rows


def residuals(rows: Sequence[Row]) -> list[Residual]:
    """TTFT (P50, mean; served rows only) and TPOT (P50, mean) numbers as `Residual`
    (measured - simulated, s)."""
    found = []
    for row in rows:
        kind = RESIDUALS.get((str(row["metric"]), str(row["statistic"])))
        if kind is None or (
            kind == "ttft" and not served(str(row["runtime"]), str(row["scenario"]))
        ):
            continue  # an in-process client's TTFT has no front end to fit
        diff = (float(row["measured"]) - float(row["simulated"])) / 1e3  # type: ignore[arg-type]
        stack = stack_of(str(row["runtime"]))
        load = float(row["in_flight"]), float(row["queued"])  # type: ignore[arg-type]
        profiled = row["profile"] != "ideal"
        found.append(Residual(str(row["file"]), stack, kind, diff, *load, profiled))
    return found


def summary(rows: Sequence[Row]) -> str:
    """``k/n (share) MAPE m`` of the rows."""
    met = sum(bool(r["met"]) for r in rows)
    mape = float(np.mean([abs(float(r["error"])) for r in rows]))  # type: ignore[arg-type]
    return f"{met:>4}/{len(rows):<4} ({met / len(rows):>4.0%}) MAPE {mape:>4.0%}"


def table(passes: dict[str, list[Row]], key: Callable[[Row], tuple[str, ...]]) -> None:
    """One line per key: each pass's share within target and MAPE."""
    keys = sorted({key(r) for r in next(iter(passes.values()))})
    for k in keys:
        cells = []
        for rows in passes.values():
            mine = [r for r in rows if key(r) == k]
            cells.append(summary(mine))
        verdict = (
            "met"
            if sum(bool(r["met"]) for r in passes["after"] if key(r) == k)
            >= SHARE_TARGET * len([r for r in passes["after"] if key(r) == k])
            else "MISSED"
        )
        print(f"  {' | '.join(k):<62} " + "  ".join(cells) + f"  -> {verdict}")


def measurement_group(row: Row) -> str:
    """Throughput, latency P50 / mean or latency tail (as `serving_validate.group_of`)."""
    return group_of(Measurement(str(row["metric"]), str(row["statistic"]), 1.0, 0.0, "", "", ""))


def write_table(
    args: argparse.Namespace,
    files: dict[str, dict[tuple[str, ...], list[Measurement]]],
    rules: StackRules,
) -> int:
    """Fit the per-family table on the ``stack`` pass of every row; write it to
    ``--write`` or compare it with ``--check`` (0: written or the same bytes)."""
    stacked = score_all(files, lambda f, s: Options(None, args.seeds, stack_rules=rules))
    path = Path(args.write or args.check)
    command = (
        f"python benchmarks/serving_costs.py{' --cited-gemm' if args.cited_gemm else ''}"
        f" --seeds {args.seeds} --write {path.as_posix()}"
    )
    text = dump_table(fit_table(residuals(stacked)), command, args.seeds)
    print(text, end="")
    if args.write:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
        return 0
    same = path.is_file() and path.read_text(encoding="utf-8") == text
    print(f"{path}: {'re-derived, same bytes' if same else 'DIFFERS from the re-derived table'}")
    return 0 if same else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default="", help="only CSV files whose name contains this")
    parser.add_argument("--seeds", type=int, default=3, help="draws per random workload (3)")
    parser.add_argument(
        "--cited-gemm",
        action="store_true",
        help="scale each device's compute efficiency by its cited achievable GEMM rate",
    )
    parser.add_argument(
        "--chunk-basis",
        choices=("family", "engine"),
        default="engine",
        help="fit a source's chunk cost on its version family, else its engine's other "
        "release lines (engine, the default), or on its family only",
    )
    parser.add_argument("--out-dir", help="write each pass's scored numbers as CSV here")
    writes = parser.add_mutually_exclusive_group()
    writes.add_argument("--write", help="write the per-family cost table (all rows) here")
    writes.add_argument("--check", help="exit 1 unless this file is the table --write writes")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    if (args.write or args.check) and args.source:
        parser.error("--write / --check fit on every row; drop --source")
    files = {k: v for k, v in load_rows().items() if args.source in k}
    rules = StackRules(cited_gemm=args.cited_gemm, families=True)
    if args.write or args.check:
        sys.exit(write_table(args, files, rules))
    passes = {
        "ideal": score_all(files, lambda f, s: Options("ideal", args.seeds)),
        "before": score_all(files, lambda f, s: Options(None, args.seeds)),
        "stack": score_all(files, lambda f, s: Options(None, args.seeds, stack_rules=rules)),
    }
    fitted = residuals(passes["stack"])
    costs: dict[tuple[str, Stack], FrontEndCosts] = {}

    def with_costs(name: str, setup: dict[str, str]) -> Options:
        stack = stack_of(setup["runtime"])
        bases = 1 if args.chunk_basis == "family" else 2
        found = costs.setdefault((name, stack), held_out_costs(fitted, name, stack, bases))
        return Options(
            None,
            args.seeds,
            request_overhead_s=found.request_s
            if served(setup["runtime"], setup["scenario"])
            else 0,
            chunk_overhead_s=found.chunk_s,
            stack_rules=rules,
        )

    passes["after"] = score_all(files, with_costs)
    print("== costs per version family, fitted on all its sources (in sample, for reading)")
    for stack, found in family_table(fitted).items():
        print(
            f"  {stack!s:<18} request {found.request_s * 1e3:7.2f} ms ({found.ttft_rows} TTFT "
            f"numbers)  chunk {found.chunk_s * 1e3:6.3f} ms per sequence-step "
            f"({found.tpot_rows} TPOT numbers)"
        )
    print("\n== held-out costs each source was simulated with (fitted without it)")
    for (name, stack), found in sorted(costs.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        print(
            f"  {name:<42} {stack!s:<18} request {found.request_s * 1e3:7.2f} ms  chunk "
            f"{found.chunk_s * 1e3:6.3f} ms  [{found.basis}; {found.ttft_rows} / "
            f"{found.tpot_rows} rows]"
        )
    header = "  ".join(f"{name:<27}" for name in passes)
    print(f"\n== per source, client model and group: {header}")
    table(passes, lambda r: (str(r["file"]), CLIENTS[str(r["scenario"])], measurement_group(r)))
    print(f"\n== per client model: {header}")
    table(passes, lambda r: (CLIENTS[str(r["scenario"])], measurement_group(r)))
    print(f"\n== all numbers: {header}")
    table(passes, lambda r: (measurement_group(r),))
    if args.out_dir:
        folder = Path(args.out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for name, rows in passes.items():
            with (folder / f"{name}.csv").open("w", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)


if __name__ == "__main__":
    main()
