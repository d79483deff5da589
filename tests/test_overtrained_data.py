"""The over-trained runs of Gadre et al. 2024 (``data/scaling/overtrained/``) and the
out-of-source check of the laws' D term (``benchmarks/overtraining_check.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from helpers import load_script

from scaling_law import load_scaling_csv

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "data" / "scaling" / "overtrained"


def load_check():
    return load_script(ROOT / "benchmarks" / "overtraining_check.py")


def test_tables_load_with_their_sources() -> None:
    total = 0
    for name in ("openlm_c4", "openlm_redpajama", "openlm_refinedweb"):
        data = load_scaling_csv(FOLDER / f"{name}.csv")
        sources = (FOLDER / f"{name}.sources.txt").read_text().splitlines()
        assert len(sources) == len(data)
        ratio = data.columns["tokens"] / data.columns["params"]
        assert ratio.min() < 6 and ratio.max() > 600  # 5-640 tokens per parameter
        # params - one embedding matrix: the records' params count untied embeddings
        assert np.all(data.columns["vocab"] == 50432)
        total += len(data)
    assert total == 104


def test_the_free_beta_law_overstates_over_training_most() -> None:
    check = load_check()
    ratios = {label: [] for label in check.LAWS}
    from scaling_law import load_law

    laws = {k: load_law(ROOT / "data" / "scaling" / f) for k, f in check.LAWS.items()}
    for name in check.TABLES:
        for _, short, long, drop in check.pairs(name):
            assert drop > 0
            for label, law in laws.items():
                b, beta = law.params["B"], law.params["beta"]
                ratios[label].append(b * (short**-beta - long**-beta) / drop)
    error = {k: float(np.exp(np.mean(np.abs(np.log(v))))) for k, v in ratios.items()}
    assert len(ratios["shipped"]) == 14
    assert error["beta prior"] < error["shipped"]
    assert np.median(ratios["shipped"]) > 1.3
