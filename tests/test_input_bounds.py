"""Issue #25, second round: batch exit codes of ``calibrate``, bounds of hardware files,
command-specific bounds of every numeric flag, one definition per quantity, and the
dashboard's inputs taking their ranges and messages from the same table."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from helpers import run_cli

from calibration import Measurement, write_measurements
from calibration.rows import decompose
from genz import ARCHITECTURE_AXES, AXES, SCALE_AXES
from genz.runtime import PhaseProfile, RuntimeProfile
from roofline import (
    FLAG_BOUNDS_BY_COMMAND,
    HARDWARE_BOUNDS,
    flag_bound,
    list_platforms,
    load_platform,
)

PROFILE = RuntimeProfile(
    name="synthetic",
    phases={
        "prefill": PhaseProfile(0.45, 0.6, 2e-3, 2e-5),
        "decode": PhaseProfile(0.45, 0.6, 2e-3, 2e-5),
    },
    all_reduce_latency_s=3e-5,
)


def _runs(tmp_path, extra: list[Measurement]) -> str:
    """A measurement CSV: 24 runs of vLLM with the latencies ``PROFILE`` gives (1 %
    noise), followed by ``extra`` rows."""
    rows = [
        Measurement(model, hw, "vllm", batch, tokens, tokens, tp=tp, batch_latency_s=1.0)
        for hw in ("a100-sxm-40gb", "h100-sxm")
        for model, tp in (("llama-3-8b", 1), ("llama-2-7b", 2))
        for batch in (1, 8, 32)
        for tokens in (128, 1024)
    ]
    predicted = decompose(rows).predict(PROFILE)["batch_latency_s"]
    noise = np.exp(np.random.default_rng(0).normal(0.0, 0.01, len(rows)))
    rows = [
        dataclasses.replace(row, batch_latency_s=float(value))
        for row, value in zip(rows, predicted * noise, strict=True)
    ]
    path = tmp_path / "runs.csv"
    write_measurements([*rows, *extra], path)
    return str(path)


def _calibrate(path: str, out: str, *flags: str) -> tuple[int, str, str]:
    return run_cli("calibrate", "--measurements", path, "--runtime", "vllm", "--out", out, *flags)


def test_calibrate_exits_0_when_no_row_is_excluded(tmp_path):
    code, out, err = _calibrate(_runs(tmp_path, []), str(tmp_path / "p.yaml"))
    assert code == 0, err
    assert "0 excluded" in out and "excluded" not in err


def test_calibrate_exits_1_and_counts_excluded_rows_by_reason(tmp_path):
    # llama-3-8b has 8 KV heads and 32 query heads: tp 3 cannot split them; a 1 us batch
    # of 1024 + 1024 tokens is faster than any device could run it.
    extra = [
        Measurement("llama-3-8b", "h100-sxm", "vllm", 1, 128, 128, tp=3, batch_latency_s=1.0),
        Measurement("llama-3-8b", "h100-sxm", "vllm", 4, 256, 64, tp=3, batch_latency_s=1.0),
        Measurement("llama-3-8b", "h100-sxm", "vllm", 8, 1024, 1024, batch_latency_s=1e-6),
    ]
    out = tmp_path / "p.yaml"
    for json_flag in ((), ("--json",)):
        code, stdout, err = _calibrate(_runs(tmp_path, extra), str(out), *json_flag)
        assert code == 1, err
        last = err.strip().splitlines()[-1]
        assert last == (
            "codesign: error: 3 of 27 rows excluded (2 a mesh the model cannot split, "
            "1 batch latency faster than the efficiency-1 bound); the profile, fitted on "
            f"the other 24, is written to {out}"
        )
        assert out.is_file()
        out.unlink()
    assert json.loads(stdout)["excluded_by_kind"] == {
        "a mesh the model cannot split": 2,
        "batch latency faster than the efficiency-1 bound": 1,
    }


# -- hardware files: every number has an upper end too ---------------------------------

MINIMAL_HW = (
    "name: t\nsource: test\npeak_tflops: {bf16: 100}\n"
    "memory: [{name: m, bandwidth_gb_per_s: 100, capacity_gb: 8}]\n"
)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "{bf16: 100}",
            "{bf16: 1e7}",
            "peak_tflops.bf16 must be a number of TFLOP/s in (0, 1e+06]",
        ),
        (
            "bandwidth_gb_per_s: 100",
            "bandwidth_gb_per_s: 1e9",
            "memory[0].bandwidth_gb_per_s must be a number of GB/s in (0, 1e+08]",
        ),
        ("capacity_gb: 8", "capacity_gb: 1e7", "memory[0].capacity_gb must be a number of GB in"),
        ("source: test\n", "source: test\npower_w: 2e6\n", "power_w must be a number of W in"),
        ("source: test\n", "source: test\nprice_usd: 1e10\n", "price_usd must be a number of USD"),
        (
            "source: test\n",
            "source: test\nkernel_overhead_us: 1e7\n",
            "kernel_overhead_us must be a number of us in [0, 1e+06]",
        ),
        (
            "source: test\n",
            "source: test\ninterconnect: {link_bandwidth_gb_per_s: 1e7, link_latency_us: 1}\n",
            "interconnect.link_bandwidth_gb_per_s must be a number of GB/s in (0, 1e+06]",
        ),
        (
            "source: test\n",
            "source: test\ninterconnect: {link_bandwidth_gb_per_s: 100, link_latency_us: 1, "
            "devices_per_node: 1000000}\n",
            "interconnect.devices_per_node must be an integer in [1, 65536]",
        ),
        (
            "source: test\n",
            "source: test\nhost: {capacity_gb: 1e9, link_bandwidth_gb_per_s: 63}\n",
            "host.capacity_gb must be a number of GB in (0, 1e+06]",
        ),
        (
            "source: test\n",
            "source: test\npower_model: {idle_w: 50, pj_per_flop: 1e9, pj_per_byte: 1, "
            "source: s}\n",
            "power_model.pj_per_flop must be a number of pJ in [0, 1e+06]",
        ),
    ],
)
def test_hardware_numbers_above_their_plausible_range_are_refused(tmp_path, old, new, message):
    path = tmp_path / "hw.yaml"
    path.write_text(MINIMAL_HW.replace(old, new, 1))
    code, _, err = run_cli("hw", "show", str(path))
    assert code == 2 and err.count("\n") == 1, err
    assert f"{path}: " in err and message in err


def test_every_shipped_hardware_preset_lies_inside_the_hardware_bounds():
    # Loading checks every number; the range must also leave head-room (x10) above the
    # largest shipped value, so a next-generation device is not refused.
    for name in list_platforms():
        platform = load_platform(name)
        memory = platform.main_memory
        assert (
            memory.bandwidth_bytes_per_s * 10
            <= HARDWARE_BOUNDS["memory.bandwidth_gb_per_s"].high * 1e9
        )
        assert (
            max(platform.peak_flops_per_s.values()) * 10
            <= HARDWARE_BOUNDS["peak_tflops"].high * 1e12
        )


# -- every numeric flag of every command has an entry ----------------------------------

#: Flags #23 / #24 added; each has an entry of its own command.
NEW_FLAGS = [
    ("serve", "--num-requests", "0"),
    ("serve", "--max-concurrency", "0"),
    ("serve", "--kv-tokens", "0"),
    ("serve", "--kv-blocks", "0"),
    ("serve", "--kv-free-fraction", "0"),
    ("serve", "--request-overhead-ms", "-1"),
    ("serve", "--chunk-overhead-ms", "1e9"),
    ("serve", "--slo-itl-p99-ms", "0"),
    ("serve", "--slo-queue-p99-s", "-1"),
    ("predict", "--lora-rank", "0"),
    ("predict", "--lora-adapters", "0"),
    ("predict", "--gpu-layers", "2000"),
    ("search", "--max-device-cost-usd", "0"),
    ("search", "--max-area-mm2", "-1"),
    ("recommend", "--max-tdp-w", "0"),
    ("recommend", "--max-usd-per-mtok", "0"),
    ("app", "--max-upload-mb", "0"),
    ("hw design", "--bandwidth-gb-per-s", "0"),
    ("hw design", "--gbps-per-pin", "0"),
    ("hw design", "--sram-mb", "-1"),
    ("hw design", "--clock-ghz", "0"),
    ("hw design", "--vector-tflops", "-1"),
    ("hw design", "--dies", "0"),
    ("hw design", "--lifetime-years", "-1"),
    ("hw design", "--electricity-usd-per-kwh", "-1"),
]
BASE_ARGS = {
    "serve": ["--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--duration", "3"],
    "predict": ["--model", "llama-3.1-8b", "--hw", "h100-sxm"],
    "search": ["--space", "examples/edge_quickstart.yaml"],
    "recommend": ["--space", "examples/edge_quickstart.yaml", "--out-dir", "unused"],
    "app": [],
    "hw design": ["--compute-tflops", "500", "--memory", "hbm3e:6"],
    "quantize": ["--model", "llama-3.1-8b", "--hw", "h100-sxm"],
}


def _numeric_flags() -> list[tuple[str, str, str]]:
    """``(command, flag, dest)`` of every int or float option (the flag `check_flags`
    checks it under: its first long name)."""
    from app.cli import build_parser
    from app.cli.flag_checks import command_parsers

    return [
        (name, action.option_strings[0], action.dest)
        for name, sub in command_parsers(build_parser())
        for action in sub._actions
        if action.type in (int, float) and action.option_strings
    ]


def test_every_numeric_flag_of_every_command_has_a_bound():
    # A scenario axis (or an alias storing into one, requirements --concurrency) is
    # bounded by genz.axes.
    axes = {
        axis.dest for axis in [*AXES.values(), *SCALE_AXES.values(), *ARCHITECTURE_AXES.values()]
    }
    missing = [
        (command, flag)
        for command, flag, dest in _numeric_flags()
        if dest not in axes and flag_bound(command, flag) is None
    ]
    assert not missing, missing


@pytest.mark.parametrize(("command", "flag", "value"), NEW_FLAGS)
def test_the_new_flags_have_their_own_entry_and_its_message(command, flag, value):
    bound = FLAG_BOUNDS_BY_COMMAND[(command, flag)]
    code, _, err = run_cli(*command.split(), *BASE_ARGS[command], flag, value)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"codesign: error: {flag} must be {bound.requirement}, got "), err


def test_every_codesign_budget_has_an_entry_in_search_and_recommend():
    from app.cli.codesign import CONSTRAINT_FIELDS

    for command in ("search", "recommend"):
        for _, _, label, _, _ in CONSTRAINT_FIELDS.values():
            assert flag_bound(command, f"--{label}") is not None, (command, label)


# -- the sweep of every flag (issue #25's own, re-done): what it found -----------------

LONG_NAME = "x" * 300  # over the file system's 255-byte limit of one name


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["predict", "--model", LONG_NAME, "--hw", "h100-sxm"], "model"),
        (["predict", "--model", "llama-3.1-8b", "--hw", LONG_NAME], "hardware"),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--runtime", LONG_NAME],
            "runtime",
        ),
        (
            ["speculate", "--model", "llama-3.1-8b", "--draft", LONG_NAME, "--hw", "h100-sxm"],
            "model",
        ),
    ],
)
def test_a_preset_name_no_file_can_have_is_an_unknown_name_echoed_short(argv, kind):
    # Was OSError: [Errno 36] File name too long.
    code, _, err = run_cli(*argv)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"codesign: error: unknown {kind} '{'x' * 80}...'; accepted: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--bits-file", "a\x00b"],
        ["predict", "--scenarios", "runs\x00.csv"],
        [
            "serve",
            "--model",
            "llama-3.1-8b",
            "--hw",
            "h100-sxm",
            "--trace",
            "\x00",
        ],
        ["hw", "design", *BASE_ARGS["hw design"], "--out", "p\x00.yaml"],
    ],
)
def test_a_nul_character_in_a_flag_is_refused_by_name(argv):
    # Was ValueError: embedded null byte.
    code, _, err = run_cli(*argv)
    flag = next(word for word in reversed(argv) if word.startswith("--"))
    assert code == 2 and err == f"codesign: error: {flag} must not contain a NUL character\n"


def test_a_flag_value_longer_than_any_path_is_refused():
    code, _, err = run_cli("predict", "--model", "y" * 5000, "--hw", "h100-sxm")
    assert (
        code == 2 and err == "codesign: error: --model must be at most 4096 characters, got 5000\n"
    )


@pytest.mark.parametrize("command", ["serve", "hw design"])
def test_an_output_name_over_the_file_systems_limit_is_one_line(command):
    # Was OSError: [Errno 36] File name too long (serve: only after the simulation).
    code, _, err = run_cli(*command.split(), *BASE_ARGS[command], "--out", LONG_NAME + ".yaml")
    assert code == 2 and err == "codesign: error: --out: cannot write there: File name too long\n"


@pytest.mark.parametrize("flags", [["--batch", "8"], ["--wbits", "nan"], ["--use-case", "chat"]])
def test_hw_design_scenario_flags_need_a_model(flags):
    # Were ignored without --model (even --wbits nan): a silent accept.
    code, _, err = run_cli("hw", "design", *BASE_ARGS["hw design"], *flags)
    assert code == 2
    assert (
        err == f"codesign: error: {flags[0]} goes with --model (the scenario of its prediction)\n"
    )
    code, _, err = run_cli(
        "hw", "design", *BASE_ARGS["hw design"], "--model", "llama-3.1-8b", *flags
    )
    assert code == (2 if flags[1] == "nan" else 0), err


@pytest.mark.parametrize("flag", ["--max-device-cost-usd", "--max-area-mm2"])
def test_a_budget_no_design_has_a_figure_for_says_so_not_nan(flag):
    # The edge space's presets carry no price or area: was "(best achievable while
    # meeting the others: nan USD)".
    code, _, err = run_cli("search", *BASE_ARGS["search"], "--no-progress", flag, "1e5")
    assert code == 2 and err.count("\n") == 1 and "nan" not in err.lower(), err
    assert "no design meeting the others has a value for it" in err


@pytest.mark.parametrize("flags", [["--batch", "8"], ["--lora-rank", "4"], ["--bw-scale", "2"]])
def test_predict_scenarios_refuses_flags_it_would_ignore(tmp_path, flags):
    # Were ignored: every row ran at batch 1, without adapters, at the preset's bandwidth.
    path = tmp_path / "rows.csv"
    path.write_text("model,hw,batch,input_tokens,output_tokens\nllama-3.1-8b,h100-sxm,1,100,10\n")
    code, _, err = run_cli("predict", "--scenarios", str(path), *flags)
    assert code == 2 and err.startswith(
        f"codesign: error: {flags[0]} does not apply with --scenarios (each row is its own "
    )
    assert run_cli("predict", "--scenarios", str(path), "--runtime", "vllm", "--json")[0] == 0


@pytest.mark.parametrize("flags", [["--lora-adapters", "4"], ["--lora-targets", "ffn"]])
def test_lora_flags_need_a_rank(flags):
    # Were ignored without --lora-rank.
    code, _, err = run_cli("predict", *BASE_ARGS["predict"], *flags)
    assert code == 2
    assert err == f"codesign: error: {flags[0]} goes with --lora-rank (the adapters' rank)\n"
    assert run_cli("predict", *BASE_ARGS["predict"], "--lora-rank", "8", *flags)[0] == 0


def test_calibrate_on_a_header_only_file_says_so(tmp_path):
    # Was "no measured row of runtime 'vllm' (file has: )".
    path = tmp_path / "runs.csv"
    write_measurements([], path)
    code, _, err = _calibrate(str(path), str(tmp_path / "p.yaml"))
    assert code == 2
    assert err == f"codesign: error: {path}: no rows after the header; nothing to fit\n"
