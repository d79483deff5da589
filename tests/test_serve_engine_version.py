"""``codesign serve --engine-version`` / ``--device-gemm-rates`` (app/serving_stack.py):
the version-family rule on a synthetic profile, explicit flags winning, bad input, the
shipped cost table's schema, and a real run whose TPOT moves by the hand-derived amount."""

import argparse
import contextlib
import io
import json
from pathlib import Path

import pytest

from app.cli import main
from app.cli.serve import _front_end_s
from app.serving_stack import adapted_runtime, chunk_seconds, engine_stack, stack_choice
from calibration import Stack, gemm_scale, load_serving_costs
from calibration.serving_cost_table import family_stacks, serving_costs_path
from genz import PhaseProfile, RuntimeProfile, load_runtime
from genz.runtime_devices import StackKey
from roofline import InputError, load_platform

SEQUENCE_S = 2e-4
TABLE = load_serving_costs()


def _profile(version_family: str) -> RuntimeProfile:
    phase = PhaseProfile(0.5, 0.8, 1e-3, sequence_overhead_s=SEQUENCE_S)
    return RuntimeProfile(
        name="synthetic",
        phases={"prefill": phase, "decode": phase},
        stack=StackKey("vllm", "vllm bench serve", version_family),
    )


def _args(**given: object) -> argparse.Namespace:
    values: dict[str, object] = {
        "engine_version": None,
        "device_gemm_rates": False,
        "abits": 16.0,
        "policy": "continuous",
        "chunk_overhead_ms": None,
        "request_overhead_ms": None,
        "runtime": None,
    }
    return argparse.Namespace(**{**values, **given})


@pytest.fixture(scope="module")
def a100():
    return load_platform("a100-sxm-80gb")


def test_a_newer_line_drops_the_sequence_cost_and_charges_the_chunk_cost(a100):
    profile = _profile("2024 (vLLM 0.4-0.5)")
    args = _args(engine_version="vLLM 0.10")
    choice = stack_choice(args, profile, a100)
    v1 = TABLE[Stack("vllm", "V1 (0.7+)", 2025.0)]
    assert choice.dropped_sequence_s == SEQUENCE_S
    adapted = adapted_runtime(choice, profile, a100)
    for name in ("prefill", "decode"):
        assert adapted.phase(name, a100).sequence_overhead_s == 0.0
        assert adapted.phase(name, a100).step_overhead_s == 1e-3  # device terms kept
    assert chunk_seconds(args, choice) == v1.chunk_s > 0
    assert _front_end_s(args, adapted, choice) == v1.request_s > 0


def test_an_older_or_same_line_keeps_the_profiles_sequence_cost(a100):
    profile = _profile("2025 (vLLM V1)")
    args = _args(engine_version="vLLM 0.6.3")
    choice = stack_choice(args, profile, a100)
    assert choice.dropped_sequence_s is None
    kept = adapted_runtime(choice, profile, a100)
    assert kept.phase("decode", a100).sequence_overhead_s == SEQUENCE_S
    assert chunk_seconds(args, choice) == TABLE[Stack("vllm", "0.6", 2024.5)].chunk_s


def test_explicit_flags_win_and_unserved_runs_pay_no_request_cost(a100):
    profile = _profile("2024")
    args = _args(engine_version="vLLM 0.10", chunk_overhead_ms=0.5, request_overhead_ms=0.0)
    choice = stack_choice(args, profile, a100)
    assert chunk_seconds(args, choice) == 5e-4
    assert _front_end_s(args, profile, choice) == 0.0
    static = _args(engine_version="vLLM 0.10", policy="static")
    assert stack_choice(static, profile, a100).request_s is None
    harness = _args(engine_version="TensorRT-LLM 1.0 trtllm-bench")
    assert stack_choice(harness, profile, a100).request_s is None
    assert stack_choice(_args(), profile, a100) is None  # neither flag: nothing applies


def test_engine_text_is_read_as_calibration_reads_it_and_unknown_text_is_refused():
    assert engine_stack("vLLM 0.10.1.1") == Stack("vllm", "V1 (0.7+)", 2025.0)
    assert engine_stack("tensorrt-llm v1.0").family == "1.x"
    for text in ("FooServe 2", " "):
        with pytest.raises(InputError, match=r"--engine-version .*accepted: TensorRT-LLM .*vLLM"):
            engine_stack(text)


def _cli(*extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["serve", "--model", "llama-3.1-8b", "--hw", "a100-sxm-80gb", *extra])
    return code, out.getvalue(), err.getvalue()


def test_bad_flags_are_one_line_errors():
    code, _, err = _cli("--rate", "1", "--num-requests", "5", "--engine-version", "FooServe")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--engine-version" in err
    code, _, err = _cli("--rate", "1", "--num-requests", "5", "--device-gemm-rates")
    assert code == 2 and "--device-gemm-rates" in err and "--runtime" in err
    # refused before a sweep (or a Ray worker) simulates anything
    code, _, err = _cli("--sweep-rates", "1,2", "--duration", "5", "--engine-version", "Foo")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "accepted: " in err


def test_the_shipped_table_has_every_family_and_its_command():
    assert set(TABLE) == set(family_stacks())
    text = serving_costs_path().read_text(encoding="utf-8")
    assert "calibrated_from: python benchmarks/serving_costs.py" in text
    assert "--write data/runtimes/serving_costs/families.yaml" in text
    for costs in TABLE.values():
        assert 0 <= costs.request_s < 0.2 and 0 <= costs.chunk_s < 0.01


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("families: [", "not valid YAML at line"),
        ("families: []\ncalibrated_from: x\n", "non-empty families"),
        ("families: [{engine: vllm}]\ncalibrated_from: x\n", r"families\[0\]: needs exactly"),
    ],
)
def test_a_malformed_table_is_a_one_line_error(tmp_path: Path, text: str, message: str):
    path = tmp_path / "costs.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_serving_costs(path)


def test_a_family_not_in_families_or_a_bad_cost_is_refused(tmp_path: Path):
    good = serving_costs_path().read_text(encoding="utf-8")
    for old, new, message in (
        ("family: V1 (0.7+)", "family: V9", "not a version family"),
        ("chunk_overhead_s: 0.0\n", "chunk_overhead_s: -1\n", r"chunk_overhead_s must be"),
    ):
        path = tmp_path / "costs.yaml"
        path.write_text(good.replace(old, new, 1), encoding="utf-8")
        with pytest.raises(InputError, match=message):
            load_serving_costs(path)


#: 16 closed-loop clients, 16 requests of 128 in / 32 out: every decode step holds all 16.
CLOSED = [
    "--runtime",
    "vllm",
    "--max-concurrency",
    "16",
    "--num-requests",
    "16",
    "--input",
    "128",
    "--output",
    "32",
    "--length-cv",
    "0",
    "--no-progress",
    "--json",
    "--request-overhead-ms",
    "0",
]


def test_vllm_v1_on_the_vllm_profile_moves_tpot_by_the_hand_derived_amount(a100):
    code, before, _ = _cli(*CLOSED)
    code_after, after, _ = _cli(*CLOSED, "--engine-version", "vLLM 0.10")
    assert code == code_after == 0
    old, new = json.loads(before), json.loads(after)
    assert "stack_costs" not in old
    profile = load_runtime("vllm")
    dropped = profile.on_platform(a100).phase("decode", a100).sequence_overhead_s
    chunk = TABLE[Stack("vllm", "V1 (0.7+)", 2025.0)].chunk_s
    # each decode step: 16 sequences x (fitted chunk cost - the profile's sequence cost)
    expected = 16 * (chunk - dropped)
    assert expected < 0  # the 2024 profile's host cost is above V1's fitted chunk cost
    assert new["tpot_s_p50"] - old["tpot_s_p50"] == pytest.approx(expected, abs=1e-9)
    assert new["stack_costs"]["sequence_overhead_dropped_s"] == dropped
    assert new["stack_costs"]["chunk_overhead_s"] == chunk
    assert new["request_overhead_s"] == 0.0  # --request-overhead-ms 0 wins


def test_text_output_says_what_was_applied_and_the_gemm_scale(a100):
    code, out, _ = _cli(
        *[flag for flag in CLOSED if flag != "--json"],
        "--engine-version",
        "vLLM 0.10",
        "--device-gemm-rates",
    )
    assert code == 0
    scale = gemm_scale(load_runtime("vllm"), "a100-sxm-80gb", 16.0)
    assert "engine version" in out and "vllm V1 (0.7+)" in out
    assert "data/runtimes/serving_costs/families.yaml" in out
    assert f"x{scale:.3f} on a100-sxm-80gb" in out and scale != 1.0
