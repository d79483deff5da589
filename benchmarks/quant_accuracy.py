"""Out-of-sample batch-latency error of the quantised LLM-Inference-Bench rows, beside
the same set-ups at 16 bits.

``quant_kv_dtype_results.csv`` (116 rows: vLLM on A100 40GB and H100, TensorRT-LLM on
A100; Llama-3-8B, batch 1-64, L = 128-2048) names weight and KV-cache dtypes in one
column (``"Weight = fp8, KV Cache = fp8"``). The converter writes them as bits
(`convert_llm_inference_bench`): fp8 / int8 weights 8 bits (activations 8 bits too for
FP8 on H100 and TensorRT-LLM int8 SmoothQuant), fp8 / int8 KV cache 8 bits per element,
which genz charges as 1 byte per cached element (``graph.py``: ``kv_bits / 8``).

Groups, by the published label: FP8 weights (vLLM H100, FP8 checkpoint, FP8 KV);
FP8 KV cache with 16-bit weights; INT8 KV cache with 16-bit weights; INT8 SmoothQuant
weights. The 16-bit counterparts of a group are the F16-weight, F16-KV rows of the
same runtime, hardware, model, batch, prompt length and tp (from ``all_results.csv``
and the F16 rows of the quantised file), so a group's error can be read against the
error the same set-ups have at 16 bits.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence

import pandas as pd
from serving_accuracy import summary

from genz import Measurement
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
