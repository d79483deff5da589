"""codesign predict / models: outputs, machine formats and one-line errors."""

import json

import pytest

from app.cli import main


def test_predict_table(capsys):
    assert (
        main(
            [
                "predict",
                "--model",
                "llama-3.1-8b",
                "--hw",
                "h100-sxm",
                "--batch",
                "8",
                "--input",
                "2048",
                "--output",
                "256",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "TTFT" in out and "TPOT" in out and "compute-bound" in out


def test_predict_json_matches_csv_rows(capsys):
    assert main(["predict", "--model", "llama-3.1-8b", "--hw", "a100-sxm-80gb", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["summary"]["fits"] is True
    assert main(["predict", "--model", "llama-3.1-8b", "--hw", "a100-sxm-80gb", "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(payload["operators"]) + 1


def test_predict_capacity_wall_is_a_verdict_not_an_error(capsys):
    assert main(["predict", "--model", "llama-3.1-70b", "--hw", "rtx-4090"]) == 0
    assert "DOES NOT FIT" in capsys.readouterr().out


def test_predict_local_config_and_use_case(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "hidden_size": 512,
                "num_hidden_layers": 4,
                "num_attention_heads": 8,
                "intermediate_size": 1024,
                "vocab_size": 1000,
            }
        )
    )
    assert (
        main(["predict", "--model", str(config), "--hw", "l4", "--use-case", "chat", "--json"]) == 0
    )
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["input_tokens"] == 1024 and summary["output_tokens"] == 256


def test_bits_file_changes_weight_bytes(tmp_path, capsys):
    bits = tmp_path / "bits.yaml"
    bits.write_text("weight_bits: 4\ngroup_bits: {lm_head: 8}\n")
    assert (
        main(
            [
                "predict",
                "--model",
                "llama-3.1-8b",
                "--hw",
                "h100-sxm",
                "--bits-file",
                str(bits),
                "--json",
            ]
        )
        == 0
    )
    four = json.loads(capsys.readouterr().out)["summary"]["weights_bytes_per_device"]
    assert main(["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--json"]) == 0
    sixteen = json.loads(capsys.readouterr().out)["summary"]["weights_bytes_per_device"]
    assert four < 0.35 * sixteen


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["predict", "--model", "gpt-9", "--hw", "h100-sxm"], "unknown model 'gpt-9'"),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--batch", "-1"],
            "--batch must be an integer in [1, 1000000], got -1",
        ),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--tp", "64"],
            "tp must be in [1, 32]",
        ),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--bw-scale", "-1"],
            "--bw-scale must be a number in [0.001, 1000], got -1.0",
        ),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--compute-eff", "1.5"],
            "--compute-eff must be in (0, 1], got 1.5",
        ),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sx"],
            "unknown hardware 'h100-sx' (did you mean 'h100-sxm'",
        ),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--input", "0"],
            "--input must be an integer in [1, 100000000], got 0",
        ),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--chunk", "0"],
            "--chunk must be an integer in [1, 100000000], got 0",
        ),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--wbits", "0"],
            "--wbits must be a number of bits in [1, 32], got 0.0",
        ),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--use-case", "poetry"],
            "unknown use case 'poetry'",
        ),
        (
            [
                "predict",
                "--model",
                "llama-3.1-8b",
                "--hw",
                "h100-sxm",
                "--bits-file",
                "missing.yaml",
            ],
            "bits file not found",
        ),
    ],
)
def test_predict_bad_input_one_line_exit_2(capsys, argv, fragment):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err
    assert len(err.splitlines()) == 1


def test_models_lists_presets(capsys):
    assert main(["models"]) == 0
    assert "deepseek-v3" in capsys.readouterr().out


def test_memory_efficiency_override_slows_memory_bound_decode(capsys):
    base = ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--json"]
    assert main(base) == 0
    default = json.loads(capsys.readouterr().out)["summary"]["tpot_s"]
    assert main([*base, "--memory-eff", "0.4"]) == 0
    halved = json.loads(capsys.readouterr().out)["summary"]["tpot_s"]
    # The preset's memory efficiency is 0.8: at 0.4 the weight stream takes ~2x as long.
    assert 1.8 < halved / default < 2.0
    assert main([*base, "--memory-eff", "1.5"]) == 2
    assert "--memory-eff must be in (0, 1], got 1.5" in capsys.readouterr().err
