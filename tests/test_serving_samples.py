"""`codesign serve --samples N` / `--beams B`: one prefill, N sequences decoding together
and sharing the prompt's whole KV blocks (`search.serving.occupancy`)."""

from __future__ import annotations

import json
import math
from dataclasses import fields, replace

import numpy as np
import pytest

from app.cli import main
from genz import Scenario, load_model, predict
from roofline import InputError, load_platform
from search.serving import (
    SchedulerConfig,
    build_replica,
    run,
    simulate_replica,
    synthetic_workload,
)


@pytest.fixture(scope="module")
def h100():
    return load_platform("h100-sxm")


@pytest.fixture(scope="module")
def llama():
    return load_model("llama-3.1-8b")


def _records_equal(a, b):
    for item in fields(a):
        x, y = getattr(a, item.name), getattr(b, item.name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=item.name)
        else:
            assert x == y, item.name


@pytest.mark.parametrize("mode", ["samples", "beams"])
def test_one_sample_or_beam_is_todays_serve(h100, llama, mode):
    workload = synthetic_workload(30.0, 4.0, input_tokens=1200, output_tokens=150, seed=7)
    replica = build_replica(llama, h100, workload, config=SchedulerConfig(kv_blocks=1200))
    _records_equal(
        simulate_replica(replace(workload, **{mode: 1}), replica),
        simulate_replica(workload, replica),
    )


@pytest.mark.parametrize(
    ("mode", "axis"), [("samples", "parallel_samples"), ("beams", "beam_width")]
)
@pytest.mark.parametrize("n", [2, 8])
def test_low_load_equals_predict_after_one_prefill(h100, llama, mode, axis, n):
    # Two requests 100 s apart never meet: each is one prefill (one sequence) and n
    # sequences decoding together, predict's batch-1 TTFT and batch-n TPOT.
    workload = synthetic_workload(0.01, 300.0, input_tokens=1000, output_tokens=200,
                                  length_cv=0.0, seed=1)  # fmt: skip
    grouped = replace(workload, **{mode: n})
    result = run(grouped, build_replica(llama, h100, grouped))
    expected = predict(llama, h100, Scenario(1, 1000, 200, **{axis: n}))
    assert result.summary["ttft_s_p50"] == pytest.approx(expected.ttft_s, rel=1e-9)
    assert result.summary["tpot_s_p50"] == pytest.approx(expected.tpot_s, rel=1e-9)
    # every sample's tokens count; a beam search returns one sequence
    returned = n if mode == "samples" else 1
    span = result.summary["span_s"]
    assert result.summary["throughput_tokens_per_s"] * span == pytest.approx(
        len(workload) * 200 * returned, rel=1e-12
    )


@pytest.mark.parametrize("mode", ["samples", "beams"])
def test_windowed_groups_past_the_window_decode_at_predicts_tpot(h100, mode):
    # Mistral 7B past its 4,096 window: every decode step of n sequences costs the same,
    # predict's batch-n TPOT; the group's KV stops growing at the window too.
    mistral = load_model("mistral-7b")
    workload = synthetic_workload(0.01, 300.0, input_tokens=6000, output_tokens=64,
                                  length_cv=0.0, seed=1)  # fmt: skip
    grouped = replace(workload, **{mode: 4})
    replica = build_replica(mistral, h100, grouped)
    result = run(grouped, replica)
    axis = "parallel_samples" if mode == "samples" else "beam_width"
    expected = predict(mistral, h100, Scenario(1, 6000, 64, **{axis: 4}))
    assert result.summary["tpot_s_p50"] == pytest.approx(expected.tpot_s, rel=1e-9)
    # All-windowed: at admission the 4 samples share the prompt's last window (4,097 of
    # the 257 blocks' 4,112 tokens) and each has a block of slack (15): 4,157, then 3 a
    # step as shared blocks slide out (module doc of `occupancy`); the timeline's last
    # point with the group running is its admission.
    assert result.kv_occupancy.max() * replica.kv_capacity_tokens == pytest.approx(4097 + 4 * 15)


def test_a_group_shares_its_prompts_whole_blocks(h100, llama):
    # 4 samples of a 1,000-token prompt: 992 tokens (62 whole blocks) stored once, each
    # sample its copy of the last partial block (8 tokens) and one block of slack (15):
    # 992 + 4 x (8 + 15) = 1,084 at admission, + 4 a decode step. Both prompts are
    # prefilled in one step when the cache holds twice that; a token less, one waits.
    workload = replace(_at_once(1000, 40, 2), samples=4)
    need = 992 + 4 * (8 + 15)
    for capacity, together in ((2 * need, 2), (2 * need - 1, 1)):
        config = SchedulerConfig(kv_capacity_tokens=capacity)
        record = simulate_replica(workload, build_replica(llama, h100, workload, config=config))
        assert record.running[0] == 4 * together
        assert record.kv_tokens[0] == together * need
        assert np.all(np.isfinite(record.finish_s))


def _at_once(prompt, output, requests):
    return synthetic_workload(math.inf, 1.0, input_tokens=prompt, output_tokens=output,
                              length_cv=0.0, requests=requests)  # fmt: skip


@pytest.mark.parametrize(("name", "prompt", "policy"), [
    ("llama-3.1-8b", 800, "continuous"), ("gemma-2-9b", 4000, "continuous"),
    ("gemma-2-9b", 4000, "chunked"), ("mistral-7b", 3900, "chunked"),
])  # fmt: skip
def test_groups_are_swapped_not_recomputed(h100, name, prompt, policy):
    # vLLM recomputes single-sequence groups only: beams preempted go to host and back.
    # The windowed ones cross the window while decoding; every unit comes back.
    workload = replace(synthetic_workload(20.0, 3.0, input_tokens=prompt, output_tokens=400,
                                          seed=3), beams=4)  # fmt: skip
    blocks = 600 if prompt < 1000 else 4000
    config = SchedulerConfig(
        policy=policy, kv_blocks=blocks, preemption="recompute", max_batched_tokens=2048
    )
    replica = build_replica(load_model(name), h100, workload, config=config)
    record = simulate_replica(workload, replica)
    assert record.preemptions.sum() > 0 and np.all(np.isfinite(record.finish_s))
    assert record.kv_tokens.max() <= record.kv_capacity_tokens and record.kv_tokens[-1] == 0


def test_cli_samples_one_is_the_default_and_n_multiplies_throughput(capsys):
    base = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1",
            "--duration", "20", "--no-progress", "--json"]  # fmt: skip
    outputs = []
    for extra in ([], ["--samples", "1"], ["--samples", "3"]):
        assert main([*base, *extra]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    plain, one, three = outputs
    assert one == plain
    assert three["samples"] == 3 and three["requests"] == plain["requests"]
    assert three["throughput_tokens_per_s"] > 2.5 * plain["throughput_tokens_per_s"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--beams", "300"], r"--beams 300 exceeds --max-seqs 256"),
        (["--samples", "2", "--beams", "2"], r"give --samples or --beams, not both"),
        (["--samples", "0"], r"--samples must be"),
        (["--beams", "2000"], r"--beams must be"),
        (["--samples", "2", "--policy", "static"], r"--samples is simulated with --policy "),
        (["--beams", "2", "--spec-tokens", "3"], r"--beams is simulated without speculative"),
    ],
)
def test_bad_mode_flags_are_one_line_errors(capsys, extra, message):
    import re

    code = main(["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1",
                 "--duration", "5", "--no-progress", *extra])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert re.search(message, err) and "\n" not in err and "Traceback" not in err


def test_library_refuses_groups_where_they_are_not_simulated(h100, llama):
    workload = replace(_at_once(500, 20, 2), samples=2)
    static = build_replica(llama, h100, workload, config=SchedulerConfig(policy="static"))
    with pytest.raises(InputError, match="samples > 1 is simulated with the continuous"):
        simulate_replica(workload, static)
    small = build_replica(llama, h100, workload, config=SchedulerConfig(max_sequences=1))
    with pytest.raises(InputError, match=r"samples \(2\) must be at most max_sequences \(1\)"):
        simulate_replica(workload, small)
    with pytest.raises(InputError, match="give samples or beams, not both"):
        replace(workload, beams=2)


@pytest.mark.parametrize(("beams", "capacity"), [(1, 1100), (4, 1084 + 4 * 300)])
def test_a_swapped_request_that_cannot_grow_even_alone_is_rejected(
    h100, llama, monkeypatch, beams, capacity
):
    # It outgrows the whole cache (before its 499 decode steps end): preempted
    # (swapped to host), then refused at re-admission instead of being swapped in and
    # out forever (the Python loop).
    monkeypatch.setenv("CODESIGN_SERVING_CORE", "python")
    workload = replace(_at_once(1000, 500, 2), beams=beams)
    config = SchedulerConfig(kv_capacity_tokens=capacity, preemption="swap")
    record = simulate_replica(workload, build_replica(llama, h100, workload, config=config))
    assert record.rejected.all() and record.preemptions.min() >= 1


def test_windowed_group_grows_by_n_then_n_minus_one(h100):
    # Mistral 7B (every layer windowed, w' = 4,096: K = 4,112 - 15 = 4,097), 4 samples of a
    # 4,000-token prompt (250 whole blocks, all in the window): 4,000 shared + 4 x 15 at
    # admission; + 4 a step until the window is full (97 steps), then + 3 a step while the
    # shared blocks slide out. Blocks of 8 decode steps put a timeline point every 8.
    mistral = load_model("mistral-7b")
    workload = replace(_at_once(4000, 300, 1), samples=4)
    config = SchedulerConfig(scheduler_steps=8)
    record = simulate_replica(workload, build_replica(mistral, h100, workload, config=config))
    held = record.kv_tokens[record.running > 0]
    steps = 8 * np.arange(len(held))
    expected = 4000 + 4 * 15 + 4 * np.minimum(steps, 97) + 3 * np.maximum(steps - 97, 0)
    np.testing.assert_array_equal(held, expected)
    assert len(held) > 30
