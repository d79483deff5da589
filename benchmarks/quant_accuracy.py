"""Out-of-sample batch-latency error of the quantised LLM-Inference-Bench rows, beside
the same set-ups at 16 bits.

``quant_kv_dtype_results.csv`` (116 rows: vLLM on A100 40GB and H100, TensorRT-LLM on
A100; Llama-3-8B, batch 1-64, L = 128-2048) names weight and KV-cache dtypes in one
column (``"Weight = fp8, KV Cache = fp8"``). The converter writes them as bits
(`convert_llm_inference_bench`): fp8 / int8 weights 8 bits (activations 8 bits too for
FP8 on H100 and TensorRT-LLM int8 SmoothQuant), fp8 / int8 KV cache 8 bits per element,
which genz charges as 1 byte per cached element (``attention_ops.py``: ``kv_bits / 8``).

Groups, by the published label: FP8 weights (vLLM H100, FP8 checkpoint, FP8 KV);
FP8 KV cache with 16-bit weights; INT8 KV cache with 16-bit weights; INT8 SmoothQuant
weights. The 16-bit counterparts of a group are the F16-weight, F16-KV rows of the
same runtime, hardware, model, batch, prompt length and tp (from ``all_results.csv``
and the F16 rows of the quantised file), so a group's error can be read against the
error the same set-ups have at 16 bits.

vLLM's FP8 KV cache on the A100 (no FP8 arithmetic: its kernels convert every cached
element in software) is the one set-up a runtime profile's KV-format term
(``kv_formats.fp8.emulated_memory_efficiency_scale``) is fitted for. Leave-one-hardware-out
cannot score it: the A100 is the only measured device without FP8, so with it held out
no row identifies the term. `emulated_kv_table` scores it instead with the group's own
rows held out one prompt length at a time (`held_out_by_length`), beside the shipped
profile's in-sample error.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence

import numpy as np
import pandas as pd
from serving_accuracy import RUNTIME_DATA, _path, summary

from calibration import (
    Measurement,
    calibration_rows,
    fit_runtime,
    load_formats,
    load_kv_formats,
    load_measurements,
)
from genz import load_runtime
from roofline import data_dir

QUANT_FILE = "quant_kv_dtype_results.csv"
#: Set-up columns a 16-bit counterpart must share with a quantised row.
KEY = ("runtime", "hw", "model", "batch", "input_tokens", "tp")


def published_labels() -> dict[str, tuple[str, str]]:
    """``source`` -> (weight dtype, KV dtype) as published in the ``kv_cache_dtype`` column."""
    path = data_dir() / "validation" / "llm_inference_bench" / QUANT_FILE
    labels = {}
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            weight, kv = (part.split("=")[1].strip() for part in row["kv_cache_dtype"].split(","))
            labels[f"{QUANT_FILE}:{reader.line_num}"] = (weight, kv)
    return labels


def group_of(weight: str, kv: str) -> str | None:
    """The quantisation group of a published (weight, KV) dtype pair; None for F16/F16."""
    if weight == "fp8":
        return "FP8 weights (W8A8) + FP8 KV"
    if weight == "int8":
        return "INT8 SmoothQuant weights + 8-bit KV"
    if kv in ("fp8", "int8"):
        return f"{kv.upper()} KV cache, 16-bit weights"
    return None


def quant_frame(frame: pd.DataFrame, rows: Sequence[Measurement]) -> pd.DataFrame:
    """`validate`'s batch-latency rows with set-up columns and a ``group`` column:
    the quantisation group, ``"16-bit"`` for F16-weight F16-KV rows, None otherwise."""
    setups = pd.DataFrame(
        [
            {
                "source": row.source,
                "model": row.model,
                "batch": row.batch,
                "input_tokens": row.input_tokens,
                "weight_bits": row.weight_bits,
                "kv_bits": row.kv_bits,
            }
            for row in rows
        ]
    )
    latency = frame[frame.metric == "batch latency"].merge(setups, on="source", how="left")
    labels = published_labels()
    sixteen = (latency.weight_bits == 16) & (latency.kv_bits == 16)
    latency["group"] = [
        group_of(*labels[source]) if source in labels else None for source in latency.source
    ]
    latency.loc[sixteen & latency.group.isna(), "group"] = "16-bit"
    return latency


def quant_table(latency: pd.DataFrame) -> pd.DataFrame:
    """Per group (and runtime x hardware within it): the group's error and its 16-bit
    counterparts' error, out of sample and ideal."""
    reference = latency[latency.group == "16-bit"]
    lines = []
    for group, part in latency[latency.group.notna() & (latency.group != "16-bit")].groupby(
        "group"
    ):
        splits = [
            ("all", part),
            *((f"{r} / {h}", p) for (r, h), p in part.groupby(["runtime", "hw"])),
        ]
        for label, rows in splits:
            keys = rows[list(KEY)].drop_duplicates()
            twins = reference.merge(keys, on=list(KEY))
            for kind, chosen in (("quantised", rows), ("16-bit counterparts", twins)):
                if len(chosen):
                    lines.append(
                        {"group": group, "set-up": label, "rows of": kind, **summary(chosen)}
                    )
    return pd.DataFrame(lines)


def print_quant(latency: pd.DataFrame) -> None:
    """The quantisation section of `validate`."""
    print(
        "\nQuantised rows (quant_kv_dtype_results.csv), batch latency, signed % error; "
        "'16-bit counterparts' = the F16 rows of the same runtime, hardware, model, batch, "
        "length and tp:"
    )
    table = quant_table(latency)
    print(table.to_string(index=False, float_format=lambda value: f"{value:6.1f}"))
    print_emulated_kv()


#: The runtime whose emulated KV format `emulated_kv_table` scores.
EMULATED_RUNTIME = "vllm"


def held_out_by_length() -> tuple[pd.DataFrame, dict[int, float]]:
    """Per row of an emulated KV format (``kv_bits`` of one of the runtime's KV formats
    on a device lacking its native dtype: vLLM FP8 KV on A100): the signed % error of
    batch latency predicted by the profile fitted (`calibration.fit_runtime`, exactly as
    ``codesign calibrate`` fits the shipped one) on every row except those of the group
    with the same prompt length, and by the shipped profile (in-sample); and per length
    the held-out fit's scale on the rows' device class."""
    files, formats_file = RUNTIME_DATA[EMULATED_RUNTIME]
    rows = [row for path in files for row in load_measurements(_path(path))]
    formats = load_formats(_path(formats_file))[0] if formats_file else ()
    kv_formats = load_kv_formats(_path(formats_file))[0] if formats_file else ()
    data, _ = calibration_rows(rows, EMULATED_RUNTIME, formats=formats, kv_formats=kv_formats)
    group = np.zeros(len(data.rows), bool)
    for fmt in kv_formats:
        group |= data.emulated(fmt)
    lengths = np.array([row.input_tokens for row in data.rows])
    measured = data.measured["batch_latency_s"]
    held = np.full(len(data.rows), np.nan)
    scales = {}
    for length in sorted(set(lengths[group].tolist())):
        test = group & (lengths == length)
        fitted = fit_runtime(
            data.subset(~test), EMULATED_RUNTIME, formats, check=False, kv_formats=kv_formats
        ).profile
        held[test] = data.subset(test).predict(fitted)["batch_latency_s"]
        kind = data.kinds[int(np.flatnonzero(test)[0])]
        scales[int(length)] = min(fitted.kv_scale(fmt, kind) for fmt in kv_formats)
    shipped = data.predict(load_runtime(EMULATED_RUNTIME))["batch_latency_s"]
    frame = pd.DataFrame(
        {
            "hw": [data.hw[i] for i in np.flatnonzero(group)],
            "batch": [data.rows[i].batch for i in np.flatnonzero(group)],
            "input_tokens": lengths[group],
            "held_out_pct": 100 * (held[group] - measured[group]) / measured[group],
            "in_sample_pct": 100 * (shipped[group] - measured[group]) / measured[group],
        }
    )
    return frame, scales


def _errors(values: np.ndarray) -> str:
    absolute = np.abs(values)
    return (
        f"MAPE {absolute.mean():.1f}%, median {np.median(absolute):.1f}%, "
        f"p90 {np.quantile(absolute, 0.9):.1f}%, bias {values.mean():+.1f}%"
    )


def print_emulated_kv() -> None:
    """The emulated-KV-format figure of `validate` (see the module doc)."""
    frame, scales = held_out_by_length()
    hardware = ", ".join(sorted(set(frame.hw)))
    print(
        f"\nFP8 KV cache on a device without FP8 arithmetic ({EMULATED_RUNTIME} on {hardware}, "
        f"{len(frame)} rows), batch latency, signed % error. Leave-one-hardware-out cannot "
        "score the KV-format term (held out, no other row identifies it: the line above). "
        "Held out here: for each prompt length L, the profile is fitted on every "
        f"{EMULATED_RUNTIME} row except this group's rows of length L, and predicts those:"
    )
    print(f"  leave-one-prompt-length-out: {_errors(frame.held_out_pct.to_numpy())}")
    print(
        "  in-sample (the shipped profile, fitted on all rows): "
        f"{_errors(frame.in_sample_pct.to_numpy())}"
    )
    for length, part in frame.groupby("input_tokens"):
        print(
            f"    L {length:>5}: {len(part)} rows held out, fitted scale "
            f"{scales[int(length)]:.4g}; held out {_errors(part.held_out_pct.to_numpy())}"
        )
