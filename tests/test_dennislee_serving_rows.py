"""vLLM 0.10.1.1 Qwen2-7B A100 rows (data/validation/serving/dennislee_*.csv): the
converter reproduces the committed file from the transcription, and the rows carry the
printed figures and the start-up logs' engine settings (no simulation here)."""

from __future__ import annotations

import csv

from roofline import data_dir

FOLDER = data_dir() / "validation" / "serving"
CSV = FOLDER / "dennislee_vllm0101_a100_qwen2_7b.csv"


def test_rerunning_the_converter_reproduces_the_committed_file(rerun_converter) -> None:
    assert rerun_converter("convert_dennislee_vllm_a100.py") == CSV.read_bytes()


def test_rows_take_the_logged_kv_cache_and_leave_out_failed_runs() -> None:
    with CSV.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    with (FOLDER / "raw" / "dennislee_vllm_a100_qwen2_7b.csv").open(encoding="utf-8") as handle:
        raw = list(csv.DictReader(handle))
    assert len(raw) == 20 and len(rows) == 18 * 8  # the two 1,000-prompt runs had failures
    assert {r["requests"] for r in rows} == {"1", "10", "20", "30", "50", "75", "100", "200", "500"}
    kv = {(r["memory_utilization"], r["kv_capacity_tokens"]) for r in rows}
    assert kv == {("0.25", "93872"), ("0.5", "464848")}  # "GPU KV cache size" of each log
    assert not {r["metric"] for r in rows} & {"ttft_ms", "e2e_ms"}  # prefix-cache hits unknown
    fifty = next(
        r
        for r in rows
        if r["requests"] == "50"
        and r["memory_utilization"] == "0.25"
        and r["statistic"] == "p99"
        and r["metric"] == "itl_ms"
    )
    assert fifty["measured"] == "50.19" and fifty["input_tokens"] == "1020"  # 50977 / 50
