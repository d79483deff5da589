"""How the SHIPPED profiles do on published runs no fit saw (issue 20, out-of-source check).

Predicts every row of ``data/validation/holdout/holdout_runs.csv`` (five sources added
after every shipped profile was fitted: none of these rows tuned anything) three ways
with `genz.predict`:

- ``ideal``: physics alone (no runtime profile; the platform presets' own efficiencies);
- ``stack``: the shipped profile of the row's ``runtime`` (``data/runtimes/<runtime>.yaml``:
  vllm, llama.cpp, tensorrt-llm, deepspeed...); a row whose runtime ships no profile
  (``other``) is predicted by physics, as ``predict --runtime`` without a profile is;
- ``transfer``: the generic transfer profile ``data/runtimes/transfer/transfer.yaml``.

and prints, per source id (``holdout_runs_meta.csv``) and measured quantity (batch
latency, from the batch's throughput where only that is given; TTFT; decode ITL, all
seconds), the row count, MAPE and bias of ``predicted / measured - 1`` for each, then the
same over all sources and the source-averaged MAPE (mean over sources of each source's
MAPE over its values). ``rows with a stack profile`` counts the values the stack column
predicts with a profile of its own.

The figure is out of source only while no profile scored was fitted on these rows: the
stack profiles are fitted on LLM-Inference-Bench alone, but ``transfer.yaml`` is re-fitted
on the whole store, which lists these rows since they were scored. ``--transfer PATH``
scores another transfer profile, e.g. the one shipped before (docs/accuracy.md quotes it):

    git show 126d497:data/runtimes/transfer/transfer.yaml > /tmp/transfer_before.yaml
    python benchmarks/new_sources_holdout.py --transfer /tmp/transfer_before.yaml
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from calibration import Measurement, load_measurements
from genz import (
    Parallelism,
    Precision,
    RuntimeProfile,
    Scenario,
    list_runtimes,
    load_model,
    load_runtime,
    predict,
)
from roofline import data_dir, load_platform

FOLDER = data_dir() / "validation" / "holdout"
TRANSFER_PROFILE = data_dir() / "runtimes" / "transfer" / "transfer.yaml"
KINDS = ("ideal", "stack", "transfer")
QUANTITIES = ("batch latency", "TTFT", "ITL (decode)")


@dataclass(frozen=True)
class ValueErrors:
    """One measured value and each way's ``predicted / measured - 1``."""

    source: str
    quantity: str
    errors: dict[str, float]
    has_stack_profile: bool


def source_ids(meta: Path) -> dict[int, str]:
    """Line of the schema file -> source id, from its sidecar."""
    with open(meta, newline="", encoding="utf-8") as handle:
        return {int(entry["line"]): entry["source_id"] for entry in csv.DictReader(handle)}


def measured(row: Measurement) -> dict[str, float]:
    """The row's measured quantities, seconds (batch latency from throughput if needed)."""
    latency = row.batch_latency_s
    if latency is None and row.throughput_tok_s is not None:
        latency = row.batch * row.output_tokens / row.throughput_tok_s
    found = {"batch latency": latency, "TTFT": row.ttft_s, "ITL (decode)": row.itl_s}
    return {name: value for name, value in found.items() if value is not None}


def scenario_of(row: Measurement) -> Scenario:
    """The row's set-up as a genz scenario."""
    return Scenario(
        batch=row.batch,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        parallelism=Parallelism(tp=row.tp, pp=row.pp),
        precision=Precision(
            weight_bits=row.weight_bits, activation_bits=row.activation_bits, kv_bits=row.kv_bits
        ),
    )


def predicted(row: Measurement, profile: RuntimeProfile | None) -> dict[str, float]:
    """Batch latency, TTFT and ITL (seconds) predicted with ``profile`` (None: physics)."""
    result = predict(load_model(row.model), load_platform(row.hw), scenario_of(row), profile)
    return {"batch latency": result.e2e_s, "TTFT": result.ttft_s, "ITL (decode)": result.tpot_s}


def value_errors(
    rows: Sequence[Measurement], ids: dict[int, str], transfer: RuntimeProfile
) -> list[ValueErrors]:
    """Every measured value of ``rows`` with its error under each of `KINDS`."""
    shipped = set(list_runtimes())
    stacks: dict[str, RuntimeProfile] = {}
    found = []
    for line, row in enumerate(rows, start=2):
        has_stack = row.runtime in shipped and row.runtime != "ideal"
        if has_stack and row.runtime not in stacks:
            stacks[row.runtime] = load_runtime(row.runtime)
        by_kind = {
            "ideal": predicted(row, None),
            "stack": predicted(row, stacks.get(row.runtime) if has_stack else None),
            "transfer": predicted(row, transfer),
        }
        for quantity, value in measured(row).items():
            errors = {kind: by_kind[kind][quantity] / value - 1.0 for kind in KINDS}
            found.append(ValueErrors(ids[line], quantity, errors, has_stack))
    return found


def summary(values: Sequence[ValueErrors], kind: str) -> tuple[float, float]:
    """(MAPE %, bias %) of ``values`` under ``kind``."""
    errors = [value.errors[kind] for value in values]
    return (
        100 * sum(abs(e) for e in errors) / len(errors),
        100 * sum(errors) / len(errors),
    )


def table(values: Sequence[ValueErrors]) -> list[str]:
    """The per-source / per-quantity table, then all sources and the source average."""
    groups: dict[tuple[str, str], list[ValueErrors]] = defaultdict(list)
    for value in values:
        groups[(value.source, value.quantity)].append(value)
        groups[(value.source, "all")].append(value)
        groups[("all sources", value.quantity)].append(value)
        groups[("all sources", "all")].append(value)
    head = f"{'source id':36s} {'quantity':13s} {'rows':>4s} {'stk':>4s}"
    head += "".join(f" {kind + ' MAPE':>14s} {'bias':>7s}" for kind in KINDS)
    lines = [head]
    order = [*sorted({v.source for v in values}), "all sources"]
    for source in order:
        for quantity in (*QUANTITIES, "all"):
            group = groups.get((source, quantity))
            if not group:
                continue
            with_stack = sum(value.has_stack_profile for value in group)
            line = f"{source:36s} {quantity:13s} {len(group):4d} {with_stack:4d}"
            for kind in KINDS:
                mape, bias = summary(group, kind)
                line += f" {mape:13.1f}% {bias:+6.1f}%"
            lines.append(line)
    averaged = "source-averaged MAPE:"
    for kind in KINDS:
        per_source = [summary(groups[(source, "all")], kind)[0] for source in order[:-1]]
        averaged += f" {kind} {sum(per_source) / len(per_source):.1f}%"
    lines.append(averaged)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transfer", type=Path, default=TRANSFER_PROFILE)
    args = parser.parse_args(argv)
    rows = load_measurements(FOLDER / "holdout_runs.csv")
    ids = source_ids(FOLDER / "holdout_runs_meta.csv")
    values = value_errors(rows, ids, load_runtime(args.transfer))
    print(f"transfer profile: {args.transfer}")
    print(f"{len(rows)} rows, {len(values)} measured values; stk = values with a stack profile")
    print("\n".join(table(values)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
