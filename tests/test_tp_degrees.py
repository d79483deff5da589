"""Every front door offers and accepts only TP degrees that give each device whole heads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from genz import evaluate_grid, load_model
from roofline import InputError, load_platform

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"


def test_evaluate_grid_rejects_a_tp_that_splits_heads() -> None:
    # Llama 3.1 8B: 32 query heads, 8 KV heads; 3 divides neither.
    model, platform = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    with pytest.raises(InputError, match=r"tp = 3 .*accepted: 1, 2, 4, 8, 16, 32"):
        evaluate_grid(model, platform, tp=[1, 3])


def test_dashboard_offers_qwen_7b_only_whole_head_tp_degrees() -> None:
    # Qwen2.5-7B: 28 query heads, 4 KV heads: tp 8 gives 3.5 heads per device; 28 is
    # allowed (a multiple of the 4 KV heads, each replicated on 7 devices, as vLLM does).
    at = AppTest.from_file(str(DASHBOARD), default_timeout=60)
    at.switch_page("latency_page.py")
    at.session_state["model"] = "qwen2.5-7b"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    slider = next(w for w in at.sidebar.get("select_slider") if w.key == "tp")
    assert list(slider.options) == ["1", "2", "4", "28"]


def test_codesign_meshes_keep_only_whole_head_tp() -> None:
    from search.codesign.model import mesh_valid

    # 28 heads / 4 KV heads (Qwen2.5-7B's shape): tp 8 would give 3.5 heads per device.
    fields = {
        "heads": np.full(4, 28.0),
        "kv_heads": np.full(4, 4.0),
        "layers": np.full(4, 28.0),
        "experts": np.ones(4),
    }
    tp = np.array([1.0, 4.0, 8.0, 28.0])
    ones = np.ones(4)
    assert mesh_valid(fields, tp, ones, ones).tolist() == [True, True, False, True]
