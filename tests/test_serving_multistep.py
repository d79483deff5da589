"""Multi-step scheduling and client ITL: hand-derived traces on a two-request workload."""

import dataclasses

import numpy as np
import pytest

from app.cli import main
from genz import load_model
from roofline import InputError, load_platform
from search.serving import SchedulerConfig, Workload, build_replica, run, synthetic_workload
from search.serving.weighted import weighted_percentiles

PROMPT = 64
PAIRS = PROMPT * PROMPT - PROMPT * (PROMPT - 1) / 2


@pytest.fixture(scope="module")
def replica():
    workload = Workload(
        np.zeros(1), np.array([PROMPT]), np.array([5]), np.zeros(1, np.int64), "test"
    )
    return build_replica(load_model("llama-3.1-8b"), load_platform("h100-sxm"), workload)


def _two(arrival_b: float, output_a: int = 5) -> Workload:
    return Workload(
        np.array([0.0, arrival_b]),
        np.array([PROMPT, PROMPT]),
        np.array([output_a, 5]),
        np.zeros(2, np.int64),
        "test",
    )


def _steps(replica, n: int) -> SchedulerConfig:
    return dataclasses.replace(replica, config=SchedulerConfig(scheduler_steps=n))


def _decode(cost, d: int, context: float) -> float:
    return cost.step_time(0, 0.0, 0.0, d, context, d, d)


def test_one_step_is_the_default_run(replica):
    workload = synthetic_workload(20.0, 30.0, seed=2)
    default = run(workload, replica)
    one = run(workload, _steps(replica, 1))
    for name in ("ttft_s", "tpot_s", "e2e_s", "timeline_s", "kv_occupancy"):
        assert np.array_equal(getattr(default, name), getattr(one, name), equal_nan=True)
    assert default.summary == pytest.approx(one.summary, nan_ok=True)


def test_single_request_itl_is_its_step_gaps(replica):
    cost = replica.cost
    alone = Workload(np.zeros(1), np.array([PROMPT]), np.array([5]), np.zeros(1, np.int64), "t")
    summary = run(alone, replica).summary
    gaps = [_decode(cost, 1, PROMPT + j) for j in range(1, 5)]  # tokens 2..5
    assert summary["itl_s_mean"] == pytest.approx(np.mean(gaps), rel=1e-12)
    assert summary["itl_s_p50"] == pytest.approx(sorted(gaps)[1], rel=1e-12)
    assert summary["itl_s_p99"] == pytest.approx(max(gaps), rel=1e-12)
    assert summary["tpot_s_mean"] == pytest.approx(np.mean(gaps), rel=1e-12)


def test_prefill_interrupting_decode_lengthens_the_gap(replica):
    """N = 1: B arrives during A's first decode step and is prefilled after it; A's
    next chunk then comes a prefill and a two-sequence step later."""
    cost = replica.cost
    prefill = cost.step_time(PROMPT, PROMPT, PAIRS, 0, 0.0, 1, 1)
    first = _decode(cost, 1, PROMPT + 1)
    result = run(_two(prefill + first / 2, output_a=3), replica)
    prefill_b = cost.step_time(PROMPT, PROMPT, PAIRS, 0, PROMPT + 1, 1, 1)
    assert result.ttft_s[1] == pytest.approx(prefill + first + prefill_b - (prefill + first / 2))
    both = _decode(cost, 2, (PROMPT + 1) + PROMPT + 2)  # A and B, one token each
    # A: gaps first, prefill_b + both (and it ends); B: both, then its alone steps
    b_alone = [_decode(cost, 1, PROMPT + j) for j in range(2, 5)]
    expected = sorted([first, prefill_b + both, both, *b_alone])
    summary = result.summary
    assert summary["itl_s_mean"] == pytest.approx(np.mean(expected), rel=1e-12)
    assert summary["itl_s_p99"] == pytest.approx(expected[-1], rel=1e-12)


def test_multi_step_delays_admission_to_the_block_end(replica):
    """N = 4: B, arriving during A's block, waits for its end (3 more decode steps than
    with N = 1); A's four tokens reach the client together at the block's end."""
    cost = replica.cost
    prefill = cost.step_time(PROMPT, PROMPT, PAIRS, 0, 0.0, 1, 1)
    block = [_decode(cost, 1, PROMPT + j) for j in range(1, 5)]
    arrival_b = prefill + block[0] / 2
    one = run(_two(arrival_b), replica)
    four = run(_two(arrival_b), _steps(replica, 4))
    prefill_b = cost.step_time(PROMPT, PROMPT, PAIRS, 0, 0.0, 1, 1)
    assert four.ttft_s[1] == pytest.approx(prefill + sum(block) + prefill_b - arrival_b)
    rise = four.ttft_s[1] - one.ttft_s[1]
    # with N = 1, B's prefill step is costed with A's 65 tokens of context resident
    prefill_b_one = cost.step_time(PROMPT, PROMPT, PAIRS, 0, PROMPT + 1, 1, 1)
    assert rise == pytest.approx(sum(block[1:]) + prefill_b - prefill_b_one, rel=1e-9)
    assert 0 < rise <= 4 * max(block)
    assert four.e2e_s[0] == pytest.approx(prefill + sum(block))
    assert four.tpot_s[0] == pytest.approx(sum(block) / 4)
    # one chunk of four tokens per request: the ITL is a whole block
    assert four.summary["itl_s_p99"] == pytest.approx(four.e2e_s[1] - four.ttft_s[1])
    assert four.summary["itl_s_mean"] == pytest.approx(
        (sum(block) + four.e2e_s[1] - four.ttft_s[1]) / 2
    )


def test_sequence_ending_inside_a_block_holds_its_slot(replica):
    """N = 4, outputs 2 and 5 started together: the short one ends after one decode
    step but leaves at the block's end, and the block runs two sequences throughout."""
    workload = Workload(
        np.zeros(2), np.array([PROMPT, PROMPT]), np.array([2, 5]), np.zeros(2, np.int64), "t"
    )
    cost = replica.cost
    four = run(workload, _steps(replica, 4))
    prefill = cost.step_time(2 * PROMPT, 2 * PROMPT, 2 * PAIRS, 0, 0.0, 2, 2)
    block = sum(_decode(cost, 2, 2 * (PROMPT + j)) for j in range(1, 5))
    assert four.e2e_s[0] == pytest.approx(prefill + block)
    assert four.e2e_s[1] == pytest.approx(prefill + block)


def test_littles_law_with_multi_step(replica):
    workload = synthetic_workload(12.0, 300.0, seed=3)
    result = run(workload, _steps(replica, 10))
    times = np.append(result.timeline_s, result.timeline_s[-1])
    in_system = (result.waiting + result.running).astype(float)
    mean_in_system = np.sum(in_system * np.diff(times)) / (times[-1] - workload.arrival_s[0])
    rate = len(workload) / (times[-1] - workload.arrival_s[0])
    assert mean_in_system == pytest.approx(rate * np.mean(result.e2e_s), rel=0.05)
    assert result.sustainable


def test_weighted_percentiles_by_hand():
    values = np.array([3.0, 1.0, 2.0, 9.0])
    counts = np.array([1.0, 2.0, 0.0, 1.0])  # samples 1, 1, 3, 9
    assert weighted_percentiles(values, counts, (25, 50, 75, 99)) == [1.0, 1.0, 3.0, 9.0]
    assert np.isnan(weighted_percentiles(values, np.zeros(4), (50,))[0])


def test_bad_scheduler_steps(capsys):
    with pytest.raises(InputError, match="scheduler_steps"):
        SchedulerConfig(scheduler_steps=0)
    with pytest.raises(InputError, match="continuous only"):
        SchedulerConfig(policy="chunked", scheduler_steps=4)
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "2"]
    assert main([*args, "--duration", "5", "--scheduler-steps", "0"]) == 2
    assert "--scheduler-steps must be an integer in [1, 1024]" in capsys.readouterr().err
    assert main([*args, "--duration", "5", "--scheduler-steps", "8"]) == 0
    assert "ITL P50/P90/P99" in capsys.readouterr().out
    chunked = [*args, "--duration", "5", "--scheduler-steps", "4", "--policy", "chunked"]
    assert main(chunked) == 2
    err = capsys.readouterr().err
    assert "--scheduler-steps 4 (multi-step scheduling) is modelled for --policy continuous" in err
    assert "got chunked" in err and "scheduler_steps" not in err
    sweep = [*args[:-2], "--scheduler-steps", "2", "--sweep-rates", "1", "--sweep-policies"]
    assert main([*sweep, "continuous,static"]) == 2
    assert "got static" in capsys.readouterr().err


def test_static_batch_itl_counts_the_rows_still_decoding(replica):
    """Static batch of outputs 3 and 5: decode steps 1-2 stream to both rows, 3-4 to
    the longer one only."""
    workload = Workload(
        np.zeros(2), np.array([PROMPT, PROMPT]), np.array([3, 5]), np.zeros(2, np.int64), "t"
    )
    static = dataclasses.replace(replica, config=SchedulerConfig(policy="static"))
    summary = run(workload, static).summary
    steps = [_decode(replica.cost, 2, 2 * (PROMPT + j)) for j in range(1, 5)]
    mean = (2 * steps[0] + 2 * steps[1] + steps[2] + steps[3]) / 6
    assert summary["itl_s_mean"] == pytest.approx(mean, rel=1e-12)
    assert summary["itl_s_p99"] == pytest.approx(max(steps), rel=1e-12)
