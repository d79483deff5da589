"""data/validation/transfer/: published measured runs from sources new to the project
(issue 20, item 1), in the measurement schema, with harness / version / date beside them."""

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from calibration import load_measurements
from genz import load_model
from roofline import data_dir, load_platform

FOLDER = data_dir() / "validation" / "transfer"
SOURCE, CSV, META = (FOLDER / f"new_sources{tail}.csv" for tail in ("_source", "", "_meta"))
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
#: The brief's harness names and the two of the measurement store on main (92bc8ff) used
#: here: server_single_request (one request at a time to a server) and offline_generate.
HARNESSES = {
    "llama-bench",
    "benchmark_latency",
    "offline_generate",
    "offline_throughput",
    "server_load",
    "server_single_request",
    "vendor_table",
    "paper_table",
    "other",
}


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _origin(source: str) -> str:
    """The repository or page of a row's source: 'github:owner/name' or the URL."""
    inner = source.split("(", 1)[1]
    return inner.split(" ", 1)[0]


def test_rerunning_the_converter_reproduces_the_schema_file_and_the_sidecar(
    tmp_path, rerun_converter
):
    meta = tmp_path / "meta.csv"
    extra = ("--source", str(SOURCE), "--meta", str(meta))
    assert rerun_converter("convert_published_runs.py", *extra) == CSV.read_bytes()
    assert meta.read_bytes() == META.read_bytes()


def test_every_row_loads_names_a_source_and_known_presets():
    rows = load_measurements(CSV)
    assert len(rows) == len(_read(SOURCE)) >= 150
    for line, row in enumerate(rows, start=2):
        load_model(row.model)
        load_platform(row.hw)
        assert row.source.startswith(f"new_sources_source.csv:{line} (")
        assert "read 2026-12-03" in row.source
        assert re.search(r"@[0-9a-f]{7,}|https://|pull/\d+|issues/\d+", row.source), row.source
    origins = Counter(_origin(row.source) for row in rows)
    assert len(origins) >= 12, origins


def test_the_sidecar_gives_every_row_a_source_id_harness_version_and_date():
    """Columns ``line, source_id, harness, runtime_version, date`` first: the sidecar format
    the measurement store reads beside a measurement file (``<file>_meta.csv``)."""
    rows, meta = load_measurements(CSV), _read(META)
    with open(META, encoding="utf-8") as handle:
        header = handle.readline().strip().split(",")
    assert header == ["line", "source_id", "harness", "runtime_version", "date", "engine"]
    assert [int(entry["line"]) for entry in meta] == list(range(2, len(rows) + 2))
    for entry in meta:
        assert entry["source_id"] and entry["engine"]
        assert entry["harness"] in HARNESSES
        assert entry["date"] == "" or re.fullmatch(r"20\d\d-\d\d-\d\d", entry["date"])
    assert len({entry["source_id"] for entry in meta}) >= 12
    harnesses = set(Counter(entry["harness"] for entry in meta))
    assert {
        "llama-bench",
        "benchmark_latency",
        "server_single_request",
        "vendor_table",
    } <= harnesses


def test_published_figures_map_to_schema_columns_by_the_documented_formulas():
    rows = load_measurements(CSV)
    by_text = {row.source.split(" (", 1)[1]: row for row in rows}

    def find(*parts: str):
        (row,) = [row for text, row in by_text.items() if all(p in text for p in parts)]
        return row

    # LMDeploy profile_generation: 100.02 generated tok/s of the batch -> throughput as is
    lmdeploy = find("a100_fp16.md", "llama2-7b; batch 1 prompt 1 output 128;")
    assert lmdeploy.throughput_tok_s == pytest.approx(100.02)
    # llama-bench tg 128 at 61.71 t/s -> ITL 1 / 61.71 s; pp 512 at 433.35 t/s -> TTFT 512 / 433.35 s
    assert find("pull/2959", "tg 128").itl_s == pytest.approx(1 / 61.71)
    pp512 = find("pull/2959", "pp 512")
    assert (pp512.input_tokens, pp512.output_tokens) == (512, 1)
    assert pp512.ttft_s == pytest.approx(512 / 433.35)
    # TensorRT-LLM 3,803 tok/s per GPU on 1 GPU at batch 960 -> 3,803 tok/s
    (trt,) = [r for r in rows if "Falcon180B-H200" in r.source and r.batch == 960]
    assert trt.throughput_tok_s == pytest.approx(3803) and trt.tp == 1
    # vLLM CI latency 833.421 ms for the batch -> 0.833421 s; NIM ITL 18.58 ms -> 0.01858 s
    assert find("latency_llama8B_tp1").batch_latency_s == pytest.approx(0.833421)
    nim = [r for r in rows if "nim/benchmarking" in r.source and r.input_tokens == 5000]
    assert [r.itl_s for r in nim if r.itl_s] == [pytest.approx(0.01858)]
    # hamel.dev: 46.4 tok/s over a 200-token request -> 200 / 46.4 s
    assert find("hamel.dev", "vLLM").batch_latency_s == pytest.approx(200 / 46.4)


def test_lmdeploy_rows_whose_kv_cache_cannot_hold_the_batch_are_left_out():
    """The README's rule: batch x (prompt + output) x KV bytes per token must fit in 90% of
    the memory left by the fp16 weights (80 GiB per A100); larger batches queue."""
    rows = [r for r in load_measurements(CSV) if "a100_fp16.md" in r.source]
    kv_bytes = {"llama-2-7b": 2 * 32 * 4096 * 2, "llama-2-13b": 2 * 40 * 5120 * 2}
    kv_bytes["llama-2-70b"] = 2 * 80 * 8 * 128 * 2
    params = {"llama-2-7b": 6.74e9, "llama-2-13b": 13.02e9, "llama-2-70b": 68.98e9}
    for row in rows:
        weights = params[row.model] * 2
        need = row.batch * (row.input_tokens + row.output_tokens) * kv_bytes[row.model]
        assert need <= 0.9 * (row.tp * 80 * 2**30 - weights), row.source
    assert len([r for r in rows if r.throughput_tok_s]) == 50
