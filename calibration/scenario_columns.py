"""The columns of a scenario file (``codesign predict --scenarios``): their names,
defaults and kinds, and the output columns a file with a given header gets
(`calibration.scenarios` reads, predicts and writes the rows)."""

from __future__ import annotations

import numpy as np

from genz import ARCHITECTURE_AXES

from .measurements import METRICS as MEASURED_METRICS
from .measurements import PROVENANCE_COLUMNS
from .scenario_offload import OFFLOAD_COLUMNS

#: Largest scenario file read, bytes.
MAX_SCENARIO_BYTES = 50_000_000
INTEGER_COLUMNS = {
    "batch": 1,
    "input_tokens": 1024,
    "output_tokens": 128,
    "tp": 1,
    "pp": 1,
    "ep": 1,
    "prefill_chunk": 0,  # 0: the whole prompt in one pass
    "parallel_samples": 1,
    "beam_width": 1,
    "images": 0,
}
NUMBER_COLUMNS = {
    "weight_bits": 16.0,
    "activation_bits": 16.0,
    "kv_bits": 16.0,
    "weight_offload": 0.0,
    "kv_offload": 0.0,
}
#: Architecture variants (`genz.ARCHITECTURE_AXES`, integers); empty: the model's own.
ARCHITECTURE_COLUMNS = tuple(ARCHITECTURE_AXES)
#: Multi-LoRA serving (`genz.with_lora`): integers (rank 0: no adapters) and the targets.
LORA_COLUMNS = {"lora_rank": 0, "lora_adapters": 1}
LORA_TARGETS_COLUMN = "lora_targets"
DEFAULT_LORA_TARGETS = ("qkv", "o")
DEFAULTS = {
    **{name: float(value) for name, value in {**INTEGER_COLUMNS, **NUMBER_COLUMNS}.items()},
    **dict.fromkeys(ARCHITECTURE_COLUMNS, np.nan),
    **{name: float(value) for name, value in LORA_COLUMNS.items()},
}
TEXT_COLUMNS = ("model", "hw", "runtime")
#: Text columns of a measurement file, carried to the output unchanged.
NOTE_COLUMNS = ("weight_format", "source", *PROVENANCE_COLUMNS)
COLUMNS = (
    *TEXT_COLUMNS,
    *INTEGER_COLUMNS,
    *NUMBER_COLUMNS,
    *ARCHITECTURE_COLUMNS,
    *LORA_COLUMNS,
    LORA_TARGETS_COLUMN,
    *OFFLOAD_COLUMNS,
    *NOTE_COLUMNS,
    *MEASURED_METRICS,
)
#: (measured column, predicted output, error column) of each scored time or rate.
SCORED_TIMES = (
    ("batch_latency_s", "e2e_s", "e2e_error_pct"),
    ("ttft_s", "ttft_s", "ttft_error_pct"),
    ("itl_s", "tpot_s", "tpot_error_pct"),
    ("throughput_tok_s", "throughput_tokens_per_s", "throughput_error_pct"),
)
#: Output columns after ``line`` and the scenario's own values (`INPUT_OUTPUTS`), in
#: order; `output_columns` adds the measured columns a file has before ``error``.
SCENARIO_OUTPUTS = (
    "ttft_s",
    "ttft_low_s",
    "ttft_high_s",
    "tpot_s",
    "tpot_low_s",
    "tpot_high_s",
    "e2e_s",
    "e2e_low_s",
    "e2e_high_s",
    "throughput_tokens_per_s",
    "throughput_low_tokens_per_s",
    "throughput_high_tokens_per_s",
    "fits",
    "interval_basis",
    "ttft_interval_basis",
    "tpot_interval_basis",
    "error",
)
#: Every row's scenario as predicted (defaults filled in, the runtime used).
INPUT_OUTPUTS = (*TEXT_COLUMNS, *INTEGER_COLUMNS, *NUMBER_COLUMNS, *ARCHITECTURE_COLUMNS)
#: (output key, predicted key) of each interval (`genz.uncertainty.INTERVAL_KINDS`).
INTERVAL_OUTPUTS = (
    ("ttft", "ttft_s"),
    ("tpot", "tpot_s"),
    ("e2e", "e2e_s"),
    ("throughput", "throughput_tokens_per_s"),
)


def output_columns(header: tuple[str, ...] = ()) -> list[str]:
    """Output columns of a scenario file with column names ``header``: ``line``, the
    scenario, the predictions, the file's measurement columns (measured values as
    ``measured_<name>``, then the error of each measured time or rate), ``error``."""
    lora = (
        [*LORA_COLUMNS, LORA_TARGETS_COLUMN]
        if set(header) & {*LORA_COLUMNS, LORA_TARGETS_COLUMN}
        else []
    )
    offload = list(OFFLOAD_COLUMNS) if set(header) & set(OFFLOAD_COLUMNS) else []
    notes = [name for name in NOTE_COLUMNS if name in header]
    measured = [f"measured_{name}" for name in MEASURED_METRICS if name in header]
    errors = [error for name, _, error in SCORED_TIMES if name in header]
    return [
        "line",
        *INPUT_OUTPUTS,
        *lora,
        *offload,
        *SCENARIO_OUTPUTS[:-1],
        *notes,
        *measured,
        *errors,
        "error",
    ]
