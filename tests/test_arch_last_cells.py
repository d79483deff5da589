"""Issue 23's last cells: the Serving page's LoRA and image runs equal `codesign serve`'s,
serve's energy counts a VLM's vision tower, and scenario files take `-ngl` offload."""

from __future__ import annotations

import json
import re
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


# -- predict --scenarios: gpu_layers / host_hw (llama.cpp -ngl) ---------------------------

NGL_HEADER = "model,hw,batch,input_tokens,output_tokens,runtime,gpu_layers,host_hw\n"


def test_scenario_rows_take_gpu_layers_and_equal_the_clis_predict(tmp_path, capsys):
    from app.cli import main

    rows = (
        ("llama-3.1-8b", "h100-sxm", 2, 512, 64, "ideal", 16),
        ("llama-3.1-8b", "h100-sxm", 1, 256, 32, "llama.cpp", 0),
        ("llama-3.1-8b", "h100-sxm", 1, 256, 32, "llama.cpp", 32),
    )
    text = NGL_HEADER + "".join(f"{','.join(map(str, row))},xeon-8480\n" for row in rows)
    text += "llama-3.1-8b,h100-sxm,2,512,64,ideal,,\n"  # no split: the grid's row as before
    path = tmp_path / "ngl.csv"
    path.write_text(text)
    assert main(["predict", "--scenarios", str(path), "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    for result, (model, hw, batch, prompt, output, runtime, layers) in zip(
        results, rows, strict=False
    ):
        assert "error" not in result, result
        assert (result["gpu_layers"], result["host_hw"]) == (layers, "xeon-8480")
        flags = ["--model", model, "--hw", hw, "--batch", str(batch), "--runtime", runtime]
        flags += ["--input", str(prompt), "--output", str(output), "--wbits", "16"]
        flags += ["--gpu-layers", str(layers), "--host-hw", "xeon-8480", "--json"]
        assert main(["predict", *flags]) == 0
        printed = json.loads(capsys.readouterr().out)["summary"]
        for key in ("ttft_s", "tpot_s", "e2e_s"):
            assert result[key] == pytest.approx(printed[key], rel=1e-9), key
        assert result["fits"] == (printed["device_fits"] and printed["host_fits"])
    assert results[1]["tpot_s"] > results[2]["tpot_s"]  # all on the CPU is slower
    plain = results[3]
    assert "gpu_layers" not in plain and plain["tpot_s"] < results[0]["tpot_s"]


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ("1,abc,xeon-8480", r"^gpu_layers must be an integer >= 0, got 'abc'$"),
        ("1,99,xeon-8480", r"^gpu_layers must be an integer in \[0, 32\] \(layers of"),
        ("1,8,", r"^gpu_layers and host_hw go together"),
        ("1,,xeon-8480", r"^gpu_layers and host_hw go together"),
        ("1,8,no-such-cpu", r"^host_hw: "),
        ("2,8,xeon-8480", r"^gpu_layers models one device and its host: use tp = pp = ep = 1$"),
    ],
)
def test_bad_gpu_layers_cells_are_the_rows_one_line_error(cells, message):
    from calibration.scenarios import parse_scenarios, predict_scenarios

    text = f"model,hw,tp,gpu_layers,host_hw\nllama-3.1-8b,h100-sxm,{cells}\n"
    rows, errors = parse_scenarios(text)
    found = list(errors.values()) or [r.get("error") for r in predict_scenarios(rows)]
    assert len(found) == 1 and found[0] is not None
    assert re.search(message, found[0]) and "\n" not in found[0]


def test_gpu_layers_with_weight_offload_names_the_columns():
    from calibration.scenarios import parse_scenarios, predict_scenarios

    text = "model,hw,weight_offload,gpu_layers,host_hw\nllama-3.1-8b,h100-sxm,0.5,8,xeon-8480\n"
    (result,) = predict_scenarios(parse_scenarios(text)[0])
    assert result["error"] == "gpu_layers cannot be combined with weight_offload / kv_offload"
