"""Training-run CSVs: the shipped Chinchilla table, architecture columns, and clear errors."""

import hashlib
from pathlib import Path

import numpy as np
import pytest

import scaling_law.data as data_module
from roofline.errors import InputError
from scaling_law.architecture import Architecture
from scaling_law.data import ScalingData, dataset_path, list_datasets, load_scaling_csv

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "scaling" / "chinchilla.csv"


def test_shipped_chinchilla_table_loads_with_its_hash():
    data = load_scaling_csv("chinchilla")
    assert "chinchilla" in list_datasets()
    assert dataset_path("chinchilla") == SHIPPED
    assert len(data) == 245
    assert data.sha256 == hashlib.sha256(SHIPPED.read_bytes()).hexdigest()
    assert data.row_numbers[0] == 2  # line 1 is the header
    features = data.law_features()
    # D = C / (6 N): first run, 6.80e9 parameters and 9.99e18 FLOP -> 2.45e8 tokens.
    assert features["tokens"][0] == pytest.approx(9.993852799709755e18 / (6 * 6795600349.289497))
    assert features["params"].min() > 5e7 and features["params"].max() < 2e10


def test_architecture_columns_give_params_and_shape_features(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(
        "layers,hidden,heads,kv_heads,gated_ffn,ffn,tokens,loss\n12,768,12,4,1,2048,1e10,3.1\n"
    )
    data = load_scaling_csv(path)
    features = data.law_features(include_embeddings=False)
    arch = Architecture(layers=12, hidden=768, heads=12, kv_heads=4, gated_ffn=True, ffn=2048)
    assert features["params"][0] == arch.counts().total_non_embedding
    assert features["gqa_ratio"][0] == 3
    assert features["aspect_ratio"][0] == 64


def test_weight_bits_column_shrinks_params():
    data = ScalingData.from_columns(
        {"params": [1e9, 1e9], "tokens": [1e10, 1e10], "loss": [3.0, 3.1], "weight_bits": [16, 4]}
    )
    params = data.law_features()["params"]
    assert params[0] == pytest.approx(1e9)
    assert params[1] == pytest.approx(1e9 * (1 - np.exp(-4 / 2.6745)) / (1 - np.exp(-16 / 2.6745)))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("params,tokens\n1e9,1e10\n", "missing required column 'loss'"),
        ("params,loss\n1e9,3\n", "needs a 'tokens' or a 'flop' column"),
        ("tokens,loss\n1e10,3\n", "needs a 'params' column or 'layers' and 'hidden'"),
        ("params,tokens,loss,colour\n1e9,1e10,3,red\n", "unknown column 'colour'"),
        (
            "params,tokens,loss\n1e9,1e10,3\n1e9,1e10,-2\n",
            "line 3: loss must be a finite number > 0",
        ),
        ("params,tokens,loss\n1e9,0,3\n", "line 2: tokens must be a finite number > 0, got 0"),
        ("params,tokens,loss\n1e9,,3\n", "line 2: missing value in column 'tokens'"),
        ("params,tokens,loss\n1e9,1e10,abc\n", "line 2: column 'loss' must be a number, got 'abc'"),
        ("params,tokens,loss\n1e9,1e10,nan\n", "line 2: loss must be a finite number > 0"),
        ("params,tokens,loss\n1e9,1e10\n", "line 2: expected 3 fields, got 2"),
        ("params,tokens,loss,loss\n1,2,3,4\n", "column 'loss' appears twice"),
        ("params,tokens,loss\n", "no data rows after the header"),
        ("", "empty file"),
        ("layers,hidden,tokens,loss\n2.5,512,1e9,3\n", "line 2: layers must be a whole number"),
        ("params,tokens,loss,gated_ffn\n1e9,1e10,3,2\n", "line 2: gated_ffn must be 0 or 1"),
    ],
)
def test_bad_csv_gives_one_clear_line(tmp_path, text, fragment):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_scaling_csv(path)
    assert fragment in str(info.value)
    assert len(str(info.value).splitlines()) == 1


def test_oversized_binary_and_missing_files_are_refused(tmp_path, monkeypatch):
    big = tmp_path / "big.csv"
    big.write_text("params,tokens,loss\n" + "1e9,1e10,3\n" * 100)
    monkeypatch.setattr(data_module, "MAX_FILE_BYTES", 1000)
    with pytest.raises(InputError, match="larger than 1000 bytes"):
        load_scaling_csv(big)
    binary = tmp_path / "blob.csv"
    binary.write_bytes(b"\xff\xfe\x00\x81pickle")
    with pytest.raises(InputError, match="not UTF-8 text"):
        load_scaling_csv(binary)
    with pytest.raises(InputError, match="scaling data file not found"):
        load_scaling_csv(tmp_path / "absent.csv")
    with pytest.raises(InputError, match="unknown scaling dataset 'kaplan'; accepted: chinchilla"):
        load_scaling_csv("kaplan")


def test_in_memory_data_is_validated_and_hashed():
    columns = {"params": [1e9, 2e9], "tokens": [1e10, 1e10], "loss": [3.0, 2.9]}
    first, second = ScalingData.from_columns(columns), ScalingData.from_columns(columns)
    assert first.sha256 == second.sha256
    changed = ScalingData.from_columns({**columns, "loss": [3.0, 2.8]})
    assert changed.sha256 != first.sha256
    with pytest.raises(InputError, match="row 2: params must be a finite number > 0"):
        ScalingData.from_columns({**columns, "params": [1e9, -1]})
    with pytest.raises(InputError, match="one common length"):
        ScalingData.from_columns({**columns, "loss": [3.0]})
