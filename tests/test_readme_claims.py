"""README's Commands table and the full one in docs/cli.md ("One question, one command"),
re-checked (issue #25): every command in them parses as written and with ``--json``, the
quick ones run to a finite JSON answer, and bad input to any of them exits 2 with one line."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from fuzzing import check_answer, run_case

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: The command reference's "One question, one command" table, README's table in full.
CLI_DOCS = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def _table_commands(text: str) -> list[list[str]]:
    """The argv of every ``| question | `codesign ...` |`` row of ``text``."""
    found = re.findall(r"^\|[^|]*\| `codesign ([^`]*)`", text, re.MULTILINE)
    return [shlex.split(f"codesign {command}")[1:] for command in found]


README_COMMANDS = _table_commands(README)
COMMANDS = README_COMMANDS + [
    argv for argv in _table_commands(CLI_DOCS) if argv not in README_COMMANDS
]
#: Commands that finish in well under a second: run to the end with --json.
QUICK = {"hw", "roofline", "models", "predict", "speculate", "disagg", "oicf"}
#: Options naming a preset or a file: a made-up value must be one error line.
NAMED = ("--model", "--hw", "--data", "--space", "--law", "--measurements", "--prefill-hw")


def _id(argv: list[str]) -> str:
    return " ".join(argv[:2])


def test_the_table_lists_every_command():
    from app.cli.commands import COMMANDS as REGISTERED

    assert {argv[0] for argv in README_COMMANDS} == set(REGISTERED)
    assert all(argv in _table_commands(CLI_DOCS) for argv in README_COMMANDS)  # the full one


@pytest.mark.parametrize("argv", [a for a in COMMANDS if a[0] != "app"], ids=_id)
def test_every_command_takes_json(argv):
    from app.cli import build_parser, command_of

    parsed = build_parser(command_of(argv)).parse_args([*argv, "--json"])
    assert parsed.json is True


#: Files that an earlier row of the table writes (quantize --out bits.yaml, fit --out law.json).
WRITTEN = ("bits.yaml", "law.json")


@pytest.mark.parametrize(
    "argv", [a for a in COMMANDS if a[0] in QUICK and not set(a) & set(WRITTEN)], ids=_id
)
def test_quick_commands_run_as_written(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run_case([*argv, "--json"])
    assert code == 0, err
    check_answer(code, out, err)
    assert json.loads(out)


@pytest.mark.parametrize("argv", COMMANDS, ids=_id)
def test_bad_input_is_one_line_exit_2(argv, monkeypatch):
    monkeypatch.chdir(ROOT)
    check_answer(*run_case([*argv, "--no-such-flag"]))
    named = [i for i, word in enumerate(argv) if word in NAMED]
    if named:
        bad = list(argv)
        bad[named[0] + 1] = "no-such-thing"
        code, out, err = run_case(bad)
        assert code == 2, err
        check_answer(code, out, err)
