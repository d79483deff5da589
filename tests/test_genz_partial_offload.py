"""llama.cpp -ngl partial offload: closed-form checks of the layer split."""

import json

import pytest

from app.cli import main
from genz import Precision, Scenario, load_model, predict, predict_partial_offload
from roofline import InputError, load_platform

MODEL = load_model("llama-2-7b")
GPU, CPU = load_platform("rtx-4090"), load_platform("xeon-8480")
SCENARIO = Scenario(input_tokens=512, output_tokens=128, precision=Precision(weight_bits=4.5))


def test_all_layers_on_one_side_is_that_sides_prediction():
    everything = predict_partial_offload(MODEL, GPU, CPU, SCENARIO, 32)
    nothing = predict_partial_offload(MODEL, GPU, CPU, SCENARIO, 0)
    assert everything.tpot_s == pytest.approx(predict(MODEL, GPU, SCENARIO).tpot_s, rel=1e-12)
    assert everything.ttft_s == pytest.approx(predict(MODEL, GPU, SCENARIO).ttft_s, rel=1e-12)
    assert nothing.tpot_s == pytest.approx(predict(MODEL, CPU, SCENARIO).tpot_s, rel=1e-12)
    assert everything.host_bytes == 0.0 and nothing.device_bytes == 0.0


def test_time_is_linear_in_the_device_layers():
    """t(n) = t_model(device) + n/L t_layers(device) + (L - n)/L t_layers(host): equal
    steps between 8, 16 and 24 layers (no hand-off: the 4090 preset has no host link)."""
    tpots = [predict_partial_offload(MODEL, GPU, CPU, SCENARIO, n).tpot_s for n in (8, 16, 24)]
    assert tpots[0] - tpots[1] == pytest.approx(tpots[1] - tpots[2], rel=1e-9)
    assert tpots[0] > tpots[1] > tpots[2]  # the CPU's memory is slower than the GPU's


def test_decode_step_by_hand_for_a_memory_bound_split():
    """Batch-1 decode is memory-bound on both sides: the host's share of the step is at
    least the host layers' weight and KV bytes over the host's effective bandwidth
    (307.2 GB/s x 0.7) and at most that plus the xeon preset's 10 us kernel overhead on
    each of the 8 per-layer operators of 16 layers."""
    result = predict_partial_offload(MODEL, GPU, CPU, SCENARIO, 16)
    floor = result.host_bytes / (307.2e9 * 0.7)
    assert floor <= result.host_decode_s <= floor + 16 * 8 * 10e-6


def test_memory_splits_by_layer_share():
    half = predict_partial_offload(MODEL, GPU, CPU, SCENARIO, 16)
    full = predict(MODEL, GPU, SCENARIO).footprint
    assert half.device_bytes + half.host_bytes == pytest.approx(full.total_bytes, rel=1e-12)
    assert half.device_bytes > half.host_bytes  # embedding, LM head, activations stay


@pytest.mark.parametrize(
    ("layers", "scenario", "message"),
    [
        (33, SCENARIO, r"--gpu-layers must be an integer in \[0, 32\]"),
        (-1, SCENARIO, r"--gpu-layers must be an integer in \[0, 32\]"),
        (8, Scenario(kv_offload=0.5), "cannot be combined with --weight-offload"),
    ],
)
def test_bad_splits_are_refused(layers, scenario, message):
    with pytest.raises(InputError, match=message):
        predict_partial_offload(MODEL, GPU, CPU, scenario, layers)


def test_cli_prints_the_split(capsys):
    split = ["--host-hw", "xeon-8480", "--gpu-layers", "16", "--wbits", "4.5"]
    main(
        ["predict", "--model", "llama-2-7b", "--hw", "rtx-4090", *split, "--input", "512", "--json"]
    )
    summary = json.loads(capsys.readouterr().out)["summary"]
    direct = predict_partial_offload(MODEL, GPU, CPU, SCENARIO, 16)
    assert summary["tpot_s"] == pytest.approx(direct.tpot_s, rel=1e-12)
    assert summary["cpu_layers"] == 16
