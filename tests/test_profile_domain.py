"""A profile's fitted domain: read, checked, and said by predict when a point leaves it."""

import json

import pytest

from app.cli import main
from calibration.scenario_summary import source_label, source_summary
from genz import ProfileDomain, domain_from_dict, outside_domain
from roofline import InputError

DOMAIN = ProfileDomain(
    hardware=("a100-sxm-40gb", "h100-sxm"),
    device_classes=("nvidia-gpu",),
    harnesses=("offline_generate",),
    weight_bits=(16.0,),
    batch=(1.0, 64.0),
    input_tokens=(128.0, 2048.0),
    output_tokens=(128.0, 2048.0),
    parameters=(6.7e9, 7.1e10),
    tp=(1.0, 8.0),
)
INSIDE = {
    "batch": 16.0,
    "input_tokens": 1024.0,
    "output_tokens": 256.0,
    "parameters": 8e9,
    "tp": 1.0,
    "weight_bits": 16.0,
}


def test_inside_the_domain_gives_no_reason():
    assert outside_domain(DOMAIN, "h100-sxm", "nvidia-gpu", INSIDE) == []
    assert outside_domain(DOMAIN, "h100-sxm", "nvidia-gpu", INSIDE, "offline_generate") == []


@pytest.mark.parametrize(
    ("hw", "kind", "change", "harness", "phrase"),
    [
        ("mi300x", "amd-gpu", {}, "", "device class amd-gpu not measured"),
        ("rtx-4090", "nvidia-gpu", {}, "", "hardware rtx-4090 not measured"),
        ("h100-sxm", "nvidia-gpu", {"batch": 256.0}, "", "batch 256 outside 1-64"),
        ("h100-sxm", "nvidia-gpu", {"parameters": 1.2e9}, "", "parameters 1.2e+09 outside"),
        ("h100-sxm", "nvidia-gpu", {"weight_bits": 4.0}, "", "4-bit weights not measured"),
        ("h100-sxm", "nvidia-gpu", {}, "llama-bench", "harness llama-bench not measured"),
    ],
)
def test_each_way_out_is_named(hw, kind, change, harness, phrase):
    reasons = outside_domain(DOMAIN, hw, kind, {**INSIDE, **change}, harness)
    assert len(reasons) == 1 and phrase in reasons[0]


def test_domain_round_trips_and_rejects_bad_ranges():
    assert domain_from_dict(DOMAIN.to_dict(), "x") == DOMAIN
    with pytest.raises(InputError, match=r"x.batch: expected \[low, high\]"):
        domain_from_dict({"batch": [64, 1]}, "x")
    with pytest.raises(InputError, match="unknown key 'gpus'"):
        domain_from_dict({"gpus": []}, "x")


def test_shipped_profiles_record_their_domain():
    from genz import load_runtime

    vllm = load_runtime("vllm")
    assert vllm.domain is not None
    assert "h100-sxm" in vllm.domain.hardware
    assert "offline_generate" in vllm.domain.harnesses


def test_predict_says_when_it_leaves_the_domain_and_widens(capsys):
    argv = ["predict", "--model", "llama-3.2-1b", "--hw", "rtx-4090", "--runtime", "vllm"]
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert any("rtx-4090 not measured" in reason for reason in summary["outside_domain"])
    assert any("parameters" in reason for reason in summary["outside_domain"])
    tpot = summary["intervals"]["tpot_s"]
    assert tpot["basis"].startswith("outside the domain")
    assert tpot["low"] <= summary["tpot_s"] <= tpot["high"]
    assert main(argv) == 0
    assert "outside domain" in capsys.readouterr().out


def test_ideal_named_gives_physics_intervals(capsys):
    argv = ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--runtime", "ideal"]
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    tpot = summary["intervals"]["tpot_s"]
    assert tpot["low"] < summary["tpot_s"] < tpot["high"]
    assert "every-source" in tpot["basis"]
    assert summary["outside_domain"] == []


def test_source_summary_puts_physics_beside_the_runtime():
    assert source_label("runs.csv:7 (github:org/repo README.md@abc (table))") == "github:org/repo"
    assert source_label("my-lab.csv:12") == "my-lab.csv"
    assert source_label("") == "(no source)"
    results = [
        {"source": "a:2", "tpot_error_pct": 10.0},
        {"source": "a:3", "tpot_error_pct": -30.0},
        {"source": "b:2", "ttft_error_pct": 5.0},
    ]
    ideal = [
        {"source": "a:2", "tpot_error_pct": -20.0},
        {"source": "a:3", "tpot_error_pct": -40.0},
        {"source": "b:2", "ttft_error_pct": 50.0},
    ]
    table = source_summary(results, ideal)
    assert table[0] == {
        "source": "a",
        "metric": "TPOT",
        "rows": 2,
        "mape_pct": 20.0,
        "bias_pct": -10.0,
        "ideal_mape_pct": 30.0,
        "ideal_bias_pct": -30.0,
    }
    assert table[1]["source"] == "b" and table[1]["ideal_mape_pct"] == 50.0


def test_predict_scenarios_on_measurements_prints_the_per_source_table(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    path.write_text(
        "model,hw,runtime,batch,input_tokens,output_tokens,itl_s,source\n"
        "llama-3.1-8b,h100-sxm,vllm,1,128,128,0.008,lab-a:2\n"
        "llama-3.1-8b,h100-sxm,vllm,8,128,128,0.009,lab-a:3\n"
        "llama-3.1-8b,a100-sxm-40gb,vllm,1,128,128,0.013,lab-b:2\n",
        encoding="utf-8",
    )
    assert main(["predict", "--scenarios", str(path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("per source")
    lab_a = next(line for line in err if "lab-a" in line)
    assert "TPOT" in lab_a and "2 rows" in lab_a and "ideal" in lab_a


def test_predict_scenarios_takes_the_provenance_columns_of_a_measurement_file(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    path.write_text(
        "model,hw,runtime,batch,input_tokens,output_tokens,itl_s,harness,runtime_version,date\n"
        "llama-3.1-8b,h100-sxm,vllm,1,128,128,0.008,server_load,0.6.3,2025-06\n",
        encoding="utf-8",
    )
    assert main(["predict", "--scenarios", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "harness" in out[0].split(",") and "server_load" in out[1]
