"""What ``codesign`` imports to start, and the pandas-free table that keeps predict light.

Timings live in benchmarks/startup.py; these tests check the cause of a slow start
(which modules load), which does not depend on the machine's load.
"""

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import calibration
import genz
import roofline
from app.cli import build_parser, main
from app.cli.predict import OPERATOR_COLUMNS, OPERATOR_DECIMALS, heaviest_operator_rows
from app.formatting import text_table
from genz import Scenario, load_model, predict
from roofline import load_platform

#: Heavy packages; of search/ only the light `search.economics` (energy and cost per token)
#: may load for predict.
HEAVY = (
    "numpy",
    "pandas",
    "scipy",
    "pulp",
    "plotly",
    "streamlit",
    "search.bits",
    "search.codesign",
    "search.serving",
    "search.sizing",
    "scaling_law",
)


def loaded_after(code: str) -> list[str]:
    """Top-level packages from ``HEAVY`` in ``sys.modules`` after running ``code``."""
    probe = f"import sys\n{code}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    last_line = result.stdout.rstrip("\n").rsplit("\n", 1)[-1]
    return [name for name in last_line.split(",") if name]


def test_importing_the_cli_and_building_the_help_parser_loads_nothing_heavy():
    code = "from app.cli import build_parser\nbuild_parser(set()).format_help()"
    assert loaded_after(code) == []


def test_predict_runs_without_pandas_scipy_pulp_or_the_search_stack():
    code = (
        "from app.cli import main\n"
        "assert main(['predict', '--model', 'llama-3.1-8b', '--hw', 'h100-sxm']) == 0"
    )
    assert loaded_after(code) == ["numpy"]


def test_the_light_parser_lists_the_same_commands_as_the_full_one():
    assert build_parser(set()).format_help() == build_parser().format_help()


def command_help(parser, command, capsys):
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("command", ["predict", "roofline", "oicf", "loss", "recommend"])
def test_a_command_parsed_alone_has_the_same_options_as_in_the_full_parser(command, capsys):
    alone = command_help(build_parser({command}), command, capsys)
    assert alone == command_help(build_parser(), command, capsys)
    assert "--help" in alone


def test_unknown_command_is_still_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["predcit"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'predcit'" in capsys.readouterr().err


@pytest.mark.parametrize("face", [genz, calibration, roofline])
def test_every_public_name_of_a_lazy_face_resolves(face):
    for name in face.__all__:
        assert getattr(face, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        face.not_a_name  # noqa: B018
    assert set(face.__all__) <= set(dir(face))


def test_a_function_named_like_its_package_stays_the_function():
    import search.economics

    assert search.economics.economics is sys.modules["search.economics.costs"].economics


FRAMES = {
    "mixed types": pd.DataFrame(
        {
            "a": ["x", "yy"],
            "b": [1.5, -22.25],
            "c": [1, 2],
            "d": [math.inf, 0.0],
            "e": [True, False],
        }
    ),
    "trailing zeros trimmed equally": pd.DataFrame({"x": [1.0, 2.5, 3.25]}),
    "long fixed form stays fixed": pd.DataFrame({"x": [1234567.1234, 1.0]}),
    "too wide and large: scientific": pd.DataFrame({"x": [1234567.12345, 1.0]}),
    "negative too wide: scientific": pd.DataFrame({"x": [-1234567.1234, 1.0]}),
    "below 1e-6: scientific": pd.DataFrame({"x": [5e-7, 1.0]}),
    "nan": pd.DataFrame({"x": [math.nan, 1.0], "name": ["p", "q"]}),
    "header wider than cells": pd.DataFrame({"operational_intensity": [1.0, 796.44]}),
}


@pytest.mark.parametrize("frame", FRAMES.values(), ids=FRAMES.keys())
def test_text_table_lays_out_rows_as_pandas_does(frame):
    rows = frame.to_dict(orient="records")
    assert text_table(rows, list(frame.columns)) == frame.to_string(index=False)


def pandas_operator_table(prediction, all_ops):
    """The table as ``codesign predict`` built it with pandas before it went pandas-free."""
    frame = prediction.to_frame()
    frame["time_ms"] = frame["time_s"] * 1e3
    frame["share"] = frame["time_s"] / frame.groupby("phase")["time_s"].transform("sum")
    frame["GFLOP"] = frame["flop"] / 1e9
    frame["MB"] = frame["bytes"] / 1e6
    frame = frame.sort_values(["phase", "time_s"], ascending=[False, False])
    if not all_ops:
        frame = frame.groupby("phase", sort=False).head(6)
    return frame[list(OPERATOR_COLUMNS)].round(OPERATOR_DECIMALS).to_string(index=False)


@pytest.mark.parametrize(
    ("model", "hw", "scenario", "all_ops"),
    [
        ("llama-3.1-8b", "h100-sxm", Scenario(), False),
        ("llama-3.1-405b", "jetson-orin-nano-8gb", Scenario(batch=64, input_tokens=100_000), True),
        ("mixtral-8x7b", "rtx-4090", Scenario(prefill_chunk=256), True),
        ("deepseek-v3", "h100-sxm", Scenario(batch=32), False),
    ],
)
def test_predict_operator_table_matches_the_pandas_pipeline(model, hw, scenario, all_ops):
    prediction = predict(load_model(model), load_platform(hw), scenario)
    rows = heaviest_operator_rows(prediction, all_ops)
    assert text_table(rows, OPERATOR_COLUMNS) == pandas_operator_table(prediction, all_ops)
    shares = {}
    for row in rows:
        shares[row["phase"]] = shares.get(row["phase"], 0.0) + row["share"]
    if all_ops:  # every operator shown: the shares of a phase add up to one
        assert np.allclose(list(shares.values()), 1.0, atol=0.01)
