"""``codesign predict --scenarios``: row order, bad rows by line, equal to one-by-one."""

from __future__ import annotations

import csv
import io
import json

import pytest

from app.cli import main
from calibration import parse_scenarios, predict_scenarios
from genz import Parallelism, Scenario, load_model, load_runtime, predict
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
    assert main(["predict", "--scenarios", str(path)]) == 1  # some rows failed (issue #25)
    captured = capsys.readouterr()
    table = list(csv.DictReader(io.StringIO(captured.out)))
    assert [row["line"] for row in table] == ["2", "3", "4", "5", "6", "7"]
    assert captured.err.splitlines()[-1].endswith("3 of 6 rows failed; see the lines above")
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
    assert main(["predict", "--scenarios", str(path), "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["tpot_s"] == pytest.approx(float(table[0]["tpot_s"]))


def test_unknown_column_is_refused_by_name():
    with pytest.raises(InputError, match="unknown column 'batchsize'"):
        parse_scenarios("model,hw,batchsize\nllama-3-8b,h100-sxm,1\n")


def test_predict_without_scenarios_still_needs_model_and_hw(capsys):
    assert main(["predict", "--hw", "h100-sxm"]) == 2
    assert "--model is required" in capsys.readouterr().err


def test_every_row_carries_its_scenario_and_the_intervals_of_a_single_prediction(capsys):
    """The output repeats each scenario with its defaults, and the TTFT / TPOT / end-to-end
    / throughput intervals equal those `codesign predict --runtime` gives one scenario."""
    rows, errors = parse_scenarios("model,hw,runtime,batch\nllama-3-8b,h100-sxm,vllm,8\n")
    assert not errors
    (result,) = predict_scenarios(rows)
    assert (result["batch"], result["input_tokens"], result["output_tokens"]) == (8, 1024, 128)
    assert result["runtime"] == "vllm" and result["kv_bits"] == 16.0
    args = ["predict", "--model", "llama-3-8b", "--hw", "h100-sxm", "--runtime", "vllm"]
    assert main([*args, "--batch", "8", "--json"]) == 0
    intervals = json.loads(capsys.readouterr().out)["summary"]["intervals"]
    for key, low, high in (
        ("ttft_s", "ttft_low_s", "ttft_high_s"),
        ("tpot_s", "tpot_low_s", "tpot_high_s"),
        ("e2e_s", "e2e_low_s", "e2e_high_s"),
        ("throughput_tokens_per_s", "throughput_low_tokens_per_s", "throughput_high_tokens_per_s"),
    ):
        assert result[low] == pytest.approx(intervals[key]["low"], rel=1e-9)
        assert result[high] == pytest.approx(intervals[key]["high"], rel=1e-9)
        assert result[low] < result[key] < result[high]
    assert result["tpot_interval_basis"] == intervals["tpot_s"]["basis"]
    assert result["ttft_interval_basis"] == intervals["ttft_s"]["basis"]


MEASURED = """model,hw,runtime,batch,input_tokens,output_tokens,tp,weight_format,batch_latency_s,throughput_tok_s,ttft_s,itl_s,source
llama-3-8b,h100-sxm,vllm,8,512,64,1,fp16,1.25,400,,0.0125,run a
llama-3-8b,h100-sxm,mlc,1,128,32,1,fp16,,,0.02,,run b
llama-3-8b,h100-sxm,vllm,1,128,32,1,fp16,-3,,,,run c
"""


def test_a_measurement_file_is_scored_row_by_row(tmp_path, capsys):
    """codesign calibrate's measurement file works as --scenarios: measured values are
    carried as measured_<column> and each measured time or rate gets 100 (predicted - measured)
    / measured; a bad measured cell fails its row only; --runtime replaces every row's."""
    path = tmp_path / "runs.csv"
    path.write_text(MEASURED, encoding="utf-8")
    assert main(["predict", "--scenarios", str(path)]) == 1  # one bad measured cell
    captured = capsys.readouterr()
    table = list(csv.DictReader(io.StringIO(captured.out)))
    assert list(table[0])[-10:] == [
        "source",
        "measured_batch_latency_s",
        "measured_throughput_tok_s",
        "measured_ttft_s",
        "measured_itl_s",
        "e2e_error_pct",
        "ttft_error_pct",
        "tpot_error_pct",
        "throughput_error_pct",
        "error",
    ]
    first = table[0]
    assert (first["weight_format"], first["source"], first["measured_batch_latency_s"]) == (
        "fp16",
        "run a",
        "1.25",
    )
    assert float(first["e2e_error_pct"]) == pytest.approx(
        100 * (float(first["e2e_s"]) - 1.25) / 1.25, rel=1e-12
    )
    assert float(first["tpot_error_pct"]) == pytest.approx(
        100 * (float(first["tpot_s"]) - 0.0125) / 0.0125, rel=1e-12
    )
    assert float(first["throughput_error_pct"]) == pytest.approx(
        100 * (float(first["throughput_tokens_per_s"]) - 400) / 400, rel=1e-12
    )
    assert first["ttft_error_pct"] == ""  # not measured on this row
    assert "no calibrated profile ships" in table[1]["error"]  # runtime mlc
    assert f"{path}:4: batch_latency_s must be in (0, 1e+07], got '-3'" in captured.err
    assert main(["predict", "--scenarios", str(path), "--runtime", "ideal", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [row["runtime"] for row in rows[:2]] == ["ideal", "ideal"]
    assert rows[1]["ttft_error_pct"] == pytest.approx(
        100 * (rows[1]["ttft_s"] - 0.02) / 0.02, rel=1e-12
    )
    assert rows[0]["interval_basis"] == "physics only (ideal)"
    # an unknown --runtime is the command's one-line error, not one per row
    assert main(["predict", "--scenarios", str(path), "--runtime", "vlm"]) == 2
    err = capsys.readouterr().err
    assert err.count("unknown runtime 'vlm'") == 1 and "did you mean 'vllm'" in err


def test_mode_and_architecture_columns_equal_predict():
    """Samples, beams, images, offload, window and attention/SSM mix columns: each row
    equals `predict` of its scenario on its model variant; a variant the model cannot
    take marks only its own rows."""
    from genz import with_layer_mix

    text = (
        "model,hw,batch,input_tokens,parallel_samples,beam_width,images,weight_offload,"
        "kv_offload,sliding_window,attention_layers,tp\n"
        "llama-3.1-8b,h100-sxm,4,2048,8,,,,,,,1\n"
        "llama-3.1-8b,h100-sxm,4,2048,,4,,0.5,0.25,,,1\n"
        "llava-1.5-7b,h100-sxm,2,64,,,2,,,,,1\n"
        "mistral-7b,h100-sxm,1,32000,,,,,,1024,,1\n"
        "jamba-v0.1,h100-sxm,1,8192,,,,,,,12,2\n"
        "llama-3.1-8b,h100-sxm,1,512,,,,,,,12,1\n"
    )
    rows, errors = parse_scenarios(text)
    assert not errors
    results = predict_scenarios(rows)
    h100 = load_platform("h100-sxm")
    expected = [
        ("llama-3.1-8b", {}, Scenario(batch=4, input_tokens=2048, parallel_samples=8)),
        (
            "llama-3.1-8b",
            {},
            Scenario(batch=4, input_tokens=2048, beam_width=4, weight_offload=0.5, kv_offload=0.25),
        ),
        ("llava-1.5-7b", {}, Scenario(batch=2, input_tokens=64, images=2)),
        ("mistral-7b", {"sliding_window": 1024}, Scenario(input_tokens=32000)),
        (
            "jamba-v0.1",
            {"attention_layers": 12},
            Scenario(input_tokens=8192, parallelism=Parallelism(tp=2)),
        ),
    ]
    for result, (name, mix, scenario) in zip(results, expected, strict=False):
        want = predict(with_layer_mix(load_model(name), **mix), h100, scenario)
        assert "error" not in result, result.get("error")
        assert result["ttft_s"] == pytest.approx(want.ttft_s, rel=1e-12)
        assert result["tpot_s"] == pytest.approx(want.tpot_s, rel=1e-12)
        assert result["throughput_tokens_per_s"] == pytest.approx(
            want.throughput_tokens_per_s, rel=1e-12
        )
    assert results[3]["sliding_window"] == 1024 and results[0]["sliding_window"] is None
    assert (
        "attention_layers: Llama 3.1 8B is not an attention / state-space hybrid"
        in (results[5]["error"])
    )
