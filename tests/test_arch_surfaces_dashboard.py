"""Issue 23's features in the dashboard: controls a model refuses are disabled with the
reason shown (Zamba2's window and layer mix), window choices stay within the context,
and the Serving page offers and passes samples, beams, offload, images and LoRA."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.dashboard.state import Selection

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"


def latency_page(model: str) -> AppTest:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=60)
    at.switch_page("latency_page.py")
    at.session_state["model"] = model
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_zamba2_window_and_mix_controls_are_disabled_with_the_reason():
    at = latency_page("zamba2-7b")
    window = at.sidebar.selectbox(key="sliding_window")
    mix = at.sidebar.selectbox(key="attention_layers")
    assert window.disabled and mix.disabled
    captions = " ".join(caption.value for caption in at.sidebar.caption)
    assert "windowed attention in shared transformer blocks (Zamba2) is not modelled" in captions
    assert "invokes shared transformer blocks between its Mamba-2 layers" in captions
    assert not at.error  # the page predicts the model's own pattern


def test_a_hybrid_keeps_its_mix_control():
    at = latency_page("jamba-v0.1")
    mix = at.sidebar.selectbox(key="attention_layers")
    assert not mix.disabled and mix.options[-1] == "32"


def test_window_choices_stay_within_the_context():
    gemma = latency_page("gemma-2-9b")  # context 8,192: larger windows are refused
    window = gemma.sidebar.selectbox(key="sliding_window")
    assert not window.disabled and window.options[-1] == "8192"
    assert "attention_layers" not in {w.key for w in gemma.sidebar.selectbox}


def test_serving_page_offers_images_and_lora_and_passes_samples_offload_and_window():
    pytest.importorskip("search.serving")
    from app.dashboard.page_specs import PAGES
    from app.dashboard.serving_page import Pools, Traffic, replica_step_cost, serve_command
    from search.serving import SLO

    (serving,) = [spec for spec in PAGES if spec.title == "Serving"]
    wanted = {"parallel_samples", "beam_width", "weight_offload", "kv_offload", "sliding_window"}
    wanted |= {"images", "lora_rank", "lora_adapters", "lora_targets"}
    assert wanted <= serving.controls
    chosen = Selection(
        model="mistral-7b", weight_offload=0.25, sliding_window=1024, parallel_samples=4
    )
    command = shlex.split(serve_command(chosen, "continuous", Traffic(), 2.0, 10, SLO(), Pools()))
    for flag, value in (
        ("--weight-offload", "0.25"),
        ("--sliding-window", "1024"),
        ("--samples", "4"),
    ):
        assert command[command.index(flag) + 1] == value
    offloaded = replica_step_cost(chosen, "h100-sxm", 512, 8)
    resident = replica_step_cost(
        Selection(model="mistral-7b", sliding_window=1024), "h100-sxm", 512, 8
    )
    assert offloaded.weights_bytes == pytest.approx(0.75 * resident.weights_bytes, rel=1e-12)


def test_hardware_designer_applies_window_and_samples_and_its_command_agrees(capsys):
    """The page read the model without its window / layer mix (cached_model), and its
    `hw design` command had no decoding-mode or architecture flags."""
    import json

    from app.cli import main
    from app.dashboard.hardware_page import DesignChoice, design_command, evaluate

    chosen = Selection(
        model="mistral-7b", input_tokens=16000, sliding_window=1024, parallel_samples=2
    )
    plain = Selection(model="mistral-7b", input_tokens=16000, parallel_samples=2)
    windowed = evaluate(DesignChoice(), chosen)
    assert windowed.tpot_s < evaluate(DesignChoice(), plain).tpot_s
    command = shlex.split(design_command(DesignChoice(), chosen))
    assert main(command[1:]) in (0, None)
    printed = json.loads(capsys.readouterr().out)["evaluation"]
    assert printed["tpot_s"] == pytest.approx(windowed.tpot_s, rel=1e-9)


def test_lora_selection_equals_its_predict_command(capsys):
    import json

    from app.cli import main
    from app.dashboard.state import build_model, build_scenario, predict_command
    from genz import load_model, predict, with_lora
    from roofline import load_platform

    chosen = Selection(model="llama-3.1-8b", batch=8, lora_rank=16, lora_adapters=4)
    chosen = dataclasses.replace(chosen, lora_targets="qkv,o,ffn")
    model = with_lora(load_model("llama-3.1-8b"), 16, 4, ("qkv", "o", "ffn"))
    assert build_model(chosen).name == model.name
    expected = predict(model, load_platform("h100-sxm"), build_scenario(chosen))
    assert main([*shlex.split(predict_command(chosen))[1:], "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-9)


def test_lora_rank_is_disabled_with_the_reason_for_a_pure_ssm():
    at = latency_page("mamba-2.8b")
    assert at.sidebar.number_input(key="lora_rank").disabled
    captions = " ".join(caption.value for caption in at.sidebar.caption)
    assert "has no attention layers to adapt" in captions


def test_serving_page_run_with_samples_equals_its_serve_command(capsys):
    import json

    pytest.importorskip("search.serving")
    from app.cli import main
    from app.dashboard.serving_page import Pools, Traffic, serve_command, simulate
    from search.serving import SLO

    chosen = Selection(model="llama-3.2-1b", parallel_samples=3)
    summary, _, _, _ = simulate(chosen, "continuous", Traffic(), 2.0, 5.0, SLO(), Pools())
    command = shlex.split(serve_command(chosen, "continuous", Traffic(), 2.0, 5.0, SLO(), Pools()))
    assert main([*command[1:], "--json"]) in (0, None)
    printed = json.loads(capsys.readouterr().out)
    assert printed["samples"] == 3
    for key in ("throughput_tokens_per_s", "tpot_s_mean", "ttft_s_p99", "kv_occupancy_peak"):
        assert summary[key] == pytest.approx(printed[key], rel=1e-9), key
    alone = simulate(
        Selection(model="llama-3.2-1b"), "continuous", Traffic(), 2.0, 5.0, SLO(), Pools()
    )
    assert summary["throughput_tokens_per_s"] > 2 * alone[0]["throughput_tokens_per_s"]
