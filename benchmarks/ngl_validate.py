"""Physics alone against a published llama.cpp ``-ngl`` sweep (issue 23, "Validation").

Predicts every row of ``data/validation/ngl/ngl_runs.csv`` that ``--gpu-layers``
expresses with `genz.predict_partial_offload` and no runtime profile (``--runtime
ideal``: the presets' own efficiencies and kernel overheads), the device ``rtx-3090``
and the host ``ryzen-7-3700x``, and prints per row the measured and predicted ms per
generated token and ``predicted / measured - 1``, then the MAPE and bias by model and
test. Nothing is fitted on these rows. The source has tg (generation) rows only. Last, a
structure check that uses the measured endpoints (labelled; not a prediction): how far the
intermediate rows are from the straight line between all-host and all-device.

    python benchmarks/ngl_validate.py
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass

from genz import Precision, Scenario, load_model
from genz.partial_offload import predict_partial_offload
from roofline import data_dir, load_platform

CSV = data_dir() / "validation" / "ngl" / "ngl_runs.csv"
#: llama.cpp of 2023-07 kept activations and the KV cache in f16.
ACTIVATION_BITS = 16.0
KV_BITS = 16.0


@dataclass(frozen=True)
class Scored:
    """One scored row: ms per generated token, measured and predicted."""

    source_model: str
    test: str
    ngl: int
    gpu_layers: int
    measured_ms: float
    predicted_ms: float

    @property
    def error(self) -> float:
        """``predicted / measured - 1``."""
        return self.predicted_ms / self.measured_ms - 1.0


def load_rows() -> list[dict[str, str]]:
    """Every row of the transcribed sweep."""
    with open(CSV, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def score(rows: list[dict[str, str]]) -> tuple[list[Scored], list[dict[str, str]]]:
    """(scored rows, rows no ``--gpu-layers`` value expresses)."""
    scored, skipped = [], []
    for row in rows:
        if not row["gpu_layers"]:
            skipped.append(row)
            continue
        scenario = Scenario(
            batch=1,
            input_tokens=int(row["input_tokens"]),
            output_tokens=int(row["output_tokens"]),
            precision=Precision(
                weight_bits=float(row["weight_bits"]),
                activation_bits=ACTIVATION_BITS,
                kv_bits=KV_BITS,
            ),
        )
        result = predict_partial_offload(
            load_model(row["model"]),
            load_platform(row["hardware"]),
            load_platform(row["host_hardware"]),
            scenario,
            int(row["gpu_layers"]),
        )
        scored.append(
            Scored(
                source_model=row["source_model"],
                test=row["test"],
                ngl=int(row["ngl"]),
                gpu_layers=int(row["gpu_layers"]),
                measured_ms=float(row["tpot_ms"]),
                predicted_ms=result.tpot_s * 1e3,
            )
        )
    return scored, skipped


def summary(scored: list[Scored]) -> dict[tuple[str, str], tuple[int, float, float]]:
    """(model, test) -> (rows, MAPE, bias), plus ("all", test) over every model."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for entry in scored:
        groups[(entry.source_model, entry.test)].append(entry.error)
        groups[("all", entry.test)].append(entry.error)
    return {
        key: (len(errors), sum(map(abs, errors)) / len(errors), sum(errors) / len(errors))
        for key, errors in groups.items()
    }


def split_check(rows: list[dict[str, str]]) -> dict[str, tuple[int, float, float]]:
    """Structure check, not a prediction: each model's intermediate rows (``-ngl`` 1..L-1)
    against the straight line between its own measured all-host (``-ngl 0``) and
    all-device (``-ngl L + 1``) times, the per-layer additivity `genz.partial_offload`
    assumes. model -> (rows, MAPE, bias)."""
    by_model: dict[str, dict[int, dict[str, str]]] = defaultdict(dict)
    for row in rows:
        if row["gpu_layers"]:
            by_model[row["source_model"]][int(row["ngl"])] = row
    out = {}
    for model, by_ngl in by_model.items():
        layers = int(next(iter(by_ngl.values()))["layers"])
        host, device = float(by_ngl[0]["tpot_ms"]), float(by_ngl[layers + 1]["tpot_ms"])
        errors = [
            (host + n / layers * (device - host)) / float(by_ngl[n]["tpot_ms"]) - 1.0
            for n in range(1, layers)
        ]
        out[model] = (
            len(errors),
            sum(map(abs, errors)) / len(errors),
            sum(errors) / len(errors),
        )
    return out


def main() -> None:
    scored, skipped = score(load_rows())
    print("model           test  ngl  --gpu-layers  measured ms  predicted ms   error")
    for entry in scored:
        print(
            f"{entry.source_model:<15} {entry.test:<4} {entry.ngl:>4} {entry.gpu_layers:>13} "
            f"{entry.measured_ms:>12.2f} {entry.predicted_ms:>13.2f} {entry.error:>+7.1%}"
        )
    print(f"\nnot scored: {len(skipped)} rows")
    reasons: dict[str, int] = defaultdict(int)
    for row in skipped:
        reasons[f"{row['source_model']}: {row['not_expressed']}"] += 1
    for reason, count in sorted(reasons.items()):
        print(f"  {count:>3}  {reason}")
    print("\nphysics alone (--runtime ideal), ms per generated token")
    print("group            test  rows    MAPE    bias")
    for (group, test), (count, mape, bias) in sorted(summary(scored).items()):
        print(f"{group:<16} {test:<4} {count:>5} {mape:>7.1%} {bias:>+7.1%}")
    print("\nstructure check (measured endpoints, not a prediction): -ngl 1..L-1 against")
    print("the line between the measured -ngl 0 and -ngl L + 1 times")
    for model, (count, mape, bias) in sorted(split_check(load_rows()).items()):
        print(f"{model:<16} tg   {count:>5} {mape:>7.1%} {bias:>+7.1%}")


if __name__ == "__main__":
    main()
