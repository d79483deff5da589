"""The out-of-source accuracy block of a transfer profile (calibration.transfer_accuracy):
each source weighs the same in its quantiles and its MAPE, and genz reads it back."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from calibration.transfer_accuracy import held_out_accuracy
from genz import runtime_from_dict


def _records():
    """Source A: 9 batch latencies predicted exactly; source B: one predicted at half
    its measurement (measured / predicted = 2). Physics (``ideal``) exact everywhere."""
    rows = [
        {"row": i, "source": "A", "metric": "batch_latency_s", "measured": 1.0, "generic": 1.0}
        for i in range(9)
    ]
    rows.append(
        {"row": 9, "source": "B", "metric": "batch_latency_s", "measured": 2.0, "generic": 1.0}
    )
    return [{**r, "ideal": r["measured"], "stack": r["generic"]} for r in rows]


def _stored():
    return [SimpleNamespace(row=SimpleNamespace(hw="h100-sxm")) for _ in range(10)]


def test_quantiles_and_mape_weigh_each_source_the_same():
    block = held_out_accuracy(_records(), "generic", _stored(), "test")
    # pooled over values, the 90 % quantile would be 1 (9 of 10 values); with each
    # source weighing the same, B's value carries half the weight
    assert block["ratio_quantiles"] == {"0.1": 1.0, "0.5": 1.0, "0.9": 2.0}
    # source-averaged MAPE: (0 + 50 %) / 2; pooled it would be 5 %
    assert block["held_out_mape"]["batch_latency_s"] == {
        "profile": 25.0,
        "ideal": 0.0,
        "sources": 2,
        "rows": 10,
    }
    assert block["device_classes"]["nvidia-gpu"]["rows"] == 10


def test_the_block_is_a_profile_accuracy_genz_reads():
    document = {
        "name": "t",
        "accuracy": held_out_accuracy(_records(), "generic", _stored(), "test"),
    }
    phase = {
        key: {"value": value, "source": "t"}
        for key, value in (
            ("compute_efficiency", 0.5),
            ("memory_efficiency", 0.7),
            ("step_overhead_s", 0.0),
        )
    }
    document.update(prefill=phase, decode=phase)
    accuracy = runtime_from_dict(document).accuracy
    assert accuracy is not None and accuracy.ratio_quantiles[0.9] == pytest.approx(2.0)
    assert accuracy.held_out_mape["batch_latency_s"].profile == 25.0
