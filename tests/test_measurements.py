"""The measurement schema: strict CSV reading, round trips, one-line errors."""

import dataclasses

import pytest

import calibration.measurements as measurements
from calibration import Measurement, load_measurements, parse_measurements, write_measurements
from calibration.measurements import COLUMNS, PROVENANCE_COLUMNS
from roofline import InputError

HEADER = "model,hw,runtime,batch,input_tokens,output_tokens,tp,batch_latency_s\n"
GOOD = "llama-3-8b,h100-sxm,vllm,16,1024,1024,1,11.02\n"


def _one_line_error(text: str) -> str:
    with pytest.raises(InputError) as info:
        parse_measurements(text, origin="runs.csv")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_row_reads_with_defaults_for_absent_columns():
    (row,) = parse_measurements(HEADER + GOOD)
    assert (row.batch, row.input_tokens, row.output_tokens, row.tp, row.pp) == (
        16,
        1024,
        1024,
        1,
        1,
    )
    assert row.batch_latency_s == 11.02
    assert row.weight_bits == 16.0 and row.prefill_chunk is None and row.throughput_tok_s is None


def test_write_then_load_returns_equal_rows(tmp_path):
    rows = (
        Measurement("llama-3-8b", "h100-sxm", "vllm", 16, 1024, 1024, batch_latency_s=1 / 3),
        Measurement(
            "mixtral-8x7b", "a100-sxm-40gb", "llama.cpp", 1, 128, 128, pp=4, prefill_chunk=16,
            weight_format="Q4_K_M", weight_bits=4.85, throughput_tok_s=55.5, source="x.csv:2",
        ),
    )  # fmt: skip
    path = tmp_path / "runs.csv"
    write_measurements(rows, path)
    # Provenance columns are written only when a row fills them.
    assert path.read_text().splitlines()[0] == ",".join(COLUMNS[: -len(PROVENANCE_COLUMNS)])
    assert load_measurements(path) == rows
    tagged = (
        dataclasses.replace(
            rows[0], harness="server_load", runtime_version="0.6.3", date="2025-06"
        ),
    )
    write_measurements(tagged, path)
    assert path.read_text().splitlines()[0] == ",".join(COLUMNS)
    assert load_measurements(path) == tagged


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [("harness", "guess", "harness must be one of"), ("date", "June 2025", "date must be")],
)
def test_provenance_columns_are_checked(column, value, message):
    with pytest.raises(InputError, match=message):
        Measurement("llama-3-8b", "h100-sxm", "vllm", 1, 8, 8, itl_s=0.01, **{column: value})


def test_unknown_column_is_named_with_its_line():
    message = _one_line_error(HEADER.replace("batch,", "batchsize,") + GOOD)
    assert message.startswith("runs.csv:1: unknown column 'batchsize'; accepted: model, hw")


def test_missing_required_column_is_named():
    text = "model,hw,runtime,batch,input_tokens,batch_latency_s\nm,h,vllm,1,1,1.0\n"
    assert "missing required column 'output_tokens'" in _one_line_error(text)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("m,h,vllm,-3,1024,1024,1,1.0", "runs.csv:2: batch must be an integer in [1, 1000000], got -3"),
        ("m,h,vllm,0,1024,1024,1,1.0", "runs.csv:2: batch must be an integer in [1, 1000000], got 0"),
        ("m,h,vllm,1,1024,1024,0,1.0", "runs.csv:2: tp must be an integer in [1, 4096], got 0"),
        ("m,h,vllm,1.5,1024,1024,1,1.0", "runs.csv:2: batch must be an integer, got '1.5'"),
        ("m,h,vllm,1,1024,1024,1,0", "runs.csv:2: batch_latency_s must be a number in (0, 1e+07], got 0.0"),
        ("m,h,vllm,1,1024,1024,1,-2", "runs.csv:2: batch_latency_s must be a number in (0, 1e+07], got -2.0"),
        ("m,h,vllm,1,1024,1024,1,nan", "runs.csv:2: batch_latency_s must be a number in (0, 1e+07], got nan"),
        ("m,h,vllm,1,1024,1024,1,fast", "runs.csv:2: batch_latency_s must be a number, got 'fast'"),
        ("m,h,vllm,1,1024,1024,1,", "runs.csv:2: a measurement needs at least one of batch_latency_s"),
        ("m,h,tgi,1,1024,1024,1,1.0", "runs.csv:2: runtime must be one of vllm, tensorrt-llm"),
        (",h,vllm,1,1024,1024,1,1.0", "runs.csv:2: model is empty; it is required"),
        ("m,h,vllm,1,1024,1024,1.0", "runs.csv:2: 7 fields, expected 8"),
    ],
)  # fmt: skip
def test_bad_values_name_field_range_and_line(row, expected):
    assert _one_line_error(HEADER + row + "\n").startswith(expected)


def test_errors_count_lines_past_good_rows_and_blank_lines():
    text = HEADER + GOOD + "\n" + "m,h,vllm,1,1024,-1,1,1.0\n"
    assert _one_line_error(text).startswith("runs.csv:4: output_tokens must be an integer")


def test_bits_outside_one_to_32_are_refused():
    text = (
        "model,hw,runtime,batch,input_tokens,output_tokens,kv_bits,ttft_s\nm,h,vllm,1,1,1,0.5,1\n"
    )
    assert "kv_bits must be a number in [1, 32], got 0.5" in _one_line_error(text)


def test_files_above_the_size_limit_are_refused(tmp_path, monkeypatch):
    path = tmp_path / "runs.csv"
    path.write_text(HEADER + GOOD * 10)
    monkeypatch.setattr(measurements, "MAX_FILE_BYTES", 100)
    with pytest.raises(InputError, match="larger than 100 bytes; not a measurement file"):
        load_measurements(path)


def test_empty_and_missing_files_fail_clearly(tmp_path):
    with pytest.raises(InputError, match="measurement file not found"):
        load_measurements(tmp_path / "none.csv")
    with pytest.raises(InputError, match="empty file; expected a header row"):
        parse_measurements("")
