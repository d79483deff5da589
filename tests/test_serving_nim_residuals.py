"""benchmarks/serving_nim_residuals.py: bands and the Little's-law split of a closed loop."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "serving_nim_residuals.py"
_SPEC = importlib.util.spec_from_file_location("serving_nim_residuals", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
residuals = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(residuals)


def _rows() -> pd.DataFrame:
    base = {
        "model": "llama-3-8b",
        "hardware": "h100-sxm",
        "tp": 1,
        "input_tokens": 200,
        "output_tokens": 200,
        "concurrency": 250,
    }
    values = [
        ("requests_per_s", "value", 40.0, 50.0),
        ("ttft_ms", "mean", 800.0, 200.0),
        ("tpot_ms", "mean", 25.0, 20.0),
    ]
    return pd.DataFrame(
        [
            {**base, "metric": m, "statistic": s, "measured": a, "simulated": b, "error": b / a - 1}
            for m, s, a, b in values
        ]
    )


@pytest.mark.parametrize(
    ("clients", "band"), [(1, "1-2"), (10, "5-10"), (100, "100"), (250, "150-250")]
)
def test_band_of(clients: int, band: str) -> None:
    assert residuals.band_of(clients) == band


def test_littles_split_uses_ttft_throughput_and_tpot() -> None:
    split = residuals.littles_split(residuals.label(_rows()))
    row = split.iloc[0]
    assert row["mesh"] == "8b 1xh100" and row["lengths"] == "200/200"
    assert row["W measured"] == pytest.approx(0.8 * 40.0)  # 32 requests waiting
    assert row["W simulated"] == pytest.approx(0.2 * 50.0)
    assert row["A measured"] == pytest.approx(40.0 * 0.025)
    assert row["A simulated"] == pytest.approx(50.0 * 0.020)


def test_signed_table_keeps_the_sign() -> None:
    table = residuals.signed_table(residuals.label(_rows()), "lengths", "ttft_ms", ("mean",))
    assert "-75" in table
