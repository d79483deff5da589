"""Do the transfer model's *profiles* transfer? Every source predicted through genz by
the runtime profiles a fit that never saw it writes.

For each source (the lab or project that published the rows), `calibration.transfer` is
fitted on all other sources, its profiles are written (`calibration.transfer_profile`:
the generic profile of the terms that transfer, and the profile of each held-out row's
stack, runtime x harness x year) and `genz.evaluate` predicts the source's rows with
them (`calibration.transfer_held_out`): the numbers ``predict --runtime`` would give.
Beside them: physics alone (``ideal``). Errors are ``predicted / measured - 1``; MAPE the
mean of their absolute values, bias their mean; "source-averaged" is the mean over
sources of each source's MAPE, the headline.

    python benchmarks/transfer_profiles.py --save held_out.csv          # ~26 fits
    python benchmarks/transfer_profiles.py --shard 0/3 --save a.csv     # a third of them
    python benchmarks/transfer_profiles.py --load a.csv b.csv c.csv     # report only
    python benchmarks/transfer_profiles.py --load a.csv b.csv \
        --write-accuracy data/runtimes/transfer/transfer.yaml           # its accuracy block

The saved CSV (one line per row and metric: source, measured, ideal, generic, stack) is
what `benchmarks/interval_coverage.py --per-source` reads. ``--variant
DEVICE_PRIORS/STACKS`` scores another model variant's profiles (default
``preset/runtime``; ``microbenchmarks/harness`` is issue 20 part B). ``--write-accuracy
PROFILE.yaml`` stores the held-out error of the ``--kind`` profile (``generic``, the
default, or ``stack``) as that profile's accuracy block (`calibration.transfer_accuracy`:
source-grouped split-conformal quantiles, and the source-averaged MAPE beside
physics'), so ``predict --runtime PROFILE.yaml`` prints that interval; the CSVs must
come from the variant that wrote the profile. ``--with graphs,scope,steps,sublinear``
adds the opt-in CUDA-graph term, one-runtime scoping, the per-step cost and the
sublinear per-sequence cost (as `benchmarks/transfer.py --with`, also its variants
``sublinear-harness`` and ``sublinear-capped``; a stack profile carries its stack's
exponent, the harness level included, a generic profile the stacks' geometric mean).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from calibration.store import load_store
from calibration.transfer import METRICS, SCOPED_PRIORS
from calibration.transfer_accuracy import held_out_accuracy
from calibration.transfer_held_out import PROFILE_KINDS, held_out_profile_predictions
from calibration.transfer_terms import (
    DEFAULT_VARIANT,
    build_terms,
    parse_variant,
    with_step_cost,
    with_sublinear,
)
from calibration.transfer_validation import group_mape
from roofline import InputError

MIN_TABLE_ROWS = 10
#: Opt-in parts of the model ``--with`` adds (as `benchmarks/transfer.py --with`).
OPT_IN = ("graphs", "scope", "steps", "sublinear", "sublinear-harness", "sublinear-capped")
LABELS = {"batch_latency_s": "batch latency", "ttft_s": "TTFT", "itl_s": "ITL (decode)"}
COLUMNS = ("row", "source", "metric", "measured", "ideal", *PROFILE_KINDS)


def run(
    shard: tuple[int, int] | None,
    path: str | None,
    variant: str = DEFAULT_VARIANT,
    opt_in: frozenset[str] = frozenset(),
) -> list[dict[str, object]]:
    """Held-out predictions of every measured value (of the shard's sources), one source
    at a time, by ``variant``'s profiles (with the ``opt_in`` parts, `OPT_IN`); with
    ``path``, each source's values are appended to the CSV as soon as its fit ends (an
    interrupted run keeps the sources done)."""
    stored = load_store()
    device_priors, stacks = parse_variant(variant)
    terms = build_terms(
        stored, device_priors=device_priors, stacks=stacks, graphs="graphs" in opt_in
    )
    harness, capped = "sublinear-harness" in opt_in, "sublinear-capped" in opt_in
    wanted = harness or capped or "sublinear" in opt_in
    terms = with_sublinear(
        with_step_cost(terms, "steps" in opt_in), wanted, harness=harness, capped=capped
    )
    priors = dict(SCOPED_PRIORS) if "scope" in opt_in else None
    groups = np.array([item.info.source_id for item in terms.stored])
    names = sorted(set(groups.tolist()), key=lambda g: (-np.sum(groups == g), g))
    chosen = names if shard is None else names[shard[0] :: shard[1]]
    if path:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            csv.DictWriter(handle, fieldnames=COLUMNS).writeheader()
    records: list[dict[str, object]] = []
    for group in chosen:
        predicted = held_out_profile_predictions(terms, groups, only=[group], priors=priors)
        part = []
        for name in METRICS:
            for i in np.flatnonzero(np.isfinite(terms.measured[name]) & (groups == group)):
                part.append(
                    {
                        "row": int(i),
                        "source": str(groups[i]),
                        "metric": name,
                        "measured": float(terms.measured[name][i]),
                        "ideal": float(terms.ideal[name][i]),
                        **{kind: float(predicted[kind][name][i]) for kind in PROFILE_KINDS},
                    }
                )
        records += part
        if path:
            with open(path, "a", encoding="utf-8", newline="") as handle:
                out = csv.DictWriter(handle, fieldnames=COLUMNS)
                out.writerows(
                    [
                        {k: repr(v) if isinstance(v, float) else v for k, v in r.items()}
                        for r in part
                    ]
                )
        print(f"  fitted without {group} ({len(part)} values)", file=sys.stderr, flush=True)
    return records


def load(paths: list[str]) -> list[dict[str, object]]:
    """Records of saved CSVs (numbers as floats)."""
    records: list[dict[str, object]] = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in csv.DictReader(handle):
                records.append(
                    {
                        **{key: line[key] for key in ("source", "metric")},
                        "row": int(line["row"]),
                        **{key: float(line[key]) for key in ("measured", "ideal", *PROFILE_KINDS)},
                    }
                )
    return records


def report(records: list[dict[str, object]]) -> None:
    """Per source and metric, then per metric source-averaged and pooled."""
    print("## profiles through genz, leave-one-source-out: MAPE (bias), %")
    print(f"{'source':44s} {'metric':13s} {'n':>5s} {'ideal':>15s} {'generic':>15s} {'stack':>15s}")
    columns = {key: np.array([r[key] for r in records]) for key in COLUMNS}
    sources, metrics = columns["source"], columns["metric"]
    ok = np.isfinite(columns["generic"]) & np.isfinite(columns["stack"])
    order = sorted(set(sources.tolist()), key=lambda s: -np.sum(sources == s))
    for source in order:
        for name in METRICS:
            rows = ok & (sources == source) & (metrics == name)
            if rows.sum() < MIN_TABLE_ROWS:
                continue
            cells = " ".join(
                _cell(columns[kind][rows], columns["measured"][rows])
                for kind in ("ideal", *PROFILE_KINDS)
            )
            print(f"{source[:44]:44s} {LABELS[name]:13s} {rows.sum():5d} {cells}")
    print(
        "\nper metric (source-averaged MAPE / pooled MAPE; sources worse than ideal, of >= 10 values):"
    )
    for name in METRICS:
        rows = ok & (metrics == name)
        measured = np.where(rows, columns["measured"], np.nan)
        parts = []
        for kind in ("ideal", *PROFILE_KINDS):
            averaged = group_mape(np.where(rows, columns[kind], np.nan), measured, sources)
            pooled = np.mean(np.abs(columns[kind][rows] / columns["measured"][rows] - 1))
            parts.append(f"{kind} {100 * averaged:5.1f}% / {100 * pooled:5.1f}%")
        worse = {
            kind: sum(
                _mape(columns[kind], columns["measured"], sel)
                > _mape(columns["ideal"], columns["measured"], sel)
                for source in order
                if (sel := rows & (sources == source)).sum() >= MIN_TABLE_ROWS
            )
            for kind in PROFILE_KINDS
        }
        print(
            f"  {LABELS[name]:13s} n={rows.sum():5d} sources={len(set(sources[rows].tolist())):3d}  "
            + "  ".join(parts)
            + f"  worse than ideal: generic {worse['generic']}, stack {worse['stack']}"
        )


def _mape(predicted: np.ndarray, measured: np.ndarray, rows: np.ndarray) -> float:
    return float(np.mean(np.abs(predicted[rows] / measured[rows] - 1)))


def _cell(predicted: np.ndarray, measured: np.ndarray) -> str:
    error = predicted / measured - 1
    return f"{100 * np.mean(np.abs(error)):6.1f}% ({100 * np.mean(error):+5.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shard", help="i/n: hold out only every n-th source from the i-th")
    parser.add_argument("--save", help="CSV of the held-out predictions")
    parser.add_argument("--load", nargs="+", help="report saved CSVs instead of fitting")
    parser.add_argument("--variant", default=DEFAULT_VARIANT, help="DEVICE_PRIORS/STACKS")
    parser.add_argument(
        "--write-accuracy", type=Path, help="profile YAML whose accuracy block is rewritten"
    )
    parser.add_argument("--kind", default="generic", choices=PROFILE_KINDS)
    parser.add_argument(
        "--with",
        dest="opt_in",
        default="",
        help=f"comma-separated opt-in parts of the model: {', '.join(OPT_IN)}",
    )
    args = parser.parse_args()
    opt_in = frozenset(name.strip() for name in args.opt_in.split(",") if name.strip())
    if not opt_in <= set(OPT_IN):
        raise SystemExit(f"--with: {args.opt_in!r}; accepted: comma-separated {', '.join(OPT_IN)}")
    try:
        parse_variant(args.variant)
    except InputError as error:
        raise SystemExit(f"{error}") from None
    if args.load:
        records = load(args.load)
        report(records)
        if args.write_accuracy:
            write_accuracy(records, args.write_accuracy, args.kind, " ".join(sys.argv[1:]))
        return
    shard = None
    if args.shard:
        index, count = (int(part) for part in args.shard.split("/"))
        if not 0 <= index < count:
            raise SystemExit(f"--shard: i/n with 0 <= i < n, got {args.shard!r}")
        shard = (index, count)
    started = time.time()
    records = run(shard, args.save, args.variant, opt_in)
    print(f"held-out fits took {time.time() - started:.0f} s", file=sys.stderr)
    report(records)
    if args.write_accuracy:
        write_accuracy(records, args.write_accuracy, args.kind, " ".join(sys.argv[1:]))


def write_accuracy(records: list[dict[str, object]], path: Path, kind: str, argv: str) -> None:
    """Rewrite the accuracy block of the profile at ``path`` from ``records``."""
    if len({r["source"] for r in records}) < 2:
        raise SystemExit("--write-accuracy: the records hold fewer than 2 held-out sources")
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    command = f"python benchmarks/transfer_profiles.py {argv}"
    document["accuracy"] = held_out_accuracy(records, kind, load_store(), command)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    print(f"accuracy block of {path} rewritten ({kind} profile, {len(records)} values)")


if __name__ == "__main__":
    main()
