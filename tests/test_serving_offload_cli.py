"""`codesign serve` takes predict's offload shares and architecture variants: an idle
replica with weights or KV in host memory decodes at `genz.predict`'s TPOT for the same
shares, a sliding window shortens long-context steps, and bad shares are one line."""

import contextlib
import io
import json

import pytest

from app.cli import main
from genz import Parallelism, Precision, Scenario, load_model, predict
from roofline import InputError, load_platform
from search.serving import build_replica, run, synthetic_workload

LENGTHS = ["--input", "1024", "--output", "64", "--length-cv", "0"]


def _serve(*extra: str) -> dict:
    out = io.StringIO()
    args = ["serve", "--hw", "h100-sxm", "--rate", "0.02", "--duration", "300", "--json",
            *LENGTHS, *extra]  # fmt: skip
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("shares", [(0.5, 0.0), (0.0, 0.5), (0.25, 1.0)])
def test_idle_offloaded_replica_decodes_at_predicts_tpot(llama8b, h100, shares):
    weights, kv = shares
    workload = synthetic_workload(0.02, 300.0, input_tokens=1024, output_tokens=64,
                                  length_cv=0.0, seed=0)  # fmt: skip
    replica = build_replica(llama8b, h100, workload, weight_offload=weights, kv_offload=kv)
    alone = predict(
        llama8b,
        h100,
        Scenario(1, 1024, 64, Precision(16), Parallelism(), weight_offload=weights, kv_offload=kv),
    )
    summary = run(workload, replica).summary
    assert summary["tpot_s_p50"] == pytest.approx(alone.tpot_s, rel=1e-3)
    plain = run(workload, build_replica(llama8b, h100, workload)).summary
    if weights:  # streaming weights over the host link bounds the step
        assert summary["tpot_s_p50"] > 2 * plain["tpot_s_p50"]
    else:  # 1,088 tokens' KV per step: the link keeps up with the device
        assert summary["tpot_s_p50"] == pytest.approx(plain["tpot_s_p50"], rel=1e-9)


def test_cli_passes_the_shares_and_reports_them():
    offloaded = _serve("--model", "llama-3.1-8b", "--weight-offload", "0.5")
    plain = _serve("--model", "llama-3.1-8b")
    assert (offloaded["weight_offload"], offloaded["kv_offload"]) == (0.5, 0.0)
    # half of 16.06 GB of weights over the H100 preset's 63 GB/s host link, every step
    weights = predict(load_model("llama-3.1-8b"), load_platform("h100-sxm"), Scenario(1, 8, 1))
    per_step = 0.5 * weights.footprint.weights_bytes / 63e9
    assert offloaded["tpot_s_p50"] == pytest.approx(per_step, rel=0.05)
    assert plain["tpot_s_p50"] < per_step / 10


def test_cli_window_shortens_long_context_steps():
    long = ["--model", "mistral-7b", "--input", "30000", "--output", "64"]
    full = _serve(*long)
    windowed = _serve(*long, "--sliding-window", "1024")
    assert windowed["tpot_s_p50"] < full["tpot_s_p50"]


@pytest.mark.parametrize(("flag", "value"), [("--kv-offload", "1.5"), ("--weight-offload", "-0.1")])
def test_bad_share_is_one_line(flag, value, capsys):
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", flag, value]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0] and "[0, 1]" in err[0]


def test_a_reused_step_cost_must_have_the_same_shares(llama8b, h100):
    workload = synthetic_workload(1.0, 20.0, seed=0)
    cost = build_replica(llama8b, h100, workload).cost
    with pytest.raises(InputError, match="other offload shares"):
        build_replica(llama8b, h100, workload, cost=cost, weight_offload=0.5)
