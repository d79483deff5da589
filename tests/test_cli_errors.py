"""Bad values are reported by the flag the user typed, in the unit the user typed."""

import pytest

from app.cli import flag_named, main

MODEL_HW = ["--model", "llama-3.1-8b", "--hw", "h100-sxm"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            [
                "disagg",
                "--model",
                "llama-3.1-8b",
                "--prefill-hw",
                "h100-sxm",
                "--decode-hw",
                "l4",
                "--link-gb-per-s",
                "-5",
            ],
            "--link-gb-per-s must be a number of GB/s in (0, 1e+06], got -5.0",
        ),
        (
            [
                "requirements",
                "--model",
                "llama-3.1-8b",
                "--base-hw",
                "h100-sxm",
                "--concurrency",
                "0",
                "--max-tpot-ms",
                "50",
            ],
            "--batch/--concurrency must be an integer >= 1, got 0",
        ),
        (
            [
                "requirements",
                "--model",
                "llama-3.1-8b",
                "--base-hw",
                "h100-sxm",
                "--tp",
                "0",
                "--max-tpot-ms",
                "50",
            ],
            "--tp must be an integer >= 1, got 0",
        ),
        (
            ["quantize", *MODEL_HW, "--output", "0", "--max-memory-gb", "10"],
            "--output must be an integer in [1, 100000000], got 0",
        ),
        (
            ["speculate", "--draft", "qwen2.5-0.5b", *MODEL_HW, "--kvbits", "64"],
            "--kvbits must be a number of bits in [1, 32], got 64.0",
        ),
        (
            ["hw", "show", "h100-sxm", "--capacity-scale", "0"],
            "--capacity-scale must be a number in [0.001, 1000], got 0.0",
        ),
        (
            [
                "requirements",
                "--model",
                "llama-3.1-8b",
                "--base-hw",
                "h100-sxm",
                "--max-tpot-ms",
                "50",
                "--power-fraction",
                "2",
            ],
            "--power-fraction must be in (0, 1], got 2.0",
        ),
        (
            ["oicf", "--hw", "h100-sxm", "--batch=0"],
            "--batch must be an integer in [1, 65536], got 0",
        ),
        (
            ["speculate", "--draft", "qwen2.5-0.5b", *MODEL_HW, "--k", "0"],
            "--k must be an integer in [1, 64], got 0",
        ),
        (
            ["speculate", "--draft", "qwen2.5-0.5b", *MODEL_HW, "--acceptance", "1.5"],
            "--acceptance must be in [0, 1), got 1.5",
        ),
        (
            ["predict", *MODEL_HW, "--use-case", "chatt"],
            "unknown use case 'chatt' (did you mean 'chat'?); accepted: chat, coding-agent",
        ),
        (
            ["search", "--space", "examples/orin_space.yaml", "--max-tpot-ms", "-1"],
            "--max-tpot-ms must be a number of ms in (0, 1e+10], got -1.0",
        ),
    ],
)
def test_error_names_the_flag(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"codesign: error: {message}" or err.startswith(f"codesign: error: {message}")
    assert len(err.splitlines()) == 1


def test_hardware_file_error_names_the_file_and_its_unit(tmp_path, capsys):
    path = tmp_path / "slow.yaml"
    path.write_text(
        "name: slow\nsource: test\npeak_tflops: {bf16: -5}\n"
        "memory: [{name: m, bandwidth_gb_per_s: 100, capacity_gb: 8}]\n"
    )
    assert main(["predict", "--model", "llama-3.1-8b", "--hw", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"codesign: error: {path}: peak_tflops.bf16 must be a number of TFLOP/s in (0, 1e+06], "
        "got -5"
    )


def test_space_file_constraint_error_echoes_the_files_unit(tmp_path, capsys):
    path = tmp_path / "space.yaml"
    path.write_text("hardware: {presets: [h100-sxm]}\nconstraints: {max_tpot_ms: -20}\n")
    assert main(["search", "--space", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"codesign: error: {path}: constraints.max_tpot_ms must be a finite number > 0, got -20"
    )


@pytest.mark.parametrize(
    ("message", "arguments", "expected"),
    [
        ("max_scale must be in (1, 1e5], got 0.5", ["--max-scale", "0.5"], "--max-scale must be"),
        # the field was not typed as an option: left as the library wrote it
        ("max_scale must be in (1, 1e5], got 0.5", ["--bw-scale", "2"], "max_scale must be"),
        # not a "<field> must ..." message
        ("unknown hardware 'x'; accepted: a", ["--hw", "x"], "unknown hardware 'x'"),
        ("space.yaml: batch must be in [1, 1e+06]", ["--batch", "0"], "space.yaml: batch"),
    ],
)
def test_flag_named_rewrites_only_a_typed_fields_name(message, arguments, expected):
    assert flag_named(message, arguments).startswith(expected)
