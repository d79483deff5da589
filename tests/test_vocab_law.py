"""The vocabulary term (issue #27 item 1): Tao et al.'s sweep as shipped, the term's fit and
held-out figures, the ``chinchilla-shape-vocab`` law file, and the co-design pricing the
vocabulary inside the sweep's range (``benchmarks/vocab_law.py`` writes the law)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import load_script

from roofline import InputError
from scaling_law import (
    CHINCHILLA_SHAPE_VOCAB,
    Architecture,
    VocabTerm,
    attach_vocab_term,
    extrapolation,
    fit_vocab_term,
    held_out_errors,
    load_law,
    load_vocab_runs,
    predict_loss,
    predict_loss_interval,
    scaling_dir,
)
from scaling_law.vocab_fit import base_offsets
from search.codesign import search_designs, space_from_dict

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "data" / "scaling" / "vocab"


@pytest.fixture(scope="module")
def runs():
    return load_vocab_runs(FOLDER / "tao2024_runs.csv")


@pytest.fixture(scope="module")
def laws():
    return load_law(scaling_dir() / "gemstones_law.json"), load_law(
        scaling_dir() / "gemstones_vocab_law.json"
    )


def _converter():
    return load_script(ROOT / "benchmarks" / "convert_tao_vocab.py")


def test_the_converter_keeps_each_runs_last_point_and_derives_its_tokens(tmp_path) -> None:
    """The raw sweep is not redistributed (no licence); the conversion is checked on a
    two-run file in its layout: the point with the most FLOPs is the finished run, and
    tokens = FLOPs / (6 (non-vocab params + vocab x width))."""
    family = json.loads((FOLDER / "tao2024_families.json").read_text())["families"][0]
    width, non_vocab = family["hidden"], family["non_vocab_params"]
    raw = tmp_path / "exp_data.csv"
    lines = ["vocab_size,embed_dim,num_characters,Non_vocab_parameters,FLOPs,Lossu"]
    for vocab, points in (
        (4096, ((1e16, -1.0), (4e16, -2.5), (2e16, -2.0))),
        (8192, ((3e16, -2.7),)),
    ):
        lines += [f"{vocab}.0,{width}.0,1.0,{non_vocab}.0,{flops},{loss}" for flops, loss in points]
    raw.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = _converter().runs(raw, FOLDER / "tao2024_families.json")
    assert [(r["vocab"], r["lossu"], r["source_line"]) for r in rows] == [
        (4096, "-2.5", 3),
        (8192, "-2.7", 5),
    ]
    assert float(rows[0]["tokens"]) == pytest.approx(
        4e16 / (6 * (non_vocab + 4096 * width)), rel=1e-5
    )
    assert rows[0]["layers"] == family["layers"] and rows[0]["family"] == family["name"]


def test_sixty_runs_ten_vocabularies_per_family_one_token_budget_each(runs) -> None:
    assert len(runs.loss) == 60
    vocab = np.asarray(runs.architecture.vocab, float)
    for name in set(runs.family):
        rows = runs.family == name
        assert len(set(vocab[rows])) == 10
        assert np.ptp(runs.tokens[rows]) == 0
        assert np.ptp(runs.non_embedding_params[rows]) == 0
    # our count of the configs is within 5% of the source's nominal non-vocabulary count
    # (size - 2 x 16,384 x width; "335M" counts 302M, the others agree within 1%)
    nominal = np.loadtxt(FOLDER / "tao2024_runs.csv", delimiter=",", skiprows=1, usecols=6)
    assert np.allclose(runs.non_embedding_params, nominal, rtol=0.05)


def test_the_fit_recovers_a_known_term(runs) -> None:
    truth = VocabTerm(curvature=0.04, optimum=12_000.0, exponent=0.4)
    rng = np.random.default_rng(1)
    family_level = {name: rng.normal(-4.5, 0.5) for name in set(runs.family)}
    offsets = rng.normal(0.0, 0.05, len(runs.loss))
    loss = (
        np.array([family_level[name] for name in runs.family])
        + offsets
        + truth(runs.architecture.vocab, runs.non_embedding_params)
        + rng.normal(0.0, 1e-4, len(runs.loss))
    )
    synthetic = type(runs)(runs.family, runs.architecture, runs.tokens, loss)
    fitted = fit_vocab_term(synthetic, offsets)
    assert fitted.curvature == pytest.approx(truth.curvature, rel=0.01)
    assert fitted.optimum == pytest.approx(truth.optimum, rel=0.02)
    assert fitted.exponent == pytest.approx(truth.exponent, abs=0.01)
    # another size variable (10 x N) moves only the optimum reported at size 1e8
    scaled = fit_vocab_term(synthetic, offsets, size=runs.non_embedding_params * 10.0)
    assert scaled.curvature == pytest.approx(fitted.curvature, rel=1e-3)
    assert scaled.optimum == pytest.approx(fitted.optimum / 10.0**fitted.exponent, rel=1e-2)


def test_held_out_the_term_beats_the_base_law_alone_as_recorded(runs, laws) -> None:
    base, vocab_law = laws
    offsets = base_offsets(base, runs)
    recorded = vocab_law.metadata["vocab_term"]["cross_validation"]
    for scheme in ("vocab", "family"):
        term = np.mean(np.abs(held_out_errors(runs, offsets, scheme)))
        alone = np.mean(np.abs(held_out_errors(runs, offsets, scheme, term=False)))
        none = np.mean(np.abs(held_out_errors(runs, np.zeros_like(offsets), scheme, False)))
        assert term == pytest.approx(recorded["base law + vocabulary term"][scheme]["mae"])
        assert alone == pytest.approx(recorded["base law alone (shipped)"][scheme]["mae"])
        assert term < 0.5 * alone and term < none
    with pytest.raises(InputError, match="scheme must be one of"):
        held_out_errors(runs, offsets, "size")


def test_the_vocab_law_is_the_base_law_at_its_reference_vocabulary(laws) -> None:
    base, vocab_law = laws
    assert {k: vocab_law.params[k] for k in base.params} == dict(base.params)
    arch = Architecture(layers=np.array([12, 24, 40]), hidden=np.array([768, 1536, 2048]))
    at_reference = Architecture(
        layers=arch.layers, hidden=arch.hidden, vocab=50304, tie_embeddings=False
    )
    np.testing.assert_allclose(
        predict_loss(vocab_law, at_reference, 5e10),
        predict_loss(base, at_reference, 5e10),
        rtol=1e-12,
    )
    small = Architecture(layers=arch.layers, hidden=arch.hidden, vocab=8192)
    names = ("vocab_curvature", "vocab_optimum", "vocab_optimum_exponent")
    term = VocabTerm(*(vocab_law.params[name] for name in names))
    non_embedding = small.counts().total_non_embedding
    expected = (
        predict_loss(base, small, 5e10) + term(8192, non_embedding) - term(50304, non_embedding)
    )
    np.testing.assert_allclose(predict_loss(vocab_law, small, 5e10), expected, rtol=1e-12)
    band = predict_loss_interval(vocab_law, small, 5e10)
    assert band.lower is not None and np.all(band.lower < band.loss)
    assert np.all(band.loss < band.upper)


def test_the_law_prices_the_vocabulary_inside_the_sweep_only(laws) -> None:
    base, vocab_law = laws
    assert "vocab" in base.unpriced and "vocab" not in vocab_law.unpriced
    assert vocab_law.metadata["dimensions"]["varied"] == {"vocab": [4096.0, 96256.0]}
    inside = Architecture(layers=24, hidden=1024, vocab=32000)
    assert "vocab" not in extrapolation(vocab_law, inside, 5e10)[1]
    outside = Architecture(layers=24, hidden=1024, vocab=151936)
    assert "vocab" in extrapolation(vocab_law, outside, 5e10)[1]
    with pytest.raises(InputError, match="chinchilla-shape law"):
        attach_vocab_term(vocab_law, VocabTerm(0.1, 1e4, 0.0), [], None, {})  # type: ignore[arg-type]


def test_the_co_design_stops_flagging_vocabulary_moves_inside_the_data() -> None:
    law_path = scaling_dir() / "gemstones_vocab_law.json"
    space = {
        "name": "vocab",
        "hardware": {"presets": ["jetson-orin-nano-8gb"]},
        "model": {
            "base": "qwen2.5-0.5b",
            "layers": 24,
            "hidden": 896,
            "head_dim": 64,
            "kv_heads": 2,
            "ffn_ratio": 5.4286,
            "vocab": [16384, 32768, 65536],
        },
        "precision": {"weight_bits": 16},
        "workload": {"batch": 1, "input_tokens": 128, "output_tokens": 32},
        "law": {"path": str(law_path), "training_tokens": 5e10},
    }
    designs = search_designs(space_from_dict(json.loads(json.dumps(space)))).designs
    assert len(designs) == 3
    assert not designs["unpriced"].any()
    assert "unpriced_vocab" not in designs.columns
    losses = designs.sort_values("vocab")["loss"].to_numpy()
    assert len(set(np.round(losses, 9))) == 3  # the vocabulary now moves the loss


def test_bad_runs_file_is_refused_with_its_column(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text("family,layers,hidden\n50M,8,512\n", encoding="utf-8")
    with pytest.raises(InputError, match="needs the columns"):
        load_vocab_runs(path)
    text = (FOLDER / "tao2024_runs.csv").read_text(encoding="utf-8").splitlines()
    text[3] = text[3].replace("1.2e+09", "many")
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"runs.csv:4: tokens must be a number"):
        load_vocab_runs(path)


def test_a_generic_fit_holds_the_term_unless_the_vocabulary_varies() -> None:
    form = CHINCHILLA_SHAPE_VOCAB
    features = {
        "aspect_ratio": np.full(4, 64.0),
        "ffn_ratio": np.full(4, 4.0),
        "gqa_ratio": np.ones(4),
        "vocab": np.full(4, 50304.0),
    }
    fixed = form.fixed_parameters(features)
    base = len(form.parameter_names) - 4
    assert fixed[base] == 0.0 and fixed[base + 2] == 0.0  # no curvature, no growth
    assert np.exp(fixed[base + 3]) == pytest.approx(50304.0)
    features["vocab"] = np.array([4096.0, 16384.0, 32768.0, 65536.0])
    fixed = form.fixed_parameters(features)
    assert base not in fixed and base + 2 not in fixed
    assert np.exp(fixed[base + 3]) == pytest.approx(np.sqrt(16384.0 * 32768.0))
