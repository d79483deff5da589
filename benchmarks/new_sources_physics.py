"""How far physics alone is from the new published runs, per source (issue 20 data).

Predicts every row of ``data/validation/transfer/new_sources.csv`` with `genz.predict` and
no runtime profile (the platform presets' own efficiencies and kernel overheads: the
``ideal`` baseline a calibration must beat on sources it never saw) and prints, per
source id of ``new_sources_meta.csv`` and per measured quantity, the row count, the mean
absolute error (MAPE) and the mean error (bias) of ``predicted / measured - 1``. The
quantities are those of `calibration.measured_metrics`: batch latency (from the batch's
throughput where only that is given: ``batch x output_tokens / throughput``), TTFT and
the decode inter-token latency. Run: ``python benchmarks/new_sources_physics.py``.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict

from calibration import load_measurements
from genz import Parallelism, Precision, Scenario, load_model, predict
from roofline import data_dir, load_platform

FOLDER = data_dir() / "validation" / "transfer"


def row_errors() -> list[tuple[str, str, float]]:
    """(source id, quantity, predicted / measured - 1) for every measured number."""
    rows = load_measurements(FOLDER / "new_sources.csv")
    with open(FOLDER / "new_sources_meta.csv", newline="", encoding="utf-8") as handle:
        ids = {int(entry["line"]): entry["source_id"] for entry in csv.DictReader(handle)}
    errors = []
    for line, row in enumerate(rows, start=2):
        scenario = Scenario(
            batch=row.batch,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            parallelism=Parallelism(tp=row.tp, pp=row.pp),
            precision=Precision(
                weight_bits=row.weight_bits,
                activation_bits=row.activation_bits,
                kv_bits=row.kv_bits,
            ),
        )
        result = predict(load_model(row.model), load_platform(row.hw), scenario)
        latency = row.batch_latency_s
        if latency is None and row.throughput_tok_s is not None:
            latency = row.batch * row.output_tokens / row.throughput_tok_s
        for name, measured, predicted in (
            ("batch latency", latency, result.e2e_s),
            ("TTFT", row.ttft_s, result.ttft_s),
            ("ITL (decode)", row.itl_s, result.tpot_s),
        ):
            if measured is not None:
                errors.append((ids[line], name, predicted / measured - 1.0))
    return errors


def main() -> int:
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for source, name, error in row_errors():
        groups[(source, name)].append(error)
        groups[("all sources", name)].append(error)
    print(f"{'source id':42s} {'quantity':14s} {'rows':>5s} {'MAPE %':>7s} {'bias %':>7s}")
    for (source, name), values in sorted(groups.items(), key=lambda item: item[0]):
        mape = 100 * sum(abs(v) for v in values) / len(values)
        bias = 100 * sum(values) / len(values)
        print(f"{source:42s} {name:14s} {len(values):5d} {mape:7.1f} {bias:+7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
