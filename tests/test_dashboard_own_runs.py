"""The Accuracy page's "your own runs" upload: the same predictions and errors as
``codesign predict --scenarios``, bad rows listed with their reason, a bad file one line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from app.dashboard.own_runs import error_table
from calibration import parse_scenarios, predict_scenarios

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"
RUNS = """model,hw,runtime,batch,input_tokens,output_tokens,tp,batch_latency_s,ttft_s,source
llama-3-8b,h100-sxm,vllm,8,512,64,1,1.25,,a
llama-3-8b,a100-sxm-40gb,vllm,4,512,64,1,1.5,0.1,b
llama-3-8b,a100-sxm-40gb,vllm,2,256,64,1,0.9,,c
llama-3-8b,nohw,vllm,2,256,64,1,0.9,,d
"""


def accuracy_page() -> AppTest:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=60)
    at.switch_page("accuracy_page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_uploaded_runs_are_scored_as_predict_scenarios_scores_them() -> None:
    at = accuracy_page()
    at.file_uploader(key="own_runs_upload").upload("runs.csv", RUNS.encode()).run()
    assert not at.exception, [e.value for e in at.exception]
    failed = at.dataframe[2].value  # after the two tables of the shipped profiles
    assert failed.line.tolist() == [5] and "unknown hardware 'nohw'" in failed.reason[0]
    latency = at.dataframe[3].value
    rows, _ = parse_scenarios(RUNS)
    results = pd.DataFrame([r for r in predict_scenarios(rows) if not r.get("error")])
    a100 = results[results.hw == "a100-sxm-40gb"].e2e_error_pct
    line = latency[latency.hardware == "a100-sxm-40gb"].iloc[0]
    assert line.rows == 2 and line["MAPE"] == pytest.approx(round(a100.abs().mean(), 1))
    assert line.bias == pytest.approx(round(a100.mean(), 1))
    assert latency.hardware.tolist() == ["a100-sxm-40gb", "h100-sxm", "all"]
    ttft = at.dataframe[4].value  # one row measured TTFT: no "all" line
    assert ttft.rows.tolist() == [1]
    # physics only: the same rows, another runtime, other errors
    at.selectbox(key="own_runs_runtime").set_value("ideal").run()
    ideal = at.dataframe[3].value
    assert ideal.MAPE.tolist() != latency.MAPE.tolist()


def test_a_bad_upload_is_one_line() -> None:
    at = accuracy_page()
    at.file_uploader(key="own_runs_upload").upload("runs.csv", b"model,hw,batchsize\nx,y,1\n")
    at.run()
    assert not at.exception
    assert "unknown column 'batchsize'" in at.error[0].value
    at.file_uploader(key="own_runs_upload").upload("runs.csv", b"\xff\xfe").run()
    assert "not UTF-8 text" in at.error[0].value


def test_error_table_has_an_all_line_only_for_several_groups() -> None:
    scored = pd.DataFrame({"runtime": ["r", "r"], "hw": ["a", "a"], "e2e_error_pct": [10.0, -30.0]})
    table = error_table(scored, "e2e_error_pct")
    assert table.to_dict("records") == [
        {
            "runtime": "r",
            "hardware": "a",
            "rows": 2,
            "MAPE": 20.0,
            "median": 20.0,
            "p90": 28.0,
            "bias": -10.0,
        }
    ]
