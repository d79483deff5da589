"""The hw and roofline commands: output, JSON and one-line errors with exit code 2."""

import json

import pytest

from app.cli import main


def test_hw_list_lists_presets(capsys):
    assert main(["hw", "list"]) == 0
    assert "h100-sxm" in capsys.readouterr().out


def test_hw_show_json_scales_bandwidth(capsys):
    assert main(["hw", "show", "h100-sxm", "--bw-scale", "2", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["memory"][0]["bandwidth_bytes_per_s"] == pytest.approx(6.7e12)


def test_roofline_json(capsys):
    assert (
        main(["roofline", "--hw", "a100-sxm-80gb", "--flop", "1e12", "--bytes", "1e9", "--json"])
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["bound"] == "compute"
    assert payload["time_s"] == pytest.approx(1e12 / (312e12 * 0.7) + 2e-6)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["hw", "show", "nope"], "unknown hardware 'nope'"),
        (["roofline", "--hw", "h100-sxm", "--flop", "-1", "--bytes", "1"], "--flop must be"),
        (
            ["roofline", "--hw", "h100-sxm", "--flop", "1", "--bytes", "1", "--bw-scale", "0"],
            "scale",
        ),
        (["roofline", "--hw", "h100-sxm", "--flop", "x", "--bytes", "1"], "invalid float value"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, fragment):
    with pytest.raises(SystemExit) as info:
        raise SystemExit(main(argv))
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err
    assert len(err.splitlines()) == 1
