"""An unknown runtime name is one line with the closest shipped names, wherever typed."""

import pytest

from app.cli import main
from calibration import MEASUREMENT_RUNTIMES
from genz import list_runtimes

HINT = "unknown runtime 'vlm' (did you mean 'vllm'?); accepted: "
PROFILES = ", ".join(list_runtimes()) + ", or a .yaml file"
BENCH = "data/validation/llm_inference_bench/normalized.csv"


@pytest.mark.parametrize(
    "argv",
    [
        ["predict", "--model", "llama-3-8b", "--hw", "h100-sxm", "--runtime", "vlm"],
        ["serve", "--model", "llama-3-8b", "--hw", "h100-sxm", "--runtime", "vlm", "--rate", "1"],
    ],
)
def test_profile_flag_suggests_the_closest_name(capsys, argv):
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"codesign: error: {HINT}{PROFILES}"


def test_calibrate_lists_the_measurement_runtimes(capsys, tmp_path):
    argv = ["calibrate", "--measurements", BENCH, "--runtime", "vlm", "--out"]
    assert main([*argv, str(tmp_path / "p.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"codesign: error: {HINT}{', '.join(MEASUREMENT_RUNTIMES)}"
    assert not (tmp_path / "p.yaml").exists()


@pytest.mark.parametrize("command", ["search", "recommend"])
def test_space_file_runtime_names_its_key(capsys, tmp_path, command):
    path = tmp_path / "space.yaml"
    path.write_text("hardware: {presets: [h100-sxm], runtime: vlm}\n")
    assert main([command, "--space", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"codesign: error: hardware.runtime: {HINT}{PROFILES}"


def test_a_name_far_from_every_runtime_gets_no_guess(capsys):
    argv = ["predict", "--model", "llama-3-8b", "--hw", "h100-sxm", "--runtime", "zzzz"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        f"codesign: error: unknown runtime 'zzzz'; accepted: {PROFILES}"
    )
