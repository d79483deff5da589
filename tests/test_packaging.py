"""The package list in pyproject.toml covers every package folder, and data ships with it."""

import tomllib
from pathlib import Path

from roofline import data_dir

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("app", "calibration", "genz", "roofline", "scaling_law", "search")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found | {"codesign_data"} == listed


def test_shipped_data_is_found_through_the_codesign_data_package():
    assert (data_dir() / "hardware" / "h100-sxm.yaml").is_file()
    assert (data_dir() / "models" / "llama-3.1-8b.json").is_file()
