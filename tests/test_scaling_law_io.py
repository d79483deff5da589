"""Saved laws round-trip exactly; the writer and reader refuse what they should."""

import json
from pathlib import Path

import numpy as np
import pytest

import scaling_law.law_io as law_io
from roofline.errors import InputError
from scaling_law.architecture import Architecture
from scaling_law.data import ScalingData
from scaling_law.fit import fit_law
from scaling_law.law import ScalingLaw, predict_loss_interval
from scaling_law.law_io import law_to_dict, load_law, save_law


@pytest.fixture(scope="module")
def law() -> ScalingLaw:
    rng = np.random.default_rng(7)
    params, tokens = 10 ** rng.uniform(8, 10, 40), 10 ** rng.uniform(9, 11, 40)
    loss = (1.8 + 450 / params**0.34 + 2000 / tokens**0.36) * np.exp(
        0.003 * rng.standard_normal(40)
    )
    data = ScalingData.from_columns({"params": params, "tokens": tokens, "loss": loss})
    return fit_law(data, n_starts=2, bootstrap=8, cross_validation=4, progress=False).law


def test_saved_law_round_trips_exactly(law, tmp_path):
    written = save_law(law, tmp_path / "law.json")
    assert written == (tmp_path / "law.json").resolve()
    loaded = load_law(written)
    assert loaded == law
    arch = Architecture(layers=12, hidden=1024)
    before, after = (
        predict_loss_interval(law, arch, 1e10),
        predict_loss_interval(loaded, arch, 1e10),
    )
    assert before.to_dict() == after.to_dict()
    document = json.loads(written.read_text())
    assert document["metadata"]["data"]["sha256"] == law.metadata["data"]["sha256"]
    assert document["form"] == "chinchilla" and len(document["bootstrap_params"]) == 8
    assert list(tmp_path.iterdir()) == [written]  # no temporary file left behind


def test_writer_refuses_directories_missing_folders_and_links(law, tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        save_law(law, tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        save_law(law, tmp_path / "absent" / "law.json")
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(InputError, match="symbolic link"):
        save_law(law, link)
    assert target.read_text() == "{}"


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.update(extra=1), "unknown key 'extra'"),
        (lambda d: d.update(format="other"), "not a scaling law file"),
        (lambda d: d.pop("params"), "missing required key 'params'"),
        (lambda d: d.update(form="kaplan"), "unknown form 'kaplan'"),
        (lambda d: d["params"].pop("beta"), "law params must be exactly A, B, E, alpha, beta"),
        (lambda d: d["params"].update(A="big"), "malformed law"),
        (lambda d: d.update(bootstrap_params=[[1.0, 2.0]]), "bootstrap_params[0] must hold 5"),
        (lambda d: d.update(intervals={"A": [1.0]}), "intervals must map names"),
    ],
)
def test_malformed_law_files_are_named_errors(law, tmp_path, mutate, fragment):
    document = law_to_dict(law)
    mutate(document)
    path = tmp_path / "law.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError) as info:
        load_law(path)
    assert fragment in str(info.value) and str(path) in str(info.value)


def test_reader_refuses_non_json_non_finite_and_oversized_files(law, tmp_path, monkeypatch):
    path = tmp_path / "law.json"
    path.write_text("not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_law(path)
    text = json.dumps(law_to_dict(law))
    assert '"gamma_w": 2.6745' in text
    path.write_text(text.replace('"gamma_w": 2.6745', '"gamma_w": NaN'))
    with pytest.raises(InputError, match="non-finite number NaN"):
        load_law(path)
    save_law(law, path)
    monkeypatch.setattr(law_io, "MAX_LAW_BYTES", 100)
    with pytest.raises(InputError, match="larger than 100 bytes"):
        load_law(path)
    with pytest.raises(InputError, match="law file not found"):
        load_law(tmp_path / "absent.json")


SCALING = Path(__file__).resolve().parent.parent / "data" / "scaling"
SHIPPED_LAWS = sorted([*SCALING.glob("*_law.json"), *(SCALING / "gemstones_forms").glob("*.json")])


@pytest.mark.parametrize("path", SHIPPED_LAWS, ids=lambda path: path.name)
def test_every_shipped_law_records_its_domain(path):
    law = load_law(path)
    assert {"params", "tokens", "tokens_per_parameter"} <= set(law.domain)
    if "pooled" in law.metadata:
        # Gemstones + open_lm (one E per table): every architecture held out in turn.
        cv = law.metadata["cross_validation"]
        assert cv["kind"] == "leave-one-architecture-out" and len(cv["per_group"]) == 17 + 5
        assert law.metadata["pooled"]["held_out_mape_per_table"]["gemstones_cooldown_end"] < 1.5
        assert law.domain["width"] == (256.0, 4096.0) and law.domain["depth"] == (3.0, 80.0)
        assert law.metadata["fit"]["bootstrap_unit"] == "architecture"
    elif "gemstones" in str(law.metadata["data"]["origin"]):
        # The shape laws were selected leave-one-architecture-out and meet the target.
        cv = law.metadata["cross_validation"]
        assert cv["kind"] == "leave-one-architecture-out" and len(cv["per_group"]) == 17
        assert cv["mape_loss"] < 1.5
        assert law.domain["width"] == (256.0, 3072.0) and law.domain["depth"] == (3.0, 80.0)
        assert law.metadata["fit"]["bootstrap_unit"] == "architecture"
