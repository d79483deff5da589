"""Every input gets a clear answer (issue #25): one test per failure the issue reported.

Each case failed before the fix: a traceback, a hang, a silent accept, a valid input
refused or a misleading message. Now a command exits 0 with finite numbers, or exits
1/2 with one line naming the flag or the file and field.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from helpers import run_cli

from roofline import (
    CONFIG_BOUNDS,
    FLAG_BOUNDS,
    FLAG_BOUNDS_BY_COMMAND,
    InputError,
    check_flag,
    parse_document,
)

ROOT = Path(__file__).resolve().parents[1]
LLAMA = json.loads((ROOT / "data" / "models" / "llama-3.1-8b.json").read_text())
H100 = (ROOT / "data" / "hardware" / "h100-sxm.yaml").read_text()
MEASURED = ROOT / "data" / "validation" / "llm_inference_bench" / "normalized.csv"
SERVE = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--duration", "3"]
SERVE += ["--no-progress"]
SCENARIO_HEADER = "model,hw,batch,input_tokens,output_tokens\n"


def one_line(code: int, err: str, expected_code: int = 2) -> str:
    """The last stderr line, after checking the exit code and that nothing else leaked."""
    assert code == expected_code, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("codesign: error: "), err
    return lines[-1]


def config_file(tmp_path: Path, **change: object) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, **change}), encoding="utf-8")
    return str(path)


# -- tracebacks ------------------------------------------------------------------------


def test_an_empty_data_folder_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESIGN_DATA_DIR", str(tmp_path))
    line = one_line(*run_cli("models")[::2])
    assert "use_cases.yaml" in line


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"num_attention_heads": 0}, "num_attention_heads"),  # was ZeroDivisionError
        ({"num_hidden_layers": 1e9}, "num_hidden_layers"),  # was ~100 s
        ({"num_key_value_heads": 0}, "num_key_value_heads"),  # was costed as MHA
        ({"head_dim": 0}, "head_dim"),  # was replaced by the default
        ({"hidden_size": 10**12}, "hidden_size"),  # printed 317142857551788224%
        ({"num_local_experts": 0, "num_experts_per_tok": 2}, "num_experts_per_tok"),
    ],
)
def test_config_values_are_bounded_and_name_the_file(tmp_path, change, field):
    path = config_file(tmp_path, **change)
    start = time.perf_counter()
    line = one_line(*run_cli("predict", "--model", path, "--hw", "h100-sxm")[::2])
    assert time.perf_counter() - start < 10
    assert f"{path}: {field}" in line


def test_a_1024_layer_config_predicts_quickly(tmp_path):
    path = config_file(tmp_path, num_hidden_layers=1024)
    start = time.perf_counter()
    code, out, err = run_cli("predict", "--model", path, "--hw", "h100-sxm", "--json")
    assert code == 0, err
    assert time.perf_counter() - start < 10
    assert json.loads(out)["summary"]


def _long_field_csv(tmp_path: Path, header: str, row: str) -> str:
    path = tmp_path / "long.csv"
    path.write_text(header + row.replace("LONG", "1" * 140_000) + "\n", encoding="utf-8")
    return str(path)


def test_a_field_over_the_csv_limit_is_one_line_in_scenarios(tmp_path):
    path = _long_field_csv(tmp_path, SCENARIO_HEADER, "llama-3.1-8b,h100-sxm,1,LONG,128")
    line = one_line(*run_cli("predict", "--scenarios", path)[::2])
    assert "a field longer than 131072 characters" in line and ":2:" in line


def test_a_field_over_the_csv_limit_is_one_line_in_a_trace(tmp_path):
    path = _long_field_csv(tmp_path, "arrival_s,input_tokens,output_tokens\n", "0,LONG,10")
    line = one_line(*run_cli(*SERVE, "--trace", path)[::2])
    assert "a field longer than 131072 characters" in line


def test_calibrate_with_only_unknown_models_says_why(tmp_path):
    lines = MEASURED.read_text().splitlines()
    rows = [line for line in lines[1:] if ",deepspeed-mii," in line][:4]
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([lines[0], *(re.sub("^[^,]+", "nosuchmodel", r) for r in rows)]))
    out = str(tmp_path / "p.yaml")
    line = one_line(
        *run_cli(
            "calibrate", "--measurements", str(path), "--runtime", "deepspeed-mii", "--out", out
        )[::2]
    )
    assert "can be fitted" in line and "unknown model 'nosuchmodel'" in line


def test_serve_seed_and_output_folder_refused_before_work(tmp_path):
    assert "--seed must be an integer in [0, 4294967295]" in one_line(
        *run_cli(*SERVE, "--seed", "-1")[::2]
    )
    start = time.perf_counter()
    line = one_line(*run_cli(*SERVE, "--out", str(tmp_path))[::2])
    assert "--out" in line and "is a directory" in line
    assert time.perf_counter() - start < 5


# -- hangs -----------------------------------------------------------------------------


def test_fit_cv_is_at_most_the_number_of_rows(tmp_path):
    start = time.perf_counter()
    out = str(tmp_path / "law.json")
    argv = ("fit", "--data", "chinchilla", "--cv", "100000", "--bootstrap", "0", "--out", out)
    line = one_line(*run_cli(*argv)[::2])
    assert "--cv must be at most the number of rows used (245)" in line
    assert time.perf_counter() - start < 20


# -- silent accepts --------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ["--input", "0"],
        ["--output", "0"],
        ["--wbits", "0"],
        ["--max-batched-tokens", "0"],
        ["--runtime", ""],
        ["--burst-cv", "1e30"],  # was a numpy ValueError
    ],
)
def test_serve_zero_is_not_unset(flags):
    line = one_line(*run_cli(*SERVE, *flags)[::2])
    assert flags[0] in line


def test_hardware_kind_is_checked(tmp_path):
    path = tmp_path / "hw.yaml"
    path.write_text(H100.replace("kind: gpu", "kind: toaster"), encoding="utf-8")
    line = one_line(*run_cli("predict", "--model", "llama-3.1-8b", "--hw", str(path))[::2])
    assert f"{path}: kind must be one of" in line and "toaster" in line


def test_scenarios_exit_codes_count_failed_rows(tmp_path):
    path = tmp_path / "runs.csv"
    good, bad = "llama-3.1-8b,h100-sxm,1,128,16\n", "llama-3.1-8b,nohw,1,128,16\n"
    path.write_text(SCENARIO_HEADER + good + bad, encoding="utf-8")
    code, out, err = run_cli("predict", "--scenarios", str(path))
    assert code == 1 and "1 of 2 rows failed" in err.splitlines()[-1]
    assert len(out.strip().splitlines()) == 3  # header, the good row, the bad row's error
    path.write_text(SCENARIO_HEADER + bad + bad, encoding="utf-8")
    assert "all 2 rows failed" in one_line(*run_cli("predict", "--scenarios", str(path))[::2])
    path.write_text(SCENARIO_HEADER, encoding="utf-8")
    assert "no rows" in one_line(*run_cli("predict", "--scenarios", str(path))[::2])
    path.write_text(SCENARIO_HEADER + good.strip() + ",5\n", encoding="utf-8")  # an extra cell
    code, _, err = run_cli("predict", "--scenarios", str(path))
    assert code == 2 and "6 fields, expected 5" in err


def test_fit_on_identical_runs_is_refused(tmp_path):
    lines = (ROOT / "data" / "scaling" / "chinchilla.csv").read_text().splitlines()
    path = tmp_path / "same.csv"
    path.write_text("\n".join([lines[0]] + [lines[1]] * 10) + "\n", encoding="utf-8")
    out = str(tmp_path / "law.json")
    line = one_line(*run_cli("fit", "--data", str(path), "--bootstrap", "0", "--out", out)[::2])
    assert "1 distinct point(s)" in line
    assert not Path(out).exists()


def test_loss_refuses_params_with_an_architecture(tmp_path):
    law = ROOT / "data" / "scaling" / "chinchilla_law.json"
    argv = ["loss", "--law", str(law), "--tokens", "1e11", "--params", "1e9"]
    line = one_line(*run_cli(*argv, "--layers", "24", "--hidden", "2048")[::2])
    assert "not both" in line


def test_search_show_is_bounded():
    argv = ["search", "--space", "examples/edge_quickstart.yaml", "--objective", "loss,tpot"]
    assert "--show must be an integer in [0, 1000000]" in one_line(
        *run_cli(*argv, "--show", "-1")[::2]
    )


def test_input_past_the_context_window_warns():
    code, _, err = run_cli(
        "predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--input", "200000"
    )
    assert code == 0 and "exceed Llama 3.1 8B's context window of 131072" in err


def test_a_draft_with_another_tokenizer_warns():
    argv = ["speculate", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--draft"]
    code, _, err = run_cli(*argv, "qwen2.5-0.5b")
    assert code == 0 and "different tokenizers" in err
    code, _, err = run_cli(*argv, "llama-3.2-1b")
    assert code == 0 and "tokenizer" not in err


# -- valid input refused ---------------------------------------------------------------


@pytest.mark.parametrize("text", ["3.35e3", "3.35E3", "335e1", "+3.35e+3"])
def test_yaml_numbers_in_every_common_notation(tmp_path, text):
    path = tmp_path / "hw.yaml"
    path.write_text(H100.replace("bandwidth_gb_per_s: 3350", f"bandwidth_gb_per_s: {text}"))
    code, out, err = run_cli("predict", "--model", "llama-3.1-8b", "--hw", str(path), "--json")
    assert code == 0, err
    reference = json.loads(
        run_cli("predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--json")[1]
    )
    assert json.loads(out)["summary"]["tpot_s"] == pytest.approx(reference["summary"]["tpot_s"])


def test_yaml_exponent_floats_do_not_leak_into_pyyaml():
    import yaml

    assert parse_document("a: 4e0", "x", fmt="yaml") == {"a": 4.0}
    assert yaml.safe_load("a: 4e0") == {"a": "4e0"}  # the global SafeLoader is untouched
    assert parse_document("a: '4e0'", "x", fmt="yaml") == {"a": "4e0"}


def test_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(
        b"\xef\xbb\xbf" + (SCENARIO_HEADER + "llama-3.1-8b,h100-sxm,1,128,16\n").encode()
    )
    code, _, err = run_cli("predict", "--scenarios", str(path))
    assert code == 0, err
    trace = tmp_path / "trace.csv"
    trace.write_bytes(b"\xef\xbb\xbfarrival_s,input_tokens,output_tokens\n0,100,10\n0.5,100,10\n")
    code, _out, err = run_cli(*SERVE, "--trace", str(trace), "--json")
    assert code == 0, err
    lines = MEASURED.read_bytes().splitlines(keepends=True)
    measured = tmp_path / "m.csv"
    measured.write_bytes(b"\xef\xbb\xbf" + b"".join(lines[:40]))
    from calibration import load_measurements

    assert len(load_measurements(measured)) == 39


def test_calibrate_takes_json(tmp_path):
    out = tmp_path / "p.yaml"
    argv = ["calibrate", "--measurements", str(MEASURED), "--runtime", "deepspeed-mii"]
    code, stdout, err = run_cli(*argv, "--json", "--out", str(out))
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["rows"] > 0 and summary["profile"] == str(out) and out.is_file()
    assert all(row["MAPE %"] >= 0 for row in summary["errors_pct"])


# -- misleading messages ---------------------------------------------------------------


def test_calibrate_names_an_unknown_hardware_preset(tmp_path):
    argv = ["calibrate", "--measurements", str(MEASURED), "--runtime", "deepspeed-mii"]
    line = one_line(*run_cli(*argv, "--hw", "h100-sx", "--out", str(tmp_path / "p.yaml"))[::2])
    assert "unknown hardware 'h100-sx' (did you mean 'h100-sxm'" in line


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--slo-tpot-p99-ms", "-5"], "--slo-tpot-p99-ms must be a number of ms in (0, "),
        (["--duration", "0"], "--duration must be"),
        (["--max-seqs", "0"], "--max-seqs must be"),
        (["--gpu-memory-utilization", "2"], "--gpu-memory-utilization must be in (0, 1]"),
    ],
)
def test_serve_errors_name_the_flag_in_its_unit(flags, named):
    assert named in one_line(*run_cli(*SERVE, *flags)[::2])


def test_fit_errors_name_the_flag(tmp_path):
    out = str(tmp_path / "law.json")
    line = one_line(*run_cli("fit", "--data", "chinchilla", "--cv", "1", "--out", out)[::2])
    assert line.startswith("codesign: error: --cv must be")


# -- the table itself ------------------------------------------------------------------


def test_every_bound_is_a_sane_range():
    for bound in [*CONFIG_BOUNDS.values(), *FLAG_BOUNDS.values(), *FLAG_BOUNDS_BY_COMMAND.values()]:
        assert bound.low < bound.high, bound
        assert bound.interval.startswith(("(", "[")), bound


def test_every_bounded_flag_exists_in_some_command():
    from app.cli import build_parser
    from app.cli.flag_checks import command_parsers

    flags = {
        (name, option)
        for name, sub in command_parsers(build_parser())
        for sub_action in sub._actions
        for option in sub_action.option_strings
    }
    options = {option for _, option in flags}
    assert set(FLAG_BOUNDS) <= options, sorted(set(FLAG_BOUNDS) - options)
    assert set(FLAG_BOUNDS_BY_COMMAND) <= flags, sorted(set(FLAG_BOUNDS_BY_COMMAND) - flags)


def test_check_flag_refuses_out_of_range_and_passes_none():
    check_flag("serve", "--input", None)
    check_flag("serve", "--input", 1.0)
    with pytest.raises(InputError, match=r"^--input must be a number of tokens in \[1, 1e\+06\]"):
        check_flag("serve", "--input", 0.0)
    with pytest.raises(InputError, match="--seed must be an integer"):
        check_flag("fit", "--seed", 2**32)


def test_the_docs_table_is_current():
    from app.cli.bounds_doc import bounds_markdown

    snippet = ROOT / "docs" / "snippets" / "bounds-table.md"
    assert snippet.read_text(encoding="utf-8") == bounds_markdown(), (
        "run: python -m app.cli.bounds_doc > docs/snippets/bounds-table.md"
    )


# -- found by benchmarks/fuzz.py -------------------------------------------------------


def test_config_architectures_must_be_names(tmp_path):
    path = config_file(tmp_path, architectures=[{"a": 1}])
    line = one_line(*run_cli("predict", "--model", path, "--hw", "h100-sxm")[::2])
    assert f"{path}: architectures must be a list of names" in line  # was a TypeError


@pytest.mark.parametrize("text", ["layer_bits: 429\n", "layer_bits: abc\n", "kv_bits: {}\n"])
def test_bits_file_shapes_are_checked_and_name_the_file(tmp_path, text):
    path = tmp_path / "bits.yaml"
    path.write_text("weight_bits: 8\n" + text, encoding="utf-8")
    argv = ["predict", "--model", "llama-3.2-1b", "--hw", "h100-sxm", "--bits-file", str(path)]
    line = one_line(*run_cli(*argv)[::2])  # layer_bits: was an AttributeError
    assert f"{path}: " in line


def test_a_null_required_config_key_is_missing(tmp_path):
    path = config_file(tmp_path, num_attention_heads=None)  # was a TypeError
    line = one_line(*run_cli("predict", "--model", path, "--hw", "h100-sxm")[::2])
    assert "missing required key 'num_attention_heads'" in line


def test_the_request_cap_follows_from_memory(monkeypatch):
    from search.serving import workload

    cap, available = workload.max_requests()
    assert 0 < cap <= workload.MAX_REQUESTS
    assert cap <= 0.5 * available / workload.BYTES_PER_REQUEST + 1
    monkeypatch.setattr(workload, "max_requests", lambda: (1000, 2.4e6))
    line = one_line(*run_cli(*SERVE[:-5], "--rate", "1000", "--duration", "2")[::2])
    assert "rate x duration must be at most 1e+03 requests" in line and "2000" in line
