"""data/validation/holdout/: published runs of six sources no shipped profile was fitted
on (issue 20, the out-of-source check), in the measurement schema and the store."""

import csv
import importlib
import re
from collections import Counter
from pathlib import Path

import pytest

from calibration import load_measurements
from calibration.measurements import HARNESSES
from calibration.store import load_store
from genz import load_model
from roofline import data_dir, load_platform

FOLDER = data_dir() / "validation" / "holdout"
SOURCE, CSV, META = (FOLDER / f"holdout_runs{tail}.csv" for tail in ("_source", "", "_meta"))
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SOURCE_IDS = {
    "intel.com/gaudi-model-performance": 16,
    "casper-hansen/AutoAWQ": 24,
    "pytorch-labs/gpt-fast": 15,
    "premAI-io/benchmarks": 15,
    "docs.nvidia.com/nemo-framework": 32,
    "ggml-org/llama.cpp-pull-21024": 6,
}


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_rerunning_the_converter_reproduces_the_schema_file_and_the_sidecar(
    tmp_path, rerun_converter
):
    meta = tmp_path / "meta.csv"
    extra = ("--source", str(SOURCE), "--meta", str(meta))
    assert rerun_converter("convert_published_runs.py", *extra) == CSV.read_bytes()
    assert meta.read_bytes() == META.read_bytes()


def test_every_row_loads_against_presets_and_cites_where_it_was_read():
    rows = load_measurements(CSV)
    assert len(rows) == len(_read(SOURCE)) == sum(SOURCE_IDS.values())
    for line, row in enumerate(rows, start=2):
        load_model(row.model)
        load_platform(row.hw)
        assert row.source.startswith(f"holdout_runs_source.csv:{line} (")
        assert "read 2026-12-04" in row.source
        assert re.search(r"@[0-9a-f]{7,}|https://|pull/\d+", row.source), row.source


def test_the_sidecar_names_six_new_sources_with_harness_and_engine():
    meta = _read(META)
    assert Counter(entry["source_id"] for entry in meta) == SOURCE_IDS
    for entry in meta:
        assert entry["harness"] in HARNESSES and entry["engine"]
        assert entry["date"] == "" or re.fullmatch(r"20\d\d-\d\d(-\d\d)?", entry["date"])
    harnesses = {entry["harness"] for entry in meta}
    assert {"vendor_table", "offline_generate", "llama-bench", "other"} <= harnesses


def test_the_store_tags_every_row_and_no_source_was_there_before():
    stored = [item for item in load_store() if item.file == "holdout/holdout_runs.csv"]
    assert Counter(item.info.source_id for item in stored) == SOURCE_IDS
    others = {item.info.source_id for item in load_store() if item.file != stored[0].file}
    assert not others & set(SOURCE_IDS)


def test_published_figures_map_to_schema_columns_by_hand():
    rows = load_measurements(CSV)

    def find(*parts: str):
        (row,) = [row for row in rows if all(part in row.source for part in parts)]
        return row

    # Gaudi 2: 13,137 generated tok/s of a batch of 1,230 -> throughput as published
    gaudi = find("gaudi2-inference", "LLaMA 2 7b 1 HPU input 128 output 128")
    assert (gaudi.batch, gaudi.throughput_tok_s, gaudi.kv_bits) == (1230, 13137, 8)
    # AutoAWQ Mistral GEMM batch 8: prefill 4,199.18 tok/s of 8 x 64 tokens -> TTFT 512 / 4199.18 s;
    # decode 1,185.25 tok/s summed over the batch -> one step 8 / 1185.25 s
    prefill = find("Mistral 7B GEMM batch 8 prefill 64", "Prefill tokens/s")
    assert prefill.ttft_s == pytest.approx(8 * 64 / 4199.18)
    decode = find("Mistral 7B GEMM batch 8 prefill 64", "Decode tokens/s")
    assert decode.itl_s == pytest.approx(8 / 1185.25)
    # gpt-fast: 200 generated tokens at 62.50 tok/s on 8 GPUs -> 3.2 s, tp 8
    fast = find("Tensor Parallelism table; Llama-2-70B Base 8 GPUs")
    assert (fast.tp, fast.batch_latency_s) == (8, pytest.approx(3.2))
    # premAI: 512 tokens at 90.54 tok/s; NeMo: 181.9 ms for the batch of 8 at TP 8
    assert find("vllm float16").batch_latency_s == pytest.approx(512 / 90.54)
    nemo = find("batch 8 TP 8 A100 80GB SXM4")
    assert (nemo.batch, nemo.tp, nemo.batch_latency_s) == (8, 8, pytest.approx(0.1819))
    # llama-bench tg128 at 146.73 t/s -> ITL 1 / 146.73 s; pp512 at 4,753.45 -> 512 / 4753.45 s
    # (4.33 GiB of Q4_0 over 8.03e9 weights: 4.63 bits)
    tg = find("pull/21024", "Q4_0 tg128")
    assert (tg.input_tokens, tg.output_tokens, tg.itl_s) == (1, 128, pytest.approx(1 / 146.73))
    pp = find("pull/21024", "Q4_0 pp512")
    assert (pp.input_tokens, pp.ttft_s, pp.weight_bits) == (512, pytest.approx(512 / 4753.45), 4.63)


def test_no_nemo_row_is_faster_than_the_bandwidth_floor_of_its_set_up():
    """The README's rule that left the 13B rows out: 20 decode steps each read every
    weight byte once (per GPU: bytes / tp), so latency >= 20 x weight bytes / (tp x peak)."""
    for row in load_measurements(CSV):
        if "nemo-framework" not in row.source:
            continue
        model, platform = load_model(row.model), load_platform(row.hw)
        assert model.published_params is not None
        weight_bytes = model.published_params * row.weight_bits / 8
        bandwidth = platform.main_memory.bandwidth_bytes_per_s
        floor = row.output_tokens * weight_bytes / (row.tp * bandwidth)
        assert row.batch_latency_s is not None and row.batch_latency_s > floor, row.source


def test_the_holdout_benchmark_scores_physics_where_no_stack_profile_ships(monkeypatch):
    """benchmarks/new_sources_holdout.py: a row whose runtime ships no profile gets the
    ideal prediction in the stack column; a profile-less throughput row's batch latency is
    batch x output / throughput; MAPE and bias by hand."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    holdout = importlib.import_module("new_sources_holdout")
    rows = load_measurements(CSV)
    ids = holdout.source_ids(META)
    picked = [rows[0], next(row for row in rows if row.runtime == "tensorrt-llm")]
    picked_ids = {2 + k: ids[rows.index(row) + 2] for k, row in enumerate(picked)}
    transfer = holdout.load_runtime(holdout.TRANSFER_PROFILE)
    values = holdout.value_errors(picked, picked_ids, transfer)
    gaudi, nemo = values
    assert not gaudi.has_stack_profile and gaudi.errors["stack"] == gaudi.errors["ideal"]
    assert nemo.has_stack_profile and nemo.errors["stack"] != nemo.errors["ideal"]
    assert holdout.measured(rows[0]) == {"batch latency": pytest.approx(1230 * 128 / 13137)}
    fake = [holdout.ValueErrors("s", "TTFT", {"ideal": e}, False) for e in (0.1, -0.3)]
    assert holdout.summary(fake, "ideal") == (pytest.approx(20.0), pytest.approx(-10.0))
