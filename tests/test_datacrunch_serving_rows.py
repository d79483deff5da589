"""DataCrunch SGLang H200 rows (data/validation/serving/datacrunch_*.csv): the converter
reproduces the committed file from the transcription, and the rows keep the printed
figures and leave out what the length sampler cannot express (no simulation here)."""

from __future__ import annotations

import csv

from roofline import data_dir

FOLDER = data_dir() / "validation" / "serving"
CSV = FOLDER / "datacrunch_sglang04_h200_llama.csv"


def test_rerunning_the_converter_reproduces_the_committed_file(rerun_converter) -> None:
    assert rerun_converter("convert_datacrunch_sglang_h200.py") == CSV.read_bytes()


def test_rows_keep_the_printed_runs_and_drop_long_random_prompts_and_repeats() -> None:
    with CSV.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    with (FOLDER / "raw" / "datacrunch_sglang_h200.csv").open(encoding="utf-8") as handle:
        raw = list(csv.DictReader(handle))
    assert len(raw) == 20
    # 3 offline runs with 4,096-token random prompts (one repeated) are left out: 17 set-ups
    assert len(rows) == 17 * 5
    first = next(r for r in rows if r["locator"] == "line 1, median_itl_ms")
    assert first["model"] == "llama-3.1-70b" and first["tp"] == "4" and first["rate_per_s"] == "1.0"
    assert first["measured"] == f"{float(raw[0]['median_itl_ms']):.6g}" == "13.639"
    assert first["input_tokens"] == f"{152612 / 300:.2f}" and first["length_cv"] == "0.577"
    assert {r["memory_utilization"] for r in rows if r["model"] == "llama-3.1-405b"} == {"0.87"}
