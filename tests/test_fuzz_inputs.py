"""Fuzzing every user file and flag (issue #25): valid, near-valid and hostile inputs.

For every kind of file a command reads (config.json, hardware YAML, bits, scenario,
measurement and trace CSVs, space YAML, law JSON) and the numeric flags of ``serve``
and ``predict``, hypothesis draws cases and `fuzzing.check_answer` holds each answer to
the contract: exit 0 with finite numbers, or exit 1/2 with one ``codesign: error:``
line; never a traceback, never a hang (`fuzzing.CASE_LIMIT_S` per case). The case
counts keep this file within the test-time budget; ``python benchmarks/fuzz.py
--cases 100000`` runs the same strategies at length and prints its counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzzing import FLAGS, KINDS, MEASUREMENT_FILES, check_answer, file_case, flag_case
from hypothesis import HealthCheck, given, settings

from calibration import load_measurements
from roofline import InputError

#: Cases per kind: the slow commands (search, serve) get fewer.
CASES = {"space": 6, "trace": 10, "scenario": 12, "measurement": 10}
FUZZ = settings(
    deadline=None,  # the hard per-case limit is fuzzing.CASE_LIMIT_S (load varies)
    database=None,
    derandomize=True,  # the same cases every run: a failure here reproduces
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_file_kind_gets_a_clear_answer(kind: str, tmp_path: Path) -> None:
    strategy, _, _, batch = KINDS[kind]

    @settings(FUZZ, max_examples=CASES.get(kind, 20))
    @given(content=strategy)
    def case(content: bytes) -> None:
        check_answer(*file_case(kind, content, tmp_path), batch=batch)

    case()


@settings(FUZZ, max_examples=30)
@given(content=MEASUREMENT_FILES)
def test_the_measurement_reader_returns_rows_or_one_line(content: bytes, tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("m") / "runs.csv"
    path.write_bytes(content)
    try:
        rows = load_measurements(path)
    except InputError as error:
        assert "\n" not in str(error)
    else:
        assert all(row.batch >= 1 for row in rows)


@settings(FUZZ, max_examples=30)
@given(flag=FLAGS)
def test_every_numeric_flag_gets_a_clear_answer(
    flag: tuple[str, str, str], tmp_path_factory
) -> None:
    command, name, value = flag
    check_answer(*flag_case(command, name, value, tmp_path_factory.mktemp("f")))


def test_the_contract_catches_what_it_should() -> None:
    with pytest.raises(AssertionError):
        check_answer(0, '{"a": NaN}', "")
    with pytest.raises(AssertionError):
        check_answer(0, "TTFT nan ms", "")
    with pytest.raises(AssertionError):
        check_answer(1, "", "codesign: error: x\n")  # 1 only from a batch mode
    with pytest.raises(AssertionError):
        check_answer(2, "", "codesign: error: a\ncodesign: error: b\n")
    with pytest.raises(AssertionError):
        check_answer(2, "", "Traceback (most recent call last):\nValueError\n")
    check_answer(
        2, "", "codesign: error: --input must be a number of tokens in [1, 1e+06], got 0\n"
    )
    check_answer(1, "", "codesign: f:2: bad\ncodesign: error: f: 1 of 2 rows failed\n", batch=True)
