"""Speculative decoding inside the serving simulator (`search.serving.speculative`):
hand-derived lone-request times at acceptance 0 and 1, the token pattern's mean, the
draft's memory, pools and the CLI."""

import json
import math

import numpy as np
import pytest

from app.cli import main
from genz import load_model
from roofline import InputError, load_platform
from search.serving import (
    SchedulerConfig,
    Speculation,
    SpeculativeDecoder,
    Workload,
    build_replica,
    kv_link,
    run,
    run_disaggregated,
    synthetic_workload,
)

PROMPT, OUTPUT, K = 500, 41, 4


@pytest.fixture(scope="module")
def target():
    return load_model("llama-3.1-8b"), load_platform("h100-sxm")


def _alone(output=OUTPUT):
    return Workload(
        np.zeros(1), np.full(1, PROMPT, np.int64), np.full(1, output, np.int64),
        np.zeros(1, np.int64), "test",
    )  # fmt: skip


def _verify_s(cost, d, context_sum):
    """The verify pass by hand: D (K+1) decode-form query tokens, token j of a
    sequence attending its context + j, all through the LM head, D sequences."""
    q = K + 1
    return cost.step_time(0, 0.0, 0.0, d * q, q * context_sum + d * q * (q + 1) / 2, d * q, d)


def test_acceptance_zero_is_one_token_per_draft_and_verify(target):
    """a = 0: every iteration yields one token and costs K draft steps plus the verify
    pass; a lone request's E2E is its prefill plus one iteration per later token."""
    model, hw = target
    work = _alone()
    for draft in ("ngram", "llama-3.2-1b"):
        replica = build_replica(model, hw, work, speculation=Speculation(K, 0.0, draft))
        result = run(work, replica)
        draft_cost = replica.speculative.draft_cost
        by_hand = 0.0
        for j in range(OUTPUT - 1):
            context = PROMPT + j
            by_hand += _verify_s(replica.cost, 1, context)
            if draft_cost is not None:
                by_hand += sum(
                    draft_cost.decode_time(1, float(context + i)) for i in range(1, K + 1)
                )
        assert result.e2e_s[0] - result.ttft_s[0] == pytest.approx(by_hand, rel=1e-12)
        plain = run(work, build_replica(model, hw, work))
        assert result.ttft_s[0] == plain.ttft_s[0]  # the prompt is not speculated
        assert result.e2e_s[0] > plain.e2e_s[0]  # nothing accepted: only the extra cost


def test_acceptance_one_is_k_plus_one_tokens_per_iteration(target):
    """a = 1: K + 1 tokens per iteration, so 40 tokens after the first take 8
    iterations, contexts growing by K + 1, and stream as 8 chunks."""
    model, hw = target
    work = _alone()
    replica = build_replica(model, hw, work, speculation=Speculation(K, 1.0))
    result = run(work, replica)
    iterations = math.ceil((OUTPUT - 1) / (K + 1))
    by_hand = sum(_verify_s(replica.cost, 1, PROMPT + (K + 1) * j) for j in range(iterations))
    assert result.e2e_s[0] - result.ttft_s[0] == pytest.approx(by_hand, rel=1e-12)
    assert len(result.itl_s) == iterations
    # a last iteration that overshoots the output: 42 tokens need 9 iterations too
    longer = run(_alone(OUTPUT + 1), replica)
    assert longer.e2e_s[0] - longer.ttft_s[0] == pytest.approx(
        by_hand + _verify_s(replica.cost, 1, PROMPT + (K + 1) * iterations), rel=1e-12
    )


def test_tokens_per_iteration_have_the_expected_mean():
    for a in (0.0, 0.3, 0.7, 0.95, 1.0):
        spec = Speculation(K, a)
        expected = (K + 1) if a == 1 else (1 - a ** (K + 1)) / (1 - a)
        assert spec.expected_tokens == pytest.approx(expected)
        decoder = SpeculativeDecoder(spec, None)
        counts = [decoder.tokens(n) for n in range(1000)]
        assert min(counts) >= 1 and max(counts) <= K + 1
        assert abs(sum(counts) - 1000 * expected) < 1  # floor pattern: off by < 1 token


def test_higher_acceptance_is_faster_and_the_draft_takes_memory(target):
    model, hw = target
    work = synthetic_workload(4.0, 60.0, seed=2)
    tpot = []
    for a in (0.0, 0.5, 0.9):
        replica = build_replica(model, hw, work, speculation=Speculation(3, a, "llama-3.2-1b"))
        tpot.append(run(work, replica).summary["tpot_s_p50"])
    assert tpot[0] > tpot[1] > tpot[2]
    plain = build_replica(model, hw, work)
    drafted = build_replica(model, hw, work, speculation=Speculation(3, 0.5, "llama-3.2-1b"))
    draft = drafted.speculative.draft_cost
    free = 0.9 * plain.cost.capacity_bytes - plain.cost.weights_bytes
    assert plain.kv_capacity_tokens / drafted.kv_capacity_tokens == pytest.approx(
        (free / plain.cost.kv_bytes_per_token)
        / (
            (free - draft.weights_bytes)
            / (plain.cost.kv_bytes_per_token + draft.kv_bytes_per_token)
        ),
        rel=1e-3,
    )


def test_speculation_in_the_decode_pool(target):
    """Disaggregated: the decode pool speculates; a lone request's decode is the
    hand-derived a = 1 iterations after its prefill and KV transfer."""
    model, hw = target
    work = _alone()
    replica = build_replica(model, hw, work, speculation=Speculation(K, 1.0))
    plain = build_replica(model, hw, work)
    link = kv_link(replica, replica)
    spec = run_disaggregated(work, replica, replica, link)
    base = run_disaggregated(work, plain, plain, link)
    assert spec.ttft_s[0] == base.ttft_s[0]
    transfer = PROMPT * replica.cost.kv_bytes_per_token / link.bandwidth_bytes_per_s
    transfer += link.latency_s
    iterations = math.ceil((OUTPUT - 1) / (K + 1))
    decode = sum(_verify_s(replica.cost, 1, PROMPT + (K + 1) * j) for j in range(iterations))
    assert spec.e2e_s[0] == pytest.approx(spec.ttft_s[0] + transfer + decode, rel=1e-9)
    # one closed-loop client over the pools: each request takes the lone one's time
    three = Workload(
        np.zeros(3), np.full(3, PROMPT, np.int64), np.full(3, OUTPUT, np.int64),
        np.zeros(3, np.int64), "test", max_concurrency=1,
    )  # fmt: skip
    closed = run_disaggregated(three, replica, replica, link)
    np.testing.assert_allclose(closed.e2e_s, spec.e2e_s[0], rtol=1e-12)


def test_bad_speculation_is_refused(target):
    model, hw = target
    work = _alone()
    for k, a, message in ((0, 0.5, "draft_tokens"), (65, 0.5, "draft_tokens"),
                          (4, 1.5, "acceptance_rate"), (4, -0.1, "acceptance_rate")):  # fmt: skip
        with pytest.raises(InputError, match=message):
            Speculation(k, a)
    with pytest.raises(InputError, match="policy continuous"):
        build_replica(
            model, hw, work, config=SchedulerConfig(policy="chunked"),
            speculation=Speculation(2, 0.5),
        )  # fmt: skip
    with pytest.raises(InputError, match="share the tokenizer"):
        build_replica(model, hw, work, speculation=Speculation(2, 0.5, "qwen2.5-0.5b"))
    with pytest.raises(InputError, match="multi-token-prediction"):
        build_replica(model, hw, work, speculation=Speculation(2, 0.5, "mtp"))


def test_cli_speculation(capsys):
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "4"]
    args += ["--duration", "30", "--no-progress", "--json"]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*args, "--spec-tokens", "4", "--spec-acceptance", "0.8"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert spec["spec_tokens"] == 4 and spec["spec_draft"] == "ngram"
    assert spec["tpot_s_p50"] < plain["tpot_s_p50"] / 2
    assert main([*args, "--spec-tokens", "2", "--policy", "disaggregated"]) == 0
    capsys.readouterr()
    for bad in (["--spec-tokens", "0"], ["--spec-tokens", "2", "--spec-acceptance", "1.5"],
                ["--spec-acceptance", "0.5"], ["--spec-tokens", "2", "--policy", "chunked"],
                ["--spec-tokens", "2", "--scheduler-steps", "4"]):  # fmt: skip
        assert main([*args, *bad]) == 2
        assert "--spec" in capsys.readouterr().err
