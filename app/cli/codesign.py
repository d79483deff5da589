"""``codesign search`` (Pareto frontier of a design space) and ``codesign recommend``
(write the best designs' config.json, bits.yaml and platform.yaml)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
from pathlib import Path
from typing import Any

import pandas as pd

from genz import list_runtimes, load_runtime
from roofline import InputError
from search.codesign import (
    CONSTRAINT_FIELDS,
    METHODS,
    OBJECTIVES,
    VERDICTS,
    CodesignResult,
    Constraints,
    DesignSpace,
    load_space,
    search_designs,
    serving_scenarios,
    write_recommendations,
)

from ..formatting import print_json, print_key_values, print_table
from .commands import add_command

CONSTRAINT_HELP = {
    "max-memory-gb": "per-device footprint (weights + KV + activations), GB (decimal)",
    "max-tpot-ms": "time per output token, ms",
    "max-ttft-ms": "time to first token, ms",
    "min-throughput": "generated tokens/s of all replicas",
    "max-loss": "predicted loss, nats/token",
    "max-perplexity": "predicted perplexity",
    "max-devices": "devices per design (tp*pp*ep*dp)",
    "max-training-hours": "training wall-clock estimate (the space's training section), h",
    "max-training-cost-usd": "training rental estimate (training platform's hourly price), USD",
    "max-device-cost-usd": "device price or a design's modelled manufacturing cost, USD",
    "max-area-mm2": "a design's modelled silicon area, mm^2 (presets have none)",
    "max-tdp-w": "board power (a design's modelled TDP), W",
    "max-usd-per-mtok": "USD per million output tokens (rental, or cost over 4 years + power)",
}
OUTPUT_SUFFIXES = (".csv", ".parquet")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``search`` and ``recommend``."""
    search = add_command(subparsers, "search")
    _add_common(search)
    search.add_argument("--out", help="write the feasible designs (.csv or .parquet)")
    search.add_argument("--frontier-out", help="write the frontier designs (.csv or .parquet)")
    search.add_argument(
        "--budget",
        choices=tuple(OBJECTIVES),
        help="also print the best design (first objective) within each value of this budget",
    )
    search.add_argument("--show", type=int, default=10, help="frontier rows printed (default 10)")
    search.set_defaults(func=run_search)

    recommend = add_command(subparsers, "recommend")
    _add_common(recommend)
    recommend.add_argument("--top", type=int, default=5, help="designs written (default 5)")
    recommend.add_argument(
        "--out-dir", default="recommended", help="folder to write (default recommended/)"
    )
    recommend.add_argument("--force", action="store_true", help="overwrite a non-empty out-dir")
    recommend.set_defaults(func=run_recommend)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--space", required=True, help="design-space YAML file")
    parser.add_argument(
        "--runtime",
        help=f"serving-stack profile for every design, replacing the space's hardware.runtime: "
        f"{', '.join(list_runtimes())} or a .yaml file (ideal: the physics only)",
    )
    parser.add_argument(
        "--objective",
        help=f"1-4 comma-separated objectives (default: the space's): {', '.join(OBJECTIVES)}",
    )
    bounds = parser.add_argument_group("constraints (replace the space's of the same name)")
    bounds.add_argument(
        "--ignore-space-constraints",
        action="store_true",
        help="drop the space file's constraints section (only the flags below apply)",
    )
    for _, _, label, _, _ in CONSTRAINT_FIELDS.values():
        bounds.add_argument(
            f"--{label}", dest=label.replace("-", "_"), type=float, help=CONSTRAINT_HELP[label]
        )
    method = parser.add_argument_group("method")
    method.add_argument("--method", choices=METHODS, default="grid", help="default grid")
    method.add_argument("--samples", type=int, help="sample method: initial points")
    method.add_argument("--refine-rounds", type=int, help="sample method: refinement rounds")
    method.add_argument("--seed", type=int, help="sample method: seed")
    method.add_argument("--chunks", type=int, help="ray method: tasks (default 4 per CPU)")
    method.add_argument(
        "--keep",
        choices=("feasible", "frontier"),
        default="feasible",
        help="keep the whole feasible region (default) or only chunk frontiers (huge spaces)",
    )
    parser.add_argument(
        "--within-data",
        action="store_true",
        help="keep only designs inside the loss law's data domain (no extrapolation) that hold "
        "the dimensions the law cannot price (GQA, FFN ratio, vocab, experts not varied by its "
        "data; a hybrid's attention / SSM mix) at the base model's value",
    )
    parser.add_argument(
        "--no-serving-band",
        action="store_true",
        help="skip the frontier's TPOT band over the base model under every serving scenario "
        "(kernel-overhead priors 0-10 us x runtime profiles) and the joint verdict",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _search(args: argparse.Namespace) -> CodesignResult:
    given = {
        label.replace("-", "_"): getattr(args, label.replace("-", "_"))
        for _, _, label, _, _ in CONSTRAINT_FIELDS.values()
    }
    constraints = Constraints.from_human(given, origin="constraints")
    result = search_designs(
        space_from_args(args),
        objectives=args.objective,
        constraints=constraints,
        space_constraints=not args.ignore_space_constraints,
        method=args.method,
        keep=args.keep,
        within_data=True if args.within_data else None,
        samples=args.samples,
        refine_rounds=args.refine_rounds,
        seed=args.seed,
        chunks=args.chunks,
        serving_band=not args.no_serving_band,
        progress=not args.no_progress and not args.json,
    )
    if not result.success:
        raise InputError(result.message)
    return result


def space_from_args(args: argparse.Namespace) -> DesignSpace:
    """The ``--space`` file, its runtime profile replaced by ``--runtime`` when given."""
    space = load_space(args.space)
    if args.runtime is None:
        return space
    hardware = dataclasses.replace(space.hardware, runtime=load_runtime(args.runtime))
    return dataclasses.replace(space, hardware=hardware)


def runtime_label(result: CodesignResult) -> str:
    """The runtime profile every design was costed with (``none``: the physics only)."""
    profile = result.space.hardware.runtime
    return "none (physics only)" if profile is None else profile.name


def check_table_path(path: str) -> Path:
    """A .csv or .parquet file whose folder exists (parquet only with pyarrow)."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise InputError(f"output {path}: must end in .csv or .parquet")
    if suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise InputError(f"output {path}: Parquet needs pyarrow (pip install pyarrow); use .csv")
    if target.is_symlink() or target.is_dir():
        raise InputError(f"output {path}: is a symbolic link or a folder; name a file")
    if not target.resolve().parent.is_dir():
        raise InputError(f"output {path}: folder {target.resolve().parent} does not exist")
    return target


def write_table(frame: pd.DataFrame, path: Path) -> None:
    """CSV or Parquet by suffix."""
    if path.suffix.lower() == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)


def run_search(args: argparse.Namespace) -> None:
    """Search, print the summary and the best-ranked frontier designs, write tables."""
    targets = [check_table_path(p) if p else None for p in (args.out, args.frontier_out)]
    result = _search(args)
    if targets[0] is not None:
        write_table(result.to_frame(), targets[0])
    if targets[1] is not None:
        write_table(result.frontier, targets[1])
    budget = result.best_per_budget(args.budget) if args.budget else None
    if args.json:
        payload = summary(result)
        payload["frontier"] = _records(result.frontier)
        if budget is not None:
            payload["best_per_budget"] = _records(budget)
        print_json(payload)
        return
    _print_summary(result, args.space)
    print()
    print_table(display_rows(result.frontier.head(max(args.show, 0))))
    if budget is not None:
        objective = OBJECTIVES[args.budget]
        shown = display_rows(budget)
        bound = "<=" if objective.sense == "min" else ">="
        shown.insert(
            0, f"{args.budget} {bound} ({objective.unit})", budget["budget_limit"] / objective.scale
        )
        print(f"\nbest {result.objectives[0].name} within each {args.budget} budget:")
        print_table(shown)
    for target in targets:
        if target is not None:
            print(f"wrote {target}")


def run_recommend(args: argparse.Namespace) -> None:
    """Search, then write the ``--top`` best-ranked frontier designs."""
    result = _search(args)
    folders = write_recommendations(result, args.out_dir, args.top, args.force)
    chosen = result.frontier.nsmallest(len(folders), "rank")
    if args.json:
        payload = summary(result)
        payload["recommended"] = [
            {**record, "folder": str(folder)}
            for record, folder in zip(_records(chosen), folders, strict=True)
        ]
        print_json(payload)
        return
    _print_summary(result, args.space)
    print()
    print_table(display_rows(chosen).assign(folder=[folder.name for folder in folders]))
    print(f"\nwrote {len(folders)} folders under {Path(args.out_dir).resolve()}")
    print(
        "each: config.json, bits.yaml, platform.yaml, design.json (predictions, not measurements)"
    )


def summary(result: CodesignResult) -> dict[str, Any]:
    """The result's scalar fields, JSON-ready."""
    return {
        "success": result.success,
        "status": result.status,
        "message": result.message,
        "method": result.method,
        "objectives": [o.name for o in result.objectives],
        "constraints": result.constraints.to_human(),
        "evaluated_count": result.evaluated_count,
        "feasible_count": result.feasible_count,
        "elapsed_s": result.elapsed_s,
        "precision_model": precision_label(result),
        "runtime": runtime_label(result),
        "within_data": result.space.law.within_data,
        "extrapolated_on_frontier": int(result.frontier["extrapolated"].sum()),
        "edge_on_frontier": int(result.frontier["edge"].sum()),
        "unpriced_dimensions": list(unpriced_dimensions(result)),
        "unpriced_on_frontier": int(result.frontier["unpriced"].sum()),
        "better_than_base_on_frontier": int(result.frontier["better_than_base"].sum()),
        "verdicts_on_frontier": verdict_counts(result),
    }


def verdict_counts(result: CodesignResult) -> dict[str, int]:
    """How many frontier designs got each joint verdict (empty without the serving band)."""
    if "verdict" not in result.frontier:
        return {}
    counts = result.frontier["verdict"].value_counts()
    return {name: int(counts[name]) for name in VERDICTS if name in counts}


def unpriced_dimensions(result: CodesignResult) -> tuple[str, ...]:
    """The dimensions the law cannot price (the frame's ``unpriced_<dimension>`` columns)."""
    frame = result.frontier if len(result.frontier) else result.designs
    return tuple(
        str(name).removeprefix("unpriced_")
        for name in frame.columns
        if str(name).startswith("unpriced_") and name != "unpriced_axes"
    )


def precision_label(result: CodesignResult) -> str:
    """What produced the loss of every design (the frame's ``precision_model``)."""
    frame = result.frontier if len(result.frontier) else result.designs
    return str(frame["precision_model"].iloc[0]) if len(frame) else ""


def _print_summary(result: CodesignResult, space: str) -> None:
    bounds = ", ".join(f"{k} {v:g}" for k, v in result.constraints.to_human().items())
    print_key_values(
        [
            ("space", space),
            ("method", result.method),
            ("objectives", ", ".join(o.name for o in result.objectives)),
            ("constraints", (bounds + ", " if bounds else "") + "fits device memory"),
            ("result", result.message),
            ("elapsed", f"{result.elapsed_s:.2f} s"),
            ("runtime", runtime_label(result)),
            ("note", "loss and perplexity are predictions of the fitted law"),
            ("weight bits", precision_label(result)),
            (
                "domain",
                f"{int(result.frontier['extrapolated'].sum())} of {len(result.frontier)} "
                "frontier designs extrapolate the law's data"
                + (
                    " (--within-data: only designs inside it kept)"
                    if result.space.law.within_data
                    else ""
                ),
            ),
            (
                "unpriced",
                f"{int(result.frontier['unpriced'].sum())} of {len(result.frontier)} frontier "
                "designs move from the base model along dimensions the law's data did not vary ("
                + (", ".join(unpriced_dimensions(result)) or "none")
                + "): their loss there is the law's guess, not a fit"
                + (
                    " (--within-data: only designs at the base's value kept)"
                    if result.space.law.within_data
                    else ""
                ),
            ),
            (
                "intervals",
                "param = bootstrap of the law's parameters; form = min-max over the "
                "validated law forms; ppl_vs_base = perplexity over the base model's (same "
                "bits), 95% over joint samples of the law's bootstrap and the PTQ constant "
                "sets; better = the whole band below 1; on every feasible design (--out)",
            ),
            (
                "vs base",
                f"{int(result.frontier['better_than_base'].sum())} of {len(result.frontier)} "
                "frontier designs have lower perplexity than the base model over the whole "
                "joint loss band",
            ),
            *_serving_lines(result),
        ]
    )


def _serving_lines(result: CodesignResult) -> list[tuple[str, str]]:
    """The serving band's note and the joint verdict counts (none when it was skipped)."""
    counts = verdict_counts(result)
    if not counts:
        return []
    scenarios = serving_scenarios(result.space)
    return [
        (
            "serving band",
            f"tpot_vs_base = TPOT over the base model's (same bits, hardware, workload) under "
            f"the space's serving set-up, [min, max] over {len(scenarios)} serving scenarios ("
            + ", ".join(s.label for s in scenarios)
            + ")",
        ),
        (
            "verdict",
            f"joint (loss band x serving band), {len(result.frontier)} frontier designs: "
            + ", ".join(f"{n} {name}" for name, n in counts.items())
            + "; better = whole ppl band < 1 and never slower; indistinguishable = the ppl "
            "band includes 1",
        ),
    ]


def display_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Frontier rows in display units (M parameters, ms, GB decimal)."""
    columns = {
        "rank": frame.get("rank"),
        "design": frame.get("design"),
        "platform": frame["platform"],
        "params_M": (frame["params"] / 1e6).round(1),
        "wbits": frame["weight_bits"],
        "loss": frame["loss"].round(4),
        "ppl": frame["perplexity"].round(3),
        "tpot_ms": (frame["tpot_s"] * 1e3).round(3),
        "ttft_ms": (frame["ttft_s"] * 1e3).round(2),
        "tok_per_s": frame["throughput_tokens_per_s"].round(1),
        "mem_GB": (frame["footprint_bytes"] / 1e9).round(3),
        "train_h": (frame["training_time_s"] / 3600).round(1),
        "extrapolated": frame["extrapolated"],
        "outside_data": frame["outside_domain"].replace("", "-"),
        "edge": frame["edge_axes"].replace("", "-"),
        "unpriced": frame["unpriced_axes"].replace("", "-"),
    }
    if "device_cost_usd" in frame and frame["device_cost_usd"].notna().any():
        columns["usd_per_mtok"] = frame["usd_per_mtok"].round(4)
        columns["cost_usd"] = frame["device_cost_usd"].round(0)
    if "area_mm2" in frame and frame["area_mm2"].notna().any():
        columns["area_mm2"] = frame["area_mm2"].round(0)
        columns["tdp_w"] = frame["tdp_w"].round(0)
    if "loss_form_min" in frame:
        columns["loss_param"] = _pair(frame["loss_param_low"], frame["loss_param_high"])
        columns["loss_form"] = _pair(frame["loss_form_min"], frame["loss_form_max"])
    if "ratio_vs_base_low" in frame:
        columns["ppl_vs_base"] = _pair(frame["ratio_vs_base_low"], frame["ratio_vs_base_high"])
        columns["better"] = frame["better_than_base"]
    if "verdict" in frame:
        columns["tpot_vs_base"] = frame["tpot_vs_base"].round(4)
        columns["tpot_band"] = _pair(frame["tpot_vs_base_low"], frame["tpot_vs_base_high"])
        columns["verdict"] = frame["verdict"]
    if "ilp_mean_weight_bits" in frame:
        columns["ilp_bits"] = frame["ilp_mean_weight_bits"].round(2)
        columns["ilp_ppl"] = frame["ilp_perplexity"].round(3)
        columns["ilp_tpot_ms"] = (frame["ilp_tpot_s"] * 1e3).round(3)
    return pd.DataFrame({k: v for k, v in columns.items() if v is not None})


def _pair(low: pd.Series, high: pd.Series) -> pd.Series:
    """``'[low, high]'`` at 4 decimals."""
    return pd.Series(
        [f"[{a:.4f}, {b:.4f}]" for a, b in zip(low, high, strict=True)], index=low.index
    )


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain JSON values (pandas converts numpy scalars and categories)."""
    return json.loads(frame.to_json(orient="records"))
