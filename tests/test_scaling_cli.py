"""``codesign fit`` and ``codesign loss``: the issue's commands, JSON output, one-line errors."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from scaling_law.architecture import Architecture
from scaling_law.law import predict_loss
from scaling_law.law_io import load_law

CHINCHILLA = Path(__file__).resolve().parent.parent / "data" / "scaling" / "chinchilla.csv"


@pytest.fixture(scope="module")
def law_path(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("law") / "law.json"
    argv = ["fit", "--data", str(CHINCHILLA), "--form", "chinchilla", "--out", str(out)]
    argv += ["--drop-highest-loss", "5", "--bootstrap", "30", "--cv", "0", "--no-progress"]
    assert main(argv) == 0
    return out


def test_fit_writes_the_law_with_data_hash_and_metadata(law_path):
    document = json.loads(law_path.read_text())
    assert document["form"] == "chinchilla"
    assert (
        document["metadata"]["data"]["sha256"]
        == hashlib.sha256(CHINCHILLA.read_bytes()).hexdigest()
    )
    assert document["metadata"]["data"]["rows_used"] == 240
    assert document["metadata"]["fit"]["method"] == "L-BFGS-B"
    assert document["metadata"]["fit"]["bootstrap_replicates"] == 30
    assert set(document["intervals"]) == {"A", "B", "E", "alpha", "beta"}
    assert document["params"]["E"] == pytest.approx(1.8172, abs=0.01)


def test_fit_json_output_and_text_table(tmp_path, capsys):
    out = tmp_path / "small.json"
    argv = ["fit", "--data", "chinchilla", "--out", str(out), "--bootstrap", "0", "--cv", "3"]
    assert main([*argv, "--starts", "4", "--no-progress", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["success"] is True and payload["out"] == str(out.resolve())
    assert payload["cross_validation"]["folds"] == 3
    assert payload["data_sha256"] == hashlib.sha256(CHINCHILLA.read_bytes()).hexdigest()
    assert main([*argv, "--starts", "4", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "worst run    line " in text  # CSV runs are located by file line
    assert "alpha" in text and "k-fold RMSE" in text and f"wrote        {out.resolve()}" in text


def test_loss_predicts_loss_perplexity_and_interval(law_path, capsys):
    argv = [
        "loss",
        "--law",
        str(law_path),
        "--layers",
        "24",
        "--hidden",
        "2048",
        "--tokens",
        "1e11",
    ]
    assert main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = predict_loss(load_law(law_path), Architecture(layers=24, hidden=2048), 1e11)
    assert payload["loss"] == pytest.approx(float(expected))
    assert payload["perplexity"] == pytest.approx(np.exp(payload["loss"]))
    assert payload["loss_lower"] < payload["loss"] < payload["loss_upper"]
    assert (
        payload["parameter_counts"]["total"] == Architecture(layers=24, hidden=2048).counts().total
    )
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "perplexity" in text and "95% bootstrap interval" in text


def test_loss_with_architecture_flags_and_weight_bits(law_path, capsys):
    argv = [
        "loss",
        "--law",
        str(law_path),
        "--layers",
        "32",
        "--hidden",
        "4096",
        "--tokens",
        "2e12",
    ]
    argv += ["--intermediate", "14336", "--gated", "--kv-heads", "8", "--experts", "8"]
    argv += ["--top-k", "2", "--weight-bits", "4", "--json"]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["parameter_counts"]["total"] == 46_702_792_704  # Mixtral-8x7B
    assert payload["precision_loss_penalty"] > 0
    assert main(["loss", "--law", str(law_path), "--params", "1e9", "--tokens", "1e10"]) == 0
    assert "(given)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["fit", "--data", "nope", "--out", "x.json"], "unknown scaling dataset 'nope'"),
        (["fit", "--data", "chinchilla", "--out", "."], "is a directory"),
        (["fit", "--data", "chinchilla", "--out", "x.json", "--form", "k"], "unknown form 'k'"),
        (["fit", "--data", "chinchilla", "--out", "x.json", "--cv", "two"], "--cv must be"),
        (["loss", "--law", "absent.json", "--params", "1e9", "--tokens", "1e10"], "not found"),
        (["fit", "--data", "chinchilla", "--out", "x.json", "--bootstrap", "x"], "invalid int"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, monkeypatch, capsys, argv, fragment):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        raise SystemExit(main([*argv, "--no-progress"] if argv[0] == "fit" else argv))
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


def test_bad_csv_row_is_reported_with_its_line(tmp_path, capsys):
    bad = tmp_path / "runs.csv"
    bad.write_text("params,tokens,loss\n1e9,1e10,3.0\n1e9,-5,2.9\n")
    assert main(["fit", "--data", str(bad), "--out", str(tmp_path / "law.json")]) == 2
    assert "line 3: tokens must be a finite number > 0, got -5" in capsys.readouterr().err


def test_loss_needs_an_architecture_or_params(law_path, capsys):
    assert main(["loss", "--law", str(law_path), "--tokens", "1e10"]) == 2
    assert "give --layers and --hidden, or --params" in capsys.readouterr().err
    assert main(["loss", "--law", str(law_path), "--layers", "4", "--tokens", "1e10"]) == 2
    assert "give both --layers and --hidden" in capsys.readouterr().err


def test_fit_leave_one_architecture_out_prints_every_run(tmp_path, capsys):
    out = tmp_path / "shape.json"
    argv = ["fit", "--data", "gemstones_cooldown_end", "--form", "chinchilla-shape"]
    argv += ["--out", str(out), "--cv", "architecture", "--bootstrap", "2"]
    argv += ["--bootstrap-unit", "architecture", "--starts", "2", "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "leave-one-architecture-out RMSE" in text and "held-out MAPE" in text
    assert "in-sample MAPE" in text and "768x3" in text and "3072x12" in text
    assert "by architecture" in text and "depth 3-80" in text
    document = json.loads(out.read_text())
    assert document["domain"]["width"] == [256, 3072]
    cv = document["metadata"]["cross_validation"]
    assert cv["kind"] == "leave-one-architecture-out" and len(cv["per_group"]) == 17


def test_loss_flags_extrapolation_in_text_and_json(capsys):
    law = str(Path(__file__).resolve().parent.parent / "data" / "scaling" / "gemstones_law.json")
    inside = ["loss", "--law", law, "--layers", "12", "--hidden", "1024", "--vocab", "50304"]
    assert main([*inside, "--tokens", "2e10", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["extrapolated"] is False and payload["outside_domain"] == []
    assert main([*inside, "--tokens", "2e10"]) == 0
    assert "inside the law's data" in capsys.readouterr().out
    deep = ["loss", "--law", law, "--layers", "120", "--hidden", "1024", "--tokens", "2e10"]
    assert main([*deep, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["extrapolated"] is True and "depth" in payload["outside_domain"]
    assert main(deep) == 0
    assert "EXTRAPOLATED: depth outside [3, 80]" in capsys.readouterr().out
