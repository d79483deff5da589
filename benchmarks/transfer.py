"""Does calibration transfer? Every source predicted by a fit that never saw it.

For each group kind (``source``: the lab or project that published the rows, the
headline; ``hardware``; ``model``: the architecture), every group's rows are predicted
by `calibration.transfer` fitted on all other groups (`calibration.transfer_validation`),
next to physics alone (``ideal``: the platform presets' efficiencies and kernel
overheads) and to the shrunk blend ``ideal ** (1 - lam) * model ** lam`` whose weight is
chosen without the group. 80 % intervals are split-conformal on the other groups'
held-out residuals (groups weighted equally). Errors are ``predicted / measured - 1``;
MAPE is the mean of their absolute values, bias their mean.

    python benchmarks/transfer.py                      # sources (about 5 min on 2 cores)
    python benchmarks/transfer.py --groups source,hardware,model   # all three (~20 min)
    python benchmarks/transfer.py --variants preset/runtime,microbenchmarks/harness
    python benchmarks/transfer.py --with graphs,scope   # the opt-in CUDA-graph term and scoping

``--variants`` fits each listed model variant in turn, in the same process, and prints
a comparison table at the end: ``DEVICE_PRIORS/STACKS`` where DEVICE_PRIORS is
``preset`` (the device terms' prior means are the presets' efficiencies) or
``microbenchmarks`` (cited achieved fractions, `calibration.device_priors`) and STACKS
(`calibration.transfer_terms.STACKS`) is ``runtime`` (stack terms shrunk towards a
runtime level only, no weight-format factor on compute, a per-request cost on every
row) or ``harness`` (issue 20 part B: towards a runtime plus a harness level, with a
tighter runtime level, `calibration.transfer.HARNESS_PRIORS`, so a stack no fit saw
starts from what many stacks share rather than what one large suite set; a
weight-format factor on compute; no per-request cost on llama-bench rows). The default,
``preset/runtime``, is the library's default model, the one the shipped profiles and
docs/accuracy.md's figures come from. ``--dump DIR`` saves every variant's held-out
predictions (``DIR/<kind>_<device priors>_<stacks>.npz``); `benchmarks/transfer_residuals.py`
prints one held-out source's rows with the model's terms. ``--with`` adds opt-in parts
to the model (`OPT_IN`): ``graphs`` (the CUDA-graph attribute: a decode pass the row's
engine replays as a CUDA graph pays ``gamma`` times the launch cost,
`calibration.transfer_graphs`), ``scope`` (devices and classes measured on one runtime
held at `calibration.transfer.SCOPED_PRIORS`, so a device x runtime effect stays with
that runtime), ``steps`` (a per-step cost ``tau`` per stack beside the per-sequence cost,
`calibration.transfer_terms.with_step_cost`), ``sublinear`` (the per-sequence cost of a
step of ``S`` sequences ``sigma x S ** theta``, ``theta`` fitted,
`calibration.transfer_terms.with_sublinear`), ``sublinear-harness`` (the same with a
harness level of ``theta`` between the global and the runtime one) and
``sublinear-capped`` (the same with ``theta <= 1``); the two combine.

Prints, per group kind: one row per group with at least `MIN_TABLE_ROWS` values
(values: measured numbers, a row may measure TTFT and ITL), then per metric the
group-averaged and pooled MAPE of ideal, model and shrunk, and interval coverage.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import NoReturn

import numpy as np

from calibration.store import load_store
from calibration.transfer import METRICS, SCOPED_PRIORS, Prior
from calibration.transfer_terms import (
    DEVICE_PRIORS,
    STACKS,
    TransferTerms,
    build_terms,
    with_device_priors,
    with_graphs,
    with_stacks,
    with_step_cost,
    with_sublinear,
)
from calibration.transfer_validation import (
    conformal_bounds,
    group_mape,
    held_out_predictions,
    nested_shrinkage,
)

MIN_TABLE_ROWS = 10
#: Smallest group held out on its own, per group kind (smaller ones are only fitted):
#: every source, but only hardware and models with enough rows to score.
MIN_HELD_OUT = {"source": 2, "hardware": 20, "model": 20}
LABELS = {"batch_latency_s": "batch latency", "ttft_s": "TTFT", "itl_s": "ITL (decode)"}
#: The library's default model (`calibration.transfer_terms.build_terms`'s defaults).
DEFAULT_VARIANT = "preset/runtime"
#: Opt-in parts of the model ``--with`` adds.
OPT_IN = ("graphs", "scope", "steps", "sublinear", "sublinear-harness", "sublinear-capped")


def sublinear_variant(terms: TransferTerms, opt_in: set[str]) -> TransferTerms:
    """``terms`` with the sublinear per-sequence cost the ``--with`` parts ask for."""
    harness, capped = "sublinear-harness" in opt_in, "sublinear-capped" in opt_in
    wanted = harness or capped or "sublinear" in opt_in
    return with_sublinear(terms, wanted, harness=harness, capped=capped)


def group_labels(terms: TransferTerms, kind: str) -> np.ndarray:
    """The group of every row for a group kind."""
    if kind == "source":
        return np.array([item.info.source_id for item in terms.stored])
    if kind == "hardware":
        return np.array([item.row.hw for item in terms.stored])
    if kind == "model":
        return np.array([item.row.model for item in terms.stored])
    refuse(f"--groups: unknown group kind {kind!r}; accepted: source, hardware, model")


def report(
    terms: TransferTerms,
    kind: str,
    dump: Path | None = None,
    only: set[str] | None = None,
    priors: dict[str, Prior] | None = None,
) -> dict[str, tuple[float, float, float, float]]:
    """Print the per-group table of one group kind; return per metric the
    group-averaged MAPE of ideal, model and shrunk and the group-averaged coverage."""
    groups = group_labels(terms, kind)
    started = time.time()
    model = held_out_predictions(
        terms,
        groups,
        progress=lambda g: print(f"  fitted without {g}", file=sys.stderr),
        min_rows=MIN_HELD_OUT[kind],
        on_group=lambda group, rows, predicted: _partial(terms, group, rows, predicted),
        only=only,
        priors=priors,
    )
    print(
        f"\n## leave-one-{kind}-out ({time.time() - started:.0f} s; groups of at least "
        f"{MIN_HELD_OUT[kind]} rows held out)"
    )
    results = {}
    for name in METRICS:
        measured, ideal = terms.measured[name], terms.ideal[name]
        shrunk, weights = nested_shrinkage(ideal, model[name], measured, groups)
        low, high = conformal_bounds(shrunk, measured, groups)
        results[name] = (measured, ideal, model[name], shrunk, low, high, weights)
    if dump is not None:
        arrays = {"groups": groups}
        for name, (measured, ideal, fitted, shrunk, low, high, _) in results.items():
            arrays.update(
                {
                    f"{name}:{key}": value
                    for key, value in zip(
                        ("measured", "ideal", "model", "shrunk", "low", "high"),
                        (measured, ideal, fitted, shrunk, low, high),
                        strict=True,
                    )
                }
            )
        np.savez_compressed(dump, **arrays)
    print(
        f"{kind:44s} {'metric':13s} {'n':>5s} {'ideal':>14s} {'model':>14s} "
        f"{'shrunk (lam)':>20s} {'in 80%':>7s}"
    )
    for group in sorted(np.unique(groups), key=lambda g: -np.sum(groups == g)):
        own = groups == group
        for name in METRICS:
            measured, ideal, fitted, shrunk, low, high, weights = results[name]
            ok = own & np.isfinite(measured) & np.isfinite(fitted)
            if ok.sum() < MIN_TABLE_ROWS:
                continue
            inside = (measured >= shrunk * low) & (measured <= shrunk * high)
            print(
                f"{group[:44]:44s} {LABELS[name]:13s} {ok.sum():5d} "
                f"{_cell(ideal[ok], measured[ok])} {_cell(fitted[ok], measured[ok])} "
                f"{_cell(shrunk[ok], measured[ok])} ({weights[group]:.1f}) "
                f"{100 * inside[ok].mean():6.0f}%"
            )
    print(f"\nper metric over groups with values ({kind}; group-averaged MAPE / pooled MAPE):")
    summary = {}
    for name in METRICS:
        measured, ideal, fitted, shrunk, low, high, _ = results[name]
        ok = np.isfinite(measured) & np.isfinite(fitted)
        inside = (measured >= shrunk * low) & (measured <= shrunk * high)
        covered = ok & np.isfinite(low)
        print(
            f"  {LABELS[name]:13s} n={ok.sum():5d} groups={len(np.unique(groups[ok])):3d}  "
            f"ideal {_pair(ideal, measured, groups, ok)}  model {_pair(fitted, measured, groups, ok)}"
            f"  shrunk {_pair(shrunk, measured, groups, ok)}  "
            f"80% interval holds {100 * inside[covered].mean():.0f}% "
            f"(group-averaged {100 * _group_mean(inside, groups, covered):.0f}%)"
        )
        mapes = [
            group_mape(np.where(ok, values, np.nan), measured, groups)
            for values in (ideal, fitted, shrunk)
        ]
        summary[name] = (*mapes, _group_mean(inside, groups, covered))
    return summary


def _partial(terms: TransferTerms, group: str, rows: np.ndarray, predicted) -> None:
    """One held-out group's MAPE, ideal / model per metric, as it comes (stderr)."""
    cells = []
    for name in METRICS:
        measured = terms.measured[name][rows]
        ok = np.isfinite(measured)
        if ok.any():
            ideal = np.mean(np.abs(terms.ideal[name][rows][ok] / measured[ok] - 1))
            model = np.mean(np.abs(predicted[name][ok] / measured[ok] - 1))
            cells.append(f"{LABELS[name]} n={ok.sum()} {100 * ideal:.1f}/{100 * model:.1f}%")
    print(f"    {group}: " + "; ".join(cells), file=sys.stderr)


def _cell(predicted: np.ndarray, measured: np.ndarray) -> str:
    error = predicted / measured - 1
    return f"{100 * np.mean(np.abs(error)):5.1f}% ({100 * np.mean(error):+5.1f})"


def _pair(predicted, measured, groups, ok) -> str:
    pooled = np.mean(np.abs(predicted[ok] / measured[ok] - 1))
    averaged = group_mape(np.where(ok, predicted, np.nan), measured, groups)
    return f"{100 * averaged:5.1f}% / {100 * pooled:5.1f}%"


def _group_mean(flags: np.ndarray, groups: np.ndarray, ok: np.ndarray) -> float:
    return float(np.mean([flags[ok & (groups == g)].mean() for g in np.unique(groups[ok])]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", default="source", help="comma-separated: source,hardware,model")
    parser.add_argument(
        "--variants",
        default=DEFAULT_VARIANT,
        help="comma-separated DEVICE_PRIORS/STACKS (preset|microbenchmarks / runtime|harness)",
    )
    parser.add_argument("--dump", type=Path, help="folder for the held-out predictions (.npz)")
    parser.add_argument(
        "--hold-out",
        help="comma-separated groups: hold out only these (a quick look; the tables "
        "then cover only them, and the shrinkage weight and intervals come from them alone)",
    )
    parser.add_argument(
        "--with",
        dest="opt_in",
        default="",
        help=f"comma-separated opt-in parts of the model: {', '.join(OPT_IN)}",
    )
    args = parser.parse_args()
    variants = [parse_variant(text) for text in args.variants.split(",")]
    opt_in = {name.strip() for name in args.opt_in.split(",") if name.strip()}
    if not opt_in <= set(OPT_IN):
        refuse(f"--with: {args.opt_in!r}; accepted: comma-separated {', '.join(OPT_IN)}")
    priors = dict(SCOPED_PRIORS) if "scope" in opt_in else None
    stored = load_store()
    started = time.time()
    base = with_step_cost(with_graphs(build_terms(stored), "graphs" in opt_in), "steps" in opt_in)
    base = sublinear_variant(base, opt_in)
    sources = len({item.info.source_id for item in stored})
    print(
        f"measurement store: {len(stored)} rows from {sources} sources "
        f"(decomposed in {time.time() - started:.0f} s); opt-in parts: "
        f"{', '.join(sorted(opt_in)) or 'none'}"
    )
    table = {}
    for device_priors, stacks in variants:
        terms = with_stacks(with_device_priors(base, device_priors), stacks)
        print(f"\n# variant {device_priors}/{stacks}")
        for kind in args.groups.split(","):
            kind = kind.strip()
            dump = None
            if args.dump is not None:
                args.dump.mkdir(parents=True, exist_ok=True)
                dump = args.dump / f"{kind}_{device_priors}_{stacks}.npz"
            only = None if args.hold_out is None else set(args.hold_out.split(","))
            table[(device_priors, stacks, kind)] = report(terms, kind, dump, only, priors)
    print("\n## variants (group-averaged MAPE: ideal / model / shrunk; 80% coverage)")
    for (device_priors, stacks, kind), summary in table.items():
        cells = "  ".join(
            f"{LABELS[name]} {100 * i:.1f} / {100 * m:.1f} / {100 * sh:.1f} ({100 * c:.0f}%)"
            for name, (i, m, sh, c) in summary.items()
        )
        print(f"  {device_priors + '/' + stacks:26s} {kind:9s} {cells}")


def parse_variant(text: str) -> tuple[str, str]:
    """``DEVICE_PRIORS/STACKS`` -> the pair (exit 2 naming the accepted values)."""
    device_priors, _, stacks = text.strip().partition("/")
    if device_priors not in DEVICE_PRIORS or stacks not in STACKS:
        refuse(
            f"--variants: {text!r} is not DEVICE_PRIORS/STACKS with DEVICE_PRIORS one of "
            f"{', '.join(DEVICE_PRIORS)} and STACKS one of {', '.join(STACKS)}"
        )
    return device_priors, stacks


def refuse(message: str) -> NoReturn:
    """Bad input: one line on stderr, exit code 2."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    main()
