"""``codesign predict --scenarios``: row order, bad rows by line, equal to one-by-one."""

from __future__ import annotations

import csv
import io
import json

import pytest

from app.cli import main
from genz import Parallelism, Scenario, load_model, load_runtime, parse_scenarios, predict
from roofline import InputError, load_platform

TEXT = """model,hw,runtime,batch,input_tokens,output_tokens,tp
llama-3-8b,h100-sxm,vllm,8,512,64,1
llama-3-8b,h100-sxm,,1,128,32,2
llama-3-8b,h100-sxm,vllm,x,1,1,1
llama-3-8b,nohw,vllm,1,1,1,1
llama-3-8b,h100-sxm,vllm,1,1,1,3
llama-2-70b,a100-sxm-40gb,tensorrt-llm,4,1024,128,4
"""


def test_rows_keep_their_order_and_bad_rows_name_their_line(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    path.write_text(TEXT, encoding="utf-8")
    assert main(["predict", "--scenarios", str(path)]) == 0
    captured = capsys.readouterr()
    table = list(csv.DictReader(io.StringIO(captured.out)))
    assert [row["line"] for row in table] == ["2", "3", "4", "5", "6", "7"]
    assert [bool(row["error"]) for row in table] == [False, False, True, True, True, False]
    assert f"{path}:4: batch must be a number" in captured.err
    assert f"{path}:5: unknown hardware 'nohw'" in captured.err
    assert f"{path}:6: tp = 3" in captured.err
    assert table[1]["interval_basis"] == "physics only (ideal)"
    assert float(table[0]["e2e_low_s"]) <= float(table[0]["e2e_s"]) <= float(table[0]["e2e_high_s"])
    # Each prediction equals the single-scenario one.
    single = predict(
        load_model("llama-2-70b"),
        load_platform("a100-sxm-40gb"),
        Scenario(batch=4, input_tokens=1024, output_tokens=128, parallelism=Parallelism(tp=4)),
        runtime=load_runtime("tensorrt-llm"),
    )
    assert float(table[5]["e2e_s"]) == pytest.approx(single.e2e_s, rel=1e-12)
    assert main(["predict", "--scenarios", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["tpot_s"] == pytest.approx(float(table[0]["tpot_s"]))


def test_unknown_column_is_refused_by_name():
    with pytest.raises(InputError, match="unknown column 'batchsize'"):
        parse_scenarios("model,hw,batchsize\nllama-3-8b,h100-sxm,1\n")


def test_predict_without_scenarios_still_needs_model_and_hw(capsys):
    assert main(["predict", "--hw", "h100-sxm"]) == 2
    assert "--model is required" in capsys.readouterr().err
