"""Write ``data/validation/published_runs.csv`` in the `calibration.measurements` schema.

``data/validation/published_runs_source.csv`` holds one published figure per row, as
printed by its source (``metric``, ``value``), with the set-up already named by preset
(model, hw, runtime, batch, input/output tokens, tp, weight format and bits). Each
metric maps to one schema column (``data/validation/README.md`` lists the sources):

- ``decode_tokens_per_s`` (one sequence's decode rate x batch): ``itl_s = batch / value``
- ``prefill_tokens_per_s``: ``ttft_s = batch x input_tokens / value``
- ``ttft_ms``: ``ttft_s = value / 1000``
- ``e2e_output_tokens_per_s`` (vLLM ``benchmark_latency``: output tokens / mean
  latency of the whole request): ``batch_latency_s = output_tokens / value``
- ``batch_latency_s`` (vLLM ``benchmark_latency`` mean latency of the batch, seconds):
  ``batch_latency_s = value``
- ``throughput_tokens_per_s_per_gpu`` (TensorRT-LLM tables, generated tokens/s per
  GPU): ``throughput_tok_s = value x tp``
- ``throughput_tokens_per_s`` (generated tokens of the whole batch per second, e.g.
  LMDeploy ``profile_generation``): ``throughput_tok_s = value``
- ``ttft_s`` / ``ttft_ms``: ``ttft_s = value`` / ``value / 1000``
- ``itl_ms`` (mean time per generated token, ms): ``itl_s = value / 1000``
- ``batch_latency_ms`` (mean latency of the batch, ms): ``batch_latency_s = value / 1000``

``--source`` converts another file of the same columns: the rows that give a device class
a second measured device (``data/validation/device_class_runs_source.csv`` to
``device_class_runs.csv``) and the new published runs of
``data/validation/transfer/new_sources_source.csv``, whose extra columns (``source_id``,
``harness``, ``runtime_version``, ``date``, ``engine``) the schema does not take (likewise the hold-out runs of
``data/validation/holdout/holdout_runs_source.csv``): ``--meta``
writes them to a sidecar keyed by the line of the schema file (2 = first data row), the
columns ``line, source_id, harness, runtime_version, date`` then ``engine``. Tests
re-run all four and compare the bytes. Run:
``python benchmarks/convert_published_runs.py`` and
``python benchmarks/convert_published_runs.py --source data/validation/device_class_runs_source.csv --out data/validation/device_class_runs.csv``
and ``python benchmarks/convert_published_runs.py --source data/validation/transfer/new_sources_source.csv --out data/validation/transfer/new_sources.csv --meta data/validation/transfer/new_sources_meta.csv``
(``holdout/holdout_runs`` likewise).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from calibration import Measurement, write_measurements
from roofline import InputError, data_dir

SOURCE = data_dir() / "validation" / "published_runs_source.csv"
#: Columns of a source file copied to the ``--meta`` sidecar (the schema has none of them).
META_COLUMNS = ("source_id", "harness", "runtime_version", "date", "engine")
TARGET = data_dir() / "validation" / "published_runs.csv"


def metric_column(metric: str, value: float, row: dict[str, str]) -> dict[str, float]:
    """The schema column and value of one published figure (see the module docstring)."""
    batch, tokens = int(row["batch"]), int(row["input_tokens"])
    mapping = {
        "decode_tokens_per_s": lambda: {"itl_s": batch / value},
        "prefill_tokens_per_s": lambda: {"ttft_s": batch * tokens / value},
        "ttft_ms": lambda: {"ttft_s": value / 1e3},
        "e2e_output_tokens_per_s": lambda: {"batch_latency_s": int(row["output_tokens"]) / value},
        "batch_latency_s": lambda: {"batch_latency_s": value},
        "throughput_tokens_per_s_per_gpu": lambda: {"throughput_tok_s": value * int(row["tp"])},
        "throughput_tokens_per_s": lambda: {"throughput_tok_s": value},
        "ttft_s": lambda: {"ttft_s": value},
        "itl_ms": lambda: {"itl_s": value / 1e3},
        "batch_latency_ms": lambda: {"batch_latency_s": value / 1e3},
    }
    if metric not in mapping:
        raise InputError(f"metric must be one of {', '.join(mapping)}; got {metric!r}")
    return mapping[metric]()


def convert(records: list[dict[str, str]], label: str = SOURCE.name) -> list[Measurement]:
    """One schema row per published figure, in file order; source gets ``label`` (the
    source file's name) and the line number."""
    rows = []
    for line, row in enumerate(records, start=2):
        rows.append(
            Measurement(
                model=row["model"],
                hw=row["hw"],
                runtime=row["runtime"],
                batch=int(row["batch"]),
                input_tokens=int(row["input_tokens"]),
                output_tokens=int(row["output_tokens"]),
                tp=int(row["tp"]),
                weight_format=row["weight_format"],
                weight_bits=float(row["weight_bits"]),
                activation_bits=float(row["activation_bits"]),
                kv_bits=float(row["kv_bits"]),
                source=f"{label}:{line} ({row['source']})",
                **metric_column(row["metric"], float(row["value"]), row),
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--out", type=Path, default=TARGET)
    parser.add_argument(
        "--meta", type=Path, default=None, help="sidecar of " + ", ".join(META_COLUMNS)
    )
    args = parser.parse_args(argv)
    with open(args.source, newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    rows = convert(records, args.source.name)
    write_measurements(rows, args.out)
    print(f"wrote {len(rows)} rows to {args.out}")
    if args.meta is not None:
        write_meta(records, args.meta)
        print(f"wrote {len(records)} rows to {args.meta}")
    return 0


def write_meta(records: list[dict[str, str]], path: Path) -> None:
    """The ``META_COLUMNS`` of every source row, keyed by its line in the schema file
    (the header is line 1, so the first row is line 2)."""
    missing = [name for name in META_COLUMNS if records and name not in records[0]]
    if missing:
        raise InputError(
            f"--meta needs source columns {', '.join(META_COLUMNS)}; missing {', '.join(missing)}"
        )
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(("line", *META_COLUMNS))
        for number, record in enumerate(records, start=2):
            writer.writerow((number, *(record[name] for name in META_COLUMNS)))


if __name__ == "__main__":
    sys.exit(main())
