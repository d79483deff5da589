"""The LLM-Inference-Bench copy: the converter reproduces the committed normalized.csv,
and the published columns mean what its docstring says."""

import csv
import functools

import pytest

from calibration import load_measurements
from roofline import data_dir

FOLDER = data_dir() / "validation" / "llm_inference_bench"


@pytest.fixture(scope="module")
def normalized():
    return load_measurements(FOLDER / "normalized.csv")


def test_rerunning_the_converter_reproduces_the_committed_file(rerun_converter):
    expected = (FOLDER / "normalized.csv").read_bytes()
    assert rerun_converter("convert_llm_inference_bench.py") == expected


def test_license_travels_with_the_data():
    assert "BSD 3-Clause License" in (FOLDER / "LICENSE").read_text()
    assert "UChicago Argonne" in (FOLDER / "LICENSE").read_text()


@functools.cache
def _table(name: str) -> tuple[dict[str, str], ...]:
    with open(FOLDER / name, newline="") as handle:
        return tuple(csv.DictReader(handle))


def _published(name: str, line: int) -> dict[str, str]:
    """The published row on ``line`` of ``name`` (the header is line 1)."""
    return _table(name)[line - 2]


def test_llama_cpp_batch_size_is_the_prompt_chunk_of_one_sequence(normalized):
    # all_results.csv:176: A100 llama.cpp Llama-2-7B, L = 128, "Batch Size" 16.
    published = _published("all_results.csv", 176)
    (row,) = [r for r in normalized if r.source == "all_results.csv:176"]
    assert (published["Framework"], published["Batch Size"]) == ("llama.cpp", "16")
    assert (row.batch, row.prefill_chunk, row.input_tokens, row.output_tokens) == (1, 16, 128, 128)
    # Published Throughput = (128 prompt + 128 generated tokens) / Latency of ONE sequence.
    assert float(published["Throughput"]) == pytest.approx(256 / float(published["Latency"]))
    assert row.throughput_tok_s == pytest.approx(128 / row.batch_latency_s)


def test_vllm_throughput_counts_prompt_and_generated_tokens_of_the_batch(normalized):
    (row,) = [r for r in normalized if r.runtime == "vllm" and r.source.startswith("all_results")][
        :1
    ]
    published = _published("all_results.csv", int(row.source.split(":")[1]))
    tokens = row.batch * 2 * row.input_tokens
    assert float(published["Throughput"]) == pytest.approx(tokens / row.batch_latency_s)
    assert row.throughput_tok_s == pytest.approx(float(published["Throughput"]) / 2)


def test_mi250_modules_are_two_gcds(normalized):
    mi250 = [r for r in normalized if r.hw == "mi250-gcd" and r.source.startswith("all_results")]
    published = {
        int(_published("all_results.csv", int(r.source.split(":")[1]))["Num of Hardware"])
        for r in mi250
    }
    assert published == {1, 2, 4}
    assert {r.devices for r in mi250} == {2, 4, 8}
    # vLLM needs heads divisible by tp: Qwen2-7B (28 heads) has rows on 1 and 2 modules
    # (tp 2, 4) and none on 4 modules (tp 8), as counting GCDs predicts.
    assert {r.tp for r in mi250 if r.model == "qwen2-7b" and r.runtime == "vllm"} == {2, 4}


def test_power_is_written_in_watts(normalized):
    powered = [r for r in normalized if r.power_w is not None]
    assert len(powered) == 40
    assert all(100 < r.power_w < 700 for r in powered)  # board limits: A100 400 W, H100 700 W
