"""The ``gpu_layers`` and ``host_hw`` columns of a scenario file: llama.cpp ``-ngl``
partial offload (`genz.predict_partial_offload`), ``gpu_layers`` of the model's layers on
the row's ``hw`` and the rest computed by the ``host_hw`` CPU from host memory, each row
predicted as ``codesign predict --gpu-layers K --host-hw H`` predicts it (one row at a
time: the split is not a grid axis). Both cells go together; empty in both: no split.

A row's outputs mean what the grid's rows do: TTFT, TPOT and end-to-end seconds, the
generated tokens per second over the end-to-end time (``batch x parallel_samples x
output_tokens / e2e_s``) and ``fits`` (device and host memory both hold their share).
Intervals are left empty: no held-out error covers a device-host split."""

from __future__ import annotations

from typing import Any

from genz import (
    ModelConfig,
    Parallelism,
    Precision,
    RuntimeProfile,
    Scenario,
    predict_partial_offload,
)
from roofline import InputError, Platform

#: The offload columns: an integer (layers on the device) and a host preset or file.
GPU_LAYERS_COLUMN = "gpu_layers"
HOST_HW_COLUMN = "host_hw"
OFFLOAD_COLUMNS = (GPU_LAYERS_COLUMN, HOST_HW_COLUMN)
#: ``interval_basis`` of an offload row.
OFFLOAD_BASIS = "none: no held-out error covers -ngl partial offload"
#: genz's messages name the CLI's flags; a scenario file names its columns.
_FLAGS_TO_COLUMNS = (
    ("--gpu-layers", GPU_LAYERS_COLUMN),
    ("--host-hw", HOST_HW_COLUMN),
    ("--weight-offload / --kv-offload", "weight_offload / kv_offload"),
)


def offload_cells(gpu_layers: str, host_hw: str) -> tuple[int | None, str]:
    """The row's parsed ``gpu_layers`` (None: empty) and ``host_hw`` cells; one without
    the other, or a ``gpu_layers`` that is not a whole number >= 0, is a one-line error
    naming the column (the upper bound, the model's layers, is checked per model)."""
    if bool(gpu_layers) != bool(host_hw):
        raise InputError(
            f"{GPU_LAYERS_COLUMN} and {HOST_HW_COLUMN} go together (llama.cpp -ngl offload)"
        )
    if not gpu_layers:
        return None, ""
    try:
        number = float(gpu_layers)
    except ValueError:
        number = -1.0
    if not (number.is_integer() and number >= 0):
        raise InputError(f"{GPU_LAYERS_COLUMN} must be an integer >= 0, got {gpu_layers!r}")
    return int(number), host_hw


def row_scenario(values: dict[str, float]) -> Scenario:
    """The `genz.Scenario` of a row's numeric cells (``prefill_chunk`` 0: the whole
    prompt, as `codesign predict` without ``--prefill-chunk``)."""
    chunk = int(values["prefill_chunk"])
    return Scenario(
        batch=int(values["batch"]),
        input_tokens=int(values["input_tokens"]),
        output_tokens=int(values["output_tokens"]),
        precision=Precision(
            weight_bits=values["weight_bits"],
            activation_bits=values["activation_bits"],
            kv_bits=values["kv_bits"],
        ),
        parallelism=Parallelism(int(values["tp"]), int(values["pp"]), int(values["ep"])),
        prefill_chunk=chunk or None,
        parallel_samples=int(values["parallel_samples"]),
        beam_width=int(values["beam_width"]),
        weight_offload=values["weight_offload"],
        kv_offload=values["kv_offload"],
        images=int(values["images"]),
    )


def offload_outputs(
    model: ModelConfig,
    platform: Platform,
    host: Platform,
    values: dict[str, float],
    gpu_layers: int,
    runtime: RuntimeProfile,
) -> dict[str, Any]:
    """The predicted columns of one offload row (module doc); errors name the columns."""
    scenario = row_scenario(values)
    profile = None if runtime.is_ideal else runtime
    try:
        split = predict_partial_offload(
            model, platform, host, scenario, gpu_layers, runtime=profile, host_runtime=profile
        )
    except InputError as error:
        raise column_error(error) from None
    generated = scenario.batch * scenario.parallel_samples * scenario.output_tokens
    return {
        "ttft_s": split.ttft_s,
        "tpot_s": split.tpot_s,
        "e2e_s": split.e2e_s,
        "throughput_tokens_per_s": generated / split.e2e_s,
        "fits": split.device_fits and split.host_fits,
        **{f"{key}_low_{unit}": None for key, unit in _UNITS},
        **{f"{key}_high_{unit}": None for key, unit in _UNITS},
        "interval_basis": OFFLOAD_BASIS,
        "ttft_interval_basis": OFFLOAD_BASIS,
        "tpot_interval_basis": OFFLOAD_BASIS,
    }


_UNITS = (("ttft", "s"), ("tpot", "s"), ("e2e", "s"), ("throughput", "tokens_per_s"))


def column_error(error: InputError) -> InputError:
    """``error`` with the CLI's offload flags replaced by the file's column names."""
    text = str(error)
    for flag, column in _FLAGS_TO_COLUMNS:
        text = text.replace(flag, column)
    return InputError(text)
