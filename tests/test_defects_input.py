"""Hostile or mistaken input files: one-line errors, never a traceback or a hang (issue #11).

A 2 kB file of 1,000 nested brackets used to exhaust Python's recursion limit in the
JSON/YAML parsers; a directory or FIFO given as a file was looked up as a preset name
("unknown hardware"); a wrong ``CODESIGN_DATA_DIR`` raised while the CLI built its parser.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.dashboard import codesign_page
from app.dashboard.sidebar import config_upload_json
from genz import (
    Parallelism,
    Scenario,
    capacity_suggestions,
    load_model,
    predict,
    tensor_parallel_degrees,
)
from roofline import (
    MAX_NESTING_DEPTH,
    InputError,
    derive_platform,
    load_platform,
    load_user_document,
    parse_document,
)
from search.sizing.mesh import mesh_candidates

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "data" / "models"
#: 1,000 levels in 2 kB: far past Python's default recursion limit of 1,000 frames.
DEEP = "[" * 1000 + "]" * 1000
DEPTH_MESSAGE = f"nested deeper than {MAX_NESTING_DEPTH} levels"


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert "\n" not in err and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("argv", "suffix"),
    [
        (["predict", "--model", "{file}", "--hw", "h100-sxm"], ".json"),
        (["predict", "--model", "llama-3.1-8b", "--hw", "{file}"], ".yaml"),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--bits-file", "{file}"],
            ".yaml",
        ),
        (
            ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--bits-file", "{file}"],
            ".json",
        ),
        (["search", "--space", "{file}"], ".yaml"),
        (["loss", "--law", "{file}", "--params", "1e9", "--tokens", "2e10"], ".json"),
    ],
)
def test_deeply_nested_file_is_a_one_line_error_for_every_file_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], suffix: str
) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text(DEEP)
    assert path.stat().st_size == 2000
    err = _one_line_error(capsys, [str(path) if arg == "{file}" else arg for arg in argv])
    assert str(path) in err and DEPTH_MESSAGE in err


def test_block_style_yaml_nesting_is_limited_too(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("".join(f"{' ' * level}k:\n" for level in range(200)))
    with pytest.raises(InputError, match=DEPTH_MESSAGE):
        load_user_document(path, kind="space file", max_bytes=100_000)


def test_nesting_up_to_the_limit_parses_and_brackets_in_strings_do_not_count() -> None:
    at_limit = "[" * MAX_NESTING_DEPTH + "]" * MAX_NESTING_DEPTH
    value = parse_document(at_limit, "x.json", fmt="json")
    for _ in range(MAX_NESTING_DEPTH - 1):
        value = value[0]
    assert value == []
    assert parse_document(at_limit, "x.yaml", fmt="yaml") == parse_document(
        at_limit, "x.json", fmt="json"
    )
    text = json.dumps({"note": "[" * 500, "escaped": '\\"[[[['})
    assert parse_document(text, "x.json", fmt="json")["note"] == "[" * 500
    with pytest.raises(InputError, match=DEPTH_MESSAGE):
        parse_document(
            "[" * (MAX_NESTING_DEPTH + 1) + "]" * (MAX_NESTING_DEPTH + 1), "x", fmt="json"
        )


def test_dashboard_config_upload_goes_through_the_safe_reader() -> None:
    with pytest.raises(InputError, match=f"deep.json: lists/mappings {DEPTH_MESSAGE}"):
        config_upload_json("deep.json", DEEP.encode())
    with pytest.raises(InputError, match="not UTF-8"):
        config_upload_json("bin.json", b"\xff\xfe{}")
    real = (MODELS / "qwen2.5-0.5b.json").read_bytes()
    assert json.loads(config_upload_json("config.json", real)) == json.loads(real)


def test_dashboard_space_upload_goes_through_the_safe_reader() -> None:
    with pytest.raises(InputError, match=f"space.yaml: lists/mappings {DEPTH_MESSAGE}"):
        codesign_page._space(DEEP, codesign_page.UPLOADED_NAME)


def test_directory_given_as_a_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line_error(capsys, ["predict", "--model", f"{tmp_path}/", "--hw", "h100-sxm"])
    assert f"{tmp_path}: a directory, not a regular file" in err
    err = _one_line_error(capsys, ["predict", "--model", "llama-3.1-8b", "--hw", str(tmp_path)])
    assert "a directory, not a regular file; not a hardware preset" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_fifo_given_as_a_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # A reader that opened the FIFO would wait for a writer forever: the timeout catches that.
    for argv in (
        ["predict", "--model", "llama-3.1-8b", "--hw", str(fifo)],
        ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--bits-file", str(fifo)],
    ):
        run = _cli(argv, timeout=60)
        assert run.returncode == 2, run.stderr
        assert f"{fifo}: a FIFO, socket or device, not a regular file" in run.stderr
        assert "unknown hardware" not in run.stderr and "Traceback" not in run.stderr


def test_wrong_data_dir_is_a_one_line_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    # ``codesign --help`` lists the commands without reading the data folder
    run = _cli(["--help"], timeout=120, data_dir=str(missing))
    assert run.returncode == 0 and run.stderr == "" and "predict" in run.stdout
    for argv in (
        ["predict", "--help"],
        ["hw", "list"],
        ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm"],
    ):
        run = _cli(argv, timeout=120, data_dir=str(missing))
        assert run.returncode == 2, run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in run.stderr
        assert (
            lines[0].startswith("codesign: error: CODESIGN_DATA_DIR=") and str(missing) in lines[0]
        )


def _cli(
    argv: list[str], *, timeout: float, data_dir: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CODESIGN_DATA_DIR": data_dir or str(ROOT / "data"),
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
        check=False,
    )


def test_tp_that_splits_heads_into_fractions_is_refused_naming_the_head_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _one_line_error(
        capsys, ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--tp", "3"]
    )
    assert "tp = 3" in err and "32 attention heads" in err and "8 KV heads" in err
    # The divisors of 32; each divides 8 or is a multiple of 8.
    assert err.endswith("accepted: 1, 2, 4, 8, 16, 32")


def test_tp_degrees_follow_vllm_divisibility_and_kv_head_replication() -> None:
    # Qwen2.5-7B: 28 query heads, 4 KV heads. 7 and 14 divide 28 but neither divides 4
    # nor is a multiple of it (vLLM refuses them); 28 replicates each KV head 7 times.
    assert tensor_parallel_degrees(load_model("qwen2.5-7b")) == (1, 2, 4, 28)
    # MLA: the latent KV is not split by heads, so every divisor of 128 heads works.
    assert tensor_parallel_degrees(load_model("deepseek-v3")) == (1, 2, 4, 8, 16, 32, 64, 128)
    # Past the KV heads each device keeps one whole KV head: tp=16 holds what tp=8 holds,
    # 1 sequence x 1152 tokens x 32 layers x (K+V) x 1 head x 128 dims x 2 bytes.
    model, h100 = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    at = {tp: predict(model, h100, Scenario(parallelism=Parallelism(tp=tp))) for tp in (8, 16)}
    assert (
        at[8].footprint.kv_cache_bytes == at[16].footprint.kv_cache_bytes == 1152 * 32 * 2 * 128 * 2
    )


def test_mesh_search_and_capacity_advice_only_use_whole_head_splits() -> None:
    qwen, h100 = load_model("qwen2.5-7b"), load_platform("h100-sxm")
    assert {mesh.tp for mesh in mesh_candidates(qwen, h100, batch=1, max_devices=64)} == {1, 2, 4}
    # 2.4 GB per device: 7.6B parameters x 2 bytes need 8 devices (4 leave 3.8 GB each)
    small = derive_platform(h100, memory_capacity_scale=0.03)
    advice = capacity_suggestions(qwen, small, Scenario())
    found = [re.search(r"tp=(\d+), pp=(\d+)", text) for text in advice]
    tp, pp = next(map(int, match.groups()) for match in found if match)
    assert (tp, pp) == (4, 2)  # tp=8 would give 3.5 query heads and half a KV head each
    mesh = Parallelism(tp=tp, pp=pp)
    assert predict(qwen, small, Scenario(parallelism=mesh)).fits  # the advice holds


def test_layer_bits_beyond_the_model_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bits = tmp_path / "bits.yaml"
    bits.write_text("weight_bits: 4\nlayer_bits: {32: {attn_qkv: 8}}\n")
    argv = ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--bits-file", str(bits)]
    err = _one_line_error(capsys, argv)
    assert "layer_bits names layer 32" in err and "32 layers (indices 0 to 31)" in err
    bits.write_text("weight_bits: 4\nlayer_bits: {31: {attn_qkv: 8}}\n")
    assert main(argv) == 0


REQUIREMENTS = ["requirements", "--model", "llama-3.1-8b", "--base-hw", "h100-sxm"]


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--concurrency", "0"], "--batch/--concurrency"),
        (["--batch", "0"], "--batch/--concurrency"),
        (["--tp", "0"], "--tp"),
        (["--pp", "-1"], "--pp"),
    ],
)
def test_requirements_refuses_zero_concurrency_and_mesh_degrees(
    capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    err = _one_line_error(capsys, [*REQUIREMENTS, "--max-tpot-ms", "50", *flags])
    assert f"{named} must be an integer >= 1, got {flags[1]}" in err


def test_unreachable_throughput_exits_2_like_an_unreachable_latency(
    capsys: pytest.CaptureFixture[str],
) -> None:
    latency = _one_line_error(capsys, [*REQUIREMENTS, "--max-tpot-ms", "0.001"])
    assert "cannot be met by any number or scaling" in latency
    err = _one_line_error(capsys, [*REQUIREMENTS, "--min-throughput", "1e12"])
    assert "min_throughput_tokens_per_s = 1e+12 tok/s cannot be met by 256 x h100-sxm" in err
    # The refusal is only for floors beyond every mesh: one sequence per replica runs
    # ~160 tok/s on one H100 (6.2 ms TPOT), so 2e4 tok/s needs ~128 replicas of 256 allowed.
    assert main([*REQUIREMENTS, "--min-throughput", "2e4", "--method", "devices"]) == 0
    assert "devices: " in capsys.readouterr().out
