"""Summary statistics of signed percentage errors, shared by the accuracy benchmarks."""

from __future__ import annotations

import pandas as pd


def error_stats(errors: pd.Series) -> dict[str, float]:
    """MAPE, median and p90 absolute error and bias (mean signed error) of signed %
    errors, all in percent."""
    absolute = errors.abs()
    return {
        "MAPE": absolute.mean(),
        "median": absolute.median(),
        "p90": absolute.quantile(0.9),
        "bias": errors.mean(),
    }
