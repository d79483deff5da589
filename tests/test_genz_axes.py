"""The scenario axes table: one set of defaults and ranges behind every front door."""

import dataclasses
import inspect

import pytest

from app.cli import build_parser
from app.cli.platform_args import platform_from_args
from app.cli.scenario_args import SCENARIO_AXES, scenario_from_args
from genz import (
    AXES,
    SCALE_AXES,
    Parallelism,
    Precision,
    Scenario,
    evaluate_grid,
    load_model,
)
from genz.inputs import GridInputs
from roofline import InputError, load_platform
from search.codesign import space_from_dict

#: The documented defaults (README, ``--help``): one request of 1024 prompt tokens
#: generating 128, everything in 16 bits, one device.
DOCUMENTED = {
    "batch": 1,
    "input_tokens": 1024,
    "output_tokens": 128,
    "weight_bits": 16.0,
    "activation_bits": 16.0,
    "kv_bits": 16.0,
    "tp": 1,
    "pp": 1,
    "ep": 1,
    "dp": 1,
}


def cli_scenario(*flags: str) -> Scenario:
    args = build_parser({"predict"}).parse_args(
        ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", *flags]
    )
    return scenario_from_args(args, default_weight_bits=16.0)


def flat(scenario: Scenario) -> dict[str, float]:
    values = {name: getattr(scenario, name) for name in ("batch", "input_tokens", "output_tokens")}
    values.update({n: getattr(scenario.precision, n) for n in ("weight_bits", "activation_bits")})
    values["kv_bits"] = scenario.precision.kv_bits
    values.update(dataclasses.asdict(scenario.parallelism))
    return values


def test_table_holds_the_documented_defaults():
    assert {name: AXES[name].default for name in DOCUMENTED} == DOCUMENTED


def test_scenario_cli_grid_and_space_file_share_the_defaults():
    assert flat(Scenario()) == DOCUMENTED
    assert flat(cli_scenario()) == DOCUMENTED
    grid_defaults = inspect.signature(evaluate_grid).parameters
    assert {name: grid_defaults[name].default for name in DOCUMENTED} == DOCUMENTED
    space = space_from_dict({"hardware": {"presets": ["h100-sxm"]}})
    for name in ("batch", "input_tokens", "output_tokens", "tp", "pp", "ep", "dp"):
        section = space.workload if name in space.workload else space.mesh
        assert section[name] == (DOCUMENTED[name],), name
    for name in ("weight_bits", "activation_bits", "kv_bits"):
        assert getattr(space.precision, name) == (DOCUMENTED[name],), name


def test_dashboard_selection_shares_the_defaults():
    from app.dashboard.state import Selection, build_scenario

    assert flat(build_scenario(Selection())) == DOCUMENTED


def test_library_errors_name_the_field_and_the_range():
    with pytest.raises(
        InputError, match=r"^input_tokens must be an integer in \[1, 100000000\], got 0$"
    ):
        Scenario(input_tokens=0)
    with pytest.raises(
        InputError, match=r"^kv_bits must be a number of bits in \[1, 32\], got 33$"
    ):
        Precision(kv_bits=33)
    with pytest.raises(InputError, match=r"^dp must be an integer in \[1, 4096\], got 4097$"):
        Parallelism(dp=4097)
    with pytest.raises(InputError, match=r"^batch must be an integer in \[1, 1000000\], got 2.0$"):
        Scenario(batch=2.0)  # type: ignore[arg-type]


def beyond(name: str) -> tuple[object, object]:
    """Values just outside the axis' range, below and above."""
    axis = AXES[name]
    if axis.integer:
        return int(axis.low) - 1, int(axis.high) + 1
    return axis.low - 0.5, axis.high + 0.5


def build(name: str, value: object) -> object:
    if name in ("tp", "pp", "ep", "dp"):
        return Parallelism(**{name: value})
    if name in ("weight_bits", "activation_bits", "kv_bits"):
        return Precision(**{name: value})
    return Scenario(**{name: value})


@pytest.mark.parametrize("name", list(AXES))
def test_scenario_accepts_the_bounds_and_refuses_just_beyond(name):
    axis = AXES[name]
    kind = int if axis.integer else float
    for inside in (kind(axis.low), kind(axis.high)):
        build(name, inside)
    for outside in beyond(name):
        with pytest.raises(InputError, match=f"^{name} must be"):
            build(name, outside)


@pytest.mark.parametrize("name", SCENARIO_AXES)
def test_cli_reports_a_bad_value_by_its_flag(name):
    flag = AXES[name].flag
    for outside in beyond(name):
        with pytest.raises(InputError, match=f"^{flag} must be .*, got {outside}"):
            cli_scenario(flag, str(outside))


def test_evaluate_grid_checks_the_same_ranges():
    model, platform = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    with pytest.raises(InputError, match=r"output_tokens must be in \[1, 1e\+08\], got 0"):
        evaluate_grid(model, platform, output_tokens=[128, 0])
    with pytest.raises(InputError, match=r"activation_bits must be in \[1, 32\], got 64"):
        evaluate_grid(model, platform, activation_bits=64)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"workload": {"input_tokens": 0}}, "workload.input_tokens must be in [1, 1e+08]"),
        ({"parallelism": {"tp": 5000}}, "parallelism.tp must be in [1, 4096]"),
        ({"precision": {"kv_bits": 0.5}}, "precision.kv_bits must be in [1, 32]"),
    ],
)
def test_space_file_checks_the_same_ranges(document, message):
    with pytest.raises(InputError) as info:
        space_from_dict({"hardware": {"presets": ["h100-sxm"]}, **document})
    assert message in str(info.value)


def test_grid_inputs_fields_are_axis_names():
    fields = {field.name for field in dataclasses.fields(GridInputs)}
    # chunk: prefill_chunk resolved; sequences_per_request is samples x beams; offload
    # applies after costing (genz.offload).
    combined = {"prefill_chunk", "parallel_samples", "beam_width", "weight_offload", "kv_offload"}
    assert fields - {"chunk", "sequences_per_request"} == set(AXES) - combined


@pytest.mark.parametrize("name", list(SCALE_AXES))
def test_cli_and_space_file_share_the_scale_ranges(name):
    axis = SCALE_AXES[name]
    assert (axis.default, axis.low, axis.high) == (1.0, 1e-3, 1e3)
    args = build_parser({"predict"}).parse_args(
        ["predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", axis.flag, "2000"]
    )
    with pytest.raises(
        InputError, match=f"^{axis.flag} must be a number in \\[0.001, 1000\\], got 2000.0$"
    ):
        platform_from_args(args)
    with pytest.raises(InputError, match=f"hardware.{name} must be in \\[0.001, 1000\\], got 2000"):
        space_from_dict({"hardware": {"presets": ["h100-sxm"], name: 2000}})
    space = space_from_dict({"hardware": {"presets": ["h100-sxm"]}})
    assert getattr(space.hardware, name) == (1.0,)
