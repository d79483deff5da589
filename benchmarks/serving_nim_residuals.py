"""Where the NIM / GenAI-Perf closed-loop numbers miss, with signed errors.

Reads the per-number CSVs that ``benchmarks/serving_validate.py --source nim --out``
writes (one with the rows' profiles, optionally one with ``--profile ideal``) and prints
the median signed error (simulated / measured - 1) and the share within target of each
metric by concurrency band, by prompt / output lengths and by mesh, and a Little's-law
split of the closed loop: requests waiting for their first token,
``W = mean TTFT x requests/s``, and prompts started per decode step,
``A = requests/s x mean TPOT``, measured against simulated.

    python benchmarks/serving_validate.py --source nim --brief --out /tmp/nim.csv
    python benchmarks/serving_validate.py --source nim --brief --profile ideal --out /tmp/nim_ideal.csv
    python benchmarks/serving_nim_residuals.py /tmp/nim.csv --ideal /tmp/nim_ideal.csv
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

#: Concurrency bands (closed-loop clients), upper edges inclusive.
BANDS = ((1, 2), (5, 10), (25, 50), (100, 100), (150, 250))
#: Metrics reported, with their statistic family and target (GenAI-Perf's names mapped
#: as in serving_validate.py).
METRICS = (
    ("output_tokens_per_s", ("value",), 0.15),
    ("ttft_ms", ("mean",), 0.15),
    ("tpot_ms", ("mean",), 0.15),
    ("e2e_ms", ("mean",), 0.15),
    ("ttft_ms", ("p95",), 0.25),
    ("tpot_ms", ("p95",), 0.25),
)


def band_of(concurrency: float) -> str:
    """The label of the band holding ``concurrency`` clients."""
    for low, high in BANDS:
        if low <= concurrency <= high:
            return f"{low}-{high}" if low != high else f"{low}"
    return "other"


def label(rows: pd.DataFrame) -> pd.DataFrame:
    """The scored rows with band, length pair and mesh columns added."""
    rows = rows.copy()
    rows["band"] = rows["concurrency"].map(band_of)
    rows["lengths"] = (
        rows["input_tokens"].astype(int).astype(str)
        + "/"
        + rows["output_tokens"].astype(int).astype(str)
    )
    rows["mesh"] = (
        rows["model"].str.replace("llama-3-", "", regex=False)
        + " "
        + rows["tp"].astype(int).astype(str)
        + "x"
        + rows["hardware"].str.split("-").str[0]
    )
    return rows


def signed_table(rows: pd.DataFrame, by: str, metric: str, stats: tuple[str, ...]) -> str:
    """Median signed error, % (and the share within target), of one metric by ``by`` x band."""
    part = rows[(rows["metric"] == metric) & rows["statistic"].isin(stats)]
    table = part.pivot_table(index=by, columns="band", values="error", aggfunc="median")
    order = [band_of(high) for _, high in BANDS]
    return (100 * table.reindex(columns=order)).round(0).to_string()


def littles_split(rows: pd.DataFrame) -> pd.DataFrame:
    """Per set-up: requests waiting for a first token and prompts started per decode
    step, measured and simulated (Little's law on the closed loop's steady part)."""
    keys = ["mesh", "lengths", "concurrency"]
    mean = rows[rows["statistic"].isin(["mean", "value"])]
    wide = mean.pivot_table(
        index=keys, columns="metric", values=["measured", "simulated"], aggfunc="first"
    )
    out = pd.DataFrame(index=wide.index)
    for side in ("measured", "simulated"):
        rps = wide[(side, "requests_per_s")]
        out[f"W {side}"] = wide[(side, "ttft_ms")] / 1e3 * rps
        out[f"A {side}"] = rps * wide[(side, "tpot_ms")] / 1e3
    return out.reset_index()


def report(rows: pd.DataFrame, name: str) -> None:
    """Print the tables of one scored CSV."""
    print(f"\n==== {name}: {len(rows)} numbers")
    for metric, stats, target in METRICS:
        part = rows[(rows["metric"] == metric) & rows["statistic"].isin(stats)]
        within = (part["error"].abs() <= target).groupby(part["band"]).mean()
        order = [band_of(high) for _, high in BANDS]
        shares = ", ".join(f"{b}: {100 * within.get(b, float('nan')):.0f}%" for b in order)
        print(f"\n-- {metric} {'/'.join(stats)} (target {target:.0%}); within target by band: ")
        print("   " + shares)
        print("median signed error, %, by lengths x concurrency band")
        print(signed_table(rows, "lengths", metric, stats))
        print("by mesh x concurrency band")
        print(signed_table(rows, "mesh", metric, stats))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scores", help="CSV of serving_validate.py --source nim --out")
    parser.add_argument("--ideal", help="the same with --profile ideal (physics alone)")
    args = parser.parse_args(argv)
    try:
        rows = label(pd.read_csv(args.scores))
        ideal = label(pd.read_csv(args.ideal)) if args.ideal else None
    except (OSError, KeyError, ValueError) as err:
        print(f"error: scores: cannot read a serving_validate.py --out CSV ({err})")
        return 2
    report(rows, "row profiles")
    if ideal is not None:
        report(ideal, "ideal (physics alone)")
    split = littles_split(rows)
    high = split[split["concurrency"] >= 100]
    print(
        "\n==== Little's law, concurrency >= 100 (median over set-ups): W = requests "
        "waiting for a first token, A = prompts started per decode step"
    )
    summary = high.groupby("lengths")[
        ["W measured", "W simulated", "A measured", "A simulated"]
    ].median()
    print(summary.round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
