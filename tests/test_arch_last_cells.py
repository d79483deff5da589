"""Issue 23's last cells: the Serving page's LoRA and image runs equal `codesign serve`'s,
serve's energy counts a VLM's vision tower, and scenario files take `-ngl` offload."""

from __future__ import annotations

import json
import shlex

import pytest

from app.dashboard.state import Selection

pytest.importorskip("search.serving")

KEYS = ("throughput_tokens_per_s", "tpot_s_mean", "ttft_s_p99", "kv_occupancy_peak")


def _page_against_cli(chosen: Selection, capsys: pytest.CaptureFixture[str]) -> dict:
    """The Serving page's run of ``chosen`` (1 request/s for 4 s) and its reproduce
    command's, key by key; the command's JSON."""
    from app.cli import main
    from app.dashboard.serving_page import Pools, Traffic, serve_command, simulate
    from search.serving import SLO

    args = (chosen, "continuous", Traffic(), 1.0, 4.0, SLO(), Pools())
    summary, _, _, _ = simulate(*args)
    command = shlex.split(serve_command(*args))
    assert main([*command[1:], "--json"]) in (0, None)
    printed = json.loads(capsys.readouterr().out)
    for key in KEYS:
        assert summary[key] == pytest.approx(printed[key], rel=1e-9), key
    return {"summary": summary, "printed": printed, "command": command}


def test_serving_page_lora_run_equals_its_serve_command(capsys):
    from app.dashboard.serving_page import Pools, Traffic, simulate
    from search.serving import SLO

    chosen = Selection(model="llama-3.2-1b", lora_rank=64, lora_adapters=8)
    run = _page_against_cli(chosen, capsys)
    command = run["command"]
    assert command[command.index("--lora-rank") + 1] == "64"
    assert command[command.index("--lora-targets") + 1] == "qkv,o"
    bare = simulate(
        Selection(model="llama-3.2-1b"), "continuous", Traffic(), 1.0, 4.0, SLO(), Pools()
    )
    assert run["summary"]["tpot_s_mean"] > bare[0]["tpot_s_mean"]  # the adapters cost time


def test_serving_page_images_run_equals_its_serve_command(capsys):
    from app.dashboard.serving_page import Pools, Traffic, simulate
    from search.serving import SLO

    chosen = Selection(model="llava-1.5-7b", images=2)
    run = _page_against_cli(chosen, capsys)
    assert run["printed"]["images"] == 2
    text = simulate(
        Selection(model="llava-1.5-7b"), "continuous", Traffic(), 1.0, 4.0, SLO(), Pools()
    )
    assert run["summary"]["ttft_s_p99"] > text[0]["ttft_s_p99"]  # 1,152 more prompt tokens


def test_an_idle_vlm_replicas_energy_counts_the_vision_tower_by_the_activity_model():
    """Requests 20 s apart run alone; the image run's prompts and the text run's have
    the same tokens, so the energy per request differs by the tower's FLOP and bytes
    (`genz.vision_steps`) at the power model's J/FLOP and J/byte, plus idle draw over
    the span the towers add. No TDP cap (``power_w`` None) so each step's draw is the
    activity model's alone."""
    import dataclasses

    from genz import load_model, vision_step_costs
    from roofline import load_platform
    from search.serving import SLO, build_replica, run, synthetic_workload, with_images

    model = load_model("llava-1.5-7b")
    h100 = dataclasses.replace(load_platform("h100-sxm"), power_w=None)
    drawn = synthetic_workload(0.05, 200, use_case_name="chat", seed=0)
    images = with_images(drawn, 2, model.vision.tokens_per_image)
    text = dataclasses.replace(images, images=0)  # the same prompt tokens, no tower
    with_tower = run(images, build_replica(model, h100, images), SLO()).economics
    without = run(text, build_replica(model, h100, text), SLO()).economics
    tower, power = vision_step_costs(model, h100, 2, 1), h100.power_model
    n = len(images)
    assert n >= 5
    active = power.j_per_flop * tower.flop[1] + power.j_per_byte * tower.bytes[1]
    idle = power.idle_w * (with_tower.span_s - without.span_s) / n
    assert active > 1.0  # joules: ~0.8 TFLOP and 2.5 GB a request
    per_request = (with_tower.energy_j - without.energy_j) / n
    assert per_request == pytest.approx(active + idle, rel=1e-9)
