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
