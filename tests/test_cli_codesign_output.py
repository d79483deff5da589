"""codesign search writes its tables as CSV or Parquet, with the same rows."""

import pandas as pd
import pytest

from app.cli import main


def test_search_writes_parquet_and_csv_with_the_same_designs(tmp_path):
    common = ["search", "--space", "examples/edge_quickstart.yaml", "--objective", "loss,tpot"]
    assert main([*common, "--out", str(tmp_path / "d.parquet")]) == 0
    assert main([*common, "--out", str(tmp_path / "d.csv")]) == 0
    parquet = pd.read_parquet(tmp_path / "d.parquet")
    csv = pd.read_csv(tmp_path / "d.csv")
    assert len(parquet) == len(csv) > 0
    assert list(parquet.columns) == list(csv.columns)
    assert parquet["tpot_s"].to_numpy() == pytest.approx(csv["tpot_s"].to_numpy())


def test_search_refuses_other_suffixes(tmp_path, capsys):
    argv = ["search", "--space", "examples/edge_quickstart.yaml", "--objective", "loss,tpot"]
    assert main([*argv, "--out", str(tmp_path / "d.xlsx")]) == 2
    assert "must end in .csv or .parquet" in capsys.readouterr().err
