"""LMDeploy TurboMind A100 serving rows (data/validation/serving/lmdeploy_*.csv): the
converter reproduces the committed files from the raw page copies, and the rows say
what the page says (no simulation here: `benchmarks/serving_validate.py` scores them)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from helpers import load_script

from roofline import data_dir

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
FOLDER = data_dir() / "validation" / "serving"
FILES = {
    "v0.1.0a1": "lmdeploy_v010_a100_llama2.csv",
    "v0.2.0": "lmdeploy_v020_a100_llama2_sharegpt.csv",
}


@pytest.fixture(scope="module")
def converter():
    sys.path.insert(0, str(BENCHMARKS))  # it imports serving_validate
    yield load_script(BENCHMARKS / "convert_lmdeploy_a100.py")
    sys.modules.pop("convert_lmdeploy_a100", None)
    sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize("edition", sorted(FILES))
def test_rerunning_the_converter_reproduces_the_committed_file(rerun_converter, edition):
    assert (
        rerun_converter("convert_lmdeploy_a100.py", "--edition", edition)
        == (FOLDER / FILES[edition]).read_bytes()
    )


def test_the_rows_carry_the_page_cells_and_the_stated_engine_settings() -> None:
    with (FOLDER / FILES["v0.1.0a1"]).open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    static = [r for r in rows if r["lengths"] == "fixed"]
    # 3 models x 4 batches x 5 length pairs, 4 numbers each
    assert (
        len({(r["model"], r["concurrency"], r["input_tokens"], r["output_tokens"]) for r in static})
        == 60
    )
    cell = next(
        r
        for r in static
        if r["model"] == "llama-2-13b"
        and r["concurrency"] == "32"
        and (r["input_tokens"], r["output_tokens"]) == ("2048", "2048")
        and r["metric"] == "output_tokens_per_s"
    )
    assert float(cell["measured"]) == 389.64  # the page's cell
    assert cell["requests"] == "192"  # 6 rounds x 32 clients
    assert cell["kv_capacity_tokens"] == "64000"  # 500 blocks x 128 tokens (benchmark_13b.sh)
    ttft = next(
        r
        for r in static
        if r["locator"] == cell["locator"].replace("throughput(out tok/s)", "FTL(ave)")
    )
    assert float(ttft["measured"]) == pytest.approx(38725.0) and float(ttft["reading_error"]) == 0.5
    sharegpt = [r for r in rows if r["lengths"] == "sharegpt"]
    first = next(r for r in sharegpt if r["metric"] == "requests_per_s")
    # mean lengths = output tok/s / RPS and (total - output) tok/s / RPS of the row
    assert float(first["output_tokens"]) == pytest.approx(2562.435 / 10.275, abs=0.01)
    assert float(first["input_tokens"]) == pytest.approx((5283.547 - 2562.435) / 10.275, abs=0.01)
    assert {r["model"] for r in rows} == {"llama-2-7b", "llama-2-13b", "llama-2-70b"}


def test_the_v020_rows_take_the_new_batch_limits(converter) -> None:
    text = (FOLDER / "raw" / converter.EDITIONS["v0.2.0"].raw).read_text(encoding="utf-8")
    rows = converter.rows_of(converter.EDITIONS["v0.2.0"], text)
    seven = {r["metric"] + r["statistic"]: r for r in rows if r["model"] == "llama-2-7b"}
    assert seven["requests_per_svalue"]["concurrency"] == 256
    assert seven["requests_per_svalue"]["max_sequences"] == 256
    assert seven["requests_per_svalue"]["max_batched_tokens"] == 4104  # 1 x session_len
    assert float(seven["itl_msp99"]["measured"]) == pytest.approx(220.0)
    assert "itl_msp95" not in seven  # no simulated 95 % ITL to compare with
