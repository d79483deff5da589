"""Hypothesis strategies for every kind of user file and flag, and the contract a
command's answer must meet (issue #25). Used by tests/test_fuzz_inputs.py (a few dozen
cases per kind, inside the test-time budget) and benchmarks/fuzz.py (any number).

Each strategy draws a valid file, a near-valid one (one field at or past a bound, a
key dropped or added, a number in another notation) or a hostile one (random bytes,
wrong types, deep nesting), written where the command reads it. `run_case` runs the
command in-process under a hard time limit and `check_answer` asserts the contract:
exit 0 with finite numbers, or exit 1/2 whose last stderr line is one
``codesign: error:`` line; never a traceback, never a hang.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from app import cli
from roofline import CONFIG_BOUNDS, FLAG_BOUNDS

ROOT = Path(__file__).resolve().parents[1]
#: Hard limits per case: a command that has used this much CPU time is a hang ...
CASE_LIMIT_S = 20
#: ... and so is one still running after this wall time (a blocked read uses no CPU;
#: the wall limit is wide because a shared 2-core machine can run 10x slower).
CASE_WALL_LIMIT_S = 300
#: Hugging Face config of a 2-layer, 256-wide Llama: every command on it is fast.
TINY = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 1000,
    "max_position_embeddings": 4096,
}
HARDWARE = yaml.safe_load((ROOT / "data" / "hardware" / "h100-sxm.yaml").read_text())
BITS = {"weight_bits": 8, "activation_bits": 16, "kv_bits": 8, "group_bits": {"ffn_down": 4}}
BITS["layer_bits"] = {0: {"attn_qkv": 4}}
LAW = json.loads((ROOT / "data" / "scaling" / "chinchilla_law.json").read_text())
SPACE = {
    "name": "fuzz",
    "hardware": {"presets": ["jetson-orin-nano-8gb"], "bandwidth_scale": [1, 2]},
    "model": {"layers": [4, 8], "hidden": [512], "head_dim": 64, "kv_heads": [4]},
    "precision": {"weight_bits": [16, 4]},
    "workload": {"batch": 1, "input_tokens": 256, "output_tokens": 32},
    "law": {"tokens_per_parameter": 20},
    "objectives": ["loss", "tpot"],
}
MEASUREMENT_HEADER = ROOT / "data" / "validation" / "llm_inference_bench" / "normalized.csv"
MEASUREMENT_COLUMNS = MEASUREMENT_HEADER.read_text().splitlines()[0].split(",")
SCENARIO_COLUMNS = ["model", "hw", "runtime", "batch", "input_tokens", "output_tokens", "tp"]
TRACE_COLUMNS = ["arrival_s", "input_tokens", "output_tokens"]


class Raw(str):
    """A YAML scalar written as is (``3.35e3`` unquoted), not as a quoted string."""


# -- values ----------------------------------------------------------------------------

NUMBER_TEXT = st.sampled_from(
    [
        "0",
        "-0",
        "1",
        "-1",
        "1e3",
        "4e0",
        "3.35E3",
        "1_000",
        "0x10",
        "1e400",
        "nan",
        "inf",
        "-inf",
        ".5",
        "5.",
        "1e-400",
        "9" * 30,
        "",
        " ",
        "x",
        "1,5",
        "\ufeff1",
        "１",
    ]
)
HOSTILE_VALUE = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(-3, 3), max_size=2),
)
SMALL_VALUE = st.one_of(
    st.integers(-2, 5),
    st.sampled_from([0.0, 0.5, 1.0, 1e9, 1e30, -1.0]),
    NUMBER_TEXT.map(Raw),
)


def near_bound(bound: Any) -> st.SearchStrategy[Any]:
    """Values at and just past a `roofline.ValueBound`'s ends."""
    ends = [bound.low, bound.high]
    values = [*ends, bound.low - 1, bound.high + 1, bound.high * 10, 0, -1]
    if bound.integer:
        return st.sampled_from([int(v) for v in values if math.isfinite(v)])
    return st.sampled_from([float(v) for v in values] + [bound.low + (bound.high - bound.low) / 2])


# -- documents -------------------------------------------------------------------------


def _leaves(document: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(document, dict):
        for key, value in document.items():
            yield (*path, key)
            yield from _leaves(value, (*path, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield (*path, index)
            yield from _leaves(value, (*path, index))


def _set(document: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> Any:
    copy = _copy(document)
    target = copy
    for key in path[:-1]:
        target = target[key]
    if delete and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return copy


def _copy(document: Any) -> Any:
    if isinstance(document, dict):
        return {key: _copy(value) for key, value in document.items()}
    if isinstance(document, list):
        return [_copy(value) for value in document]
    return document


@st.composite
def mutated(draw: Any, base: dict[str, Any], values: st.SearchStrategy[Any]) -> Any:
    """``base`` with 0-3 mutations: a leaf replaced, a key deleted, an unknown key added."""
    document = _copy(base)
    for _ in range(draw(st.integers(0, 3))):
        paths = list(_leaves(document))
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "add" or not paths:
            key = draw(st.sampled_from(["extra", "_extra", "hidden_sizes", "kind", "name"]))
            document = {**document, key: draw(values)} if isinstance(document, dict) else document
            continue
        path = draw(st.sampled_from(paths))
        document = _set(document, path, draw(values), delete=action == "delete")
    return document


def dump(document: Any, fmt: str) -> bytes:
    """``document`` as JSON (NaN allowed: the reader must refuse it) or YAML (`Raw` unquoted)."""
    if fmt == "json":
        return json.dumps(document, allow_nan=True, default=str).encode()
    raws: list[str] = []

    def plain(value: Any) -> Any:
        if isinstance(value, Raw):
            raws.append(str(value))
            return f"RAW{len(raws) - 1}X"
        if isinstance(value, dict):
            return {plain(k) if isinstance(k, Raw) else k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    text = yaml.safe_dump(plain(document), sort_keys=False, allow_unicode=True)
    for index, raw in enumerate(raws):
        text = text.replace(f"RAW{index}X", raw if raw.strip() else "''")
    return text.encode()


HOSTILE_BYTES = st.one_of(
    st.binary(max_size=64),
    st.sampled_from(
        [
            b"",
            b"\xef\xbb\xbf",
            b"[" * 500 + b"]" * 500,
            b"{a: [1, 2",
            b"\x00\x01",
            b"---\n...\n",
            b"!!python/object:os.system ls",
            b"a: &x [*x]",
            b"1e9" * 1000,
        ]
    ),
    st.text(max_size=60).map(str.encode),
)


def document_file(
    base: dict[str, Any], fmt: str, *, bounds: dict[str, Any] | None = None
) -> st.SearchStrategy[bytes]:
    """Valid, near-valid (a bounded key at/past its bound, other notations) or hostile."""
    near: list[st.SearchStrategy[Any]] = [mutated(base, SMALL_VALUE)]
    if bounds:
        keys = [key for key in bounds if key in base] or list(bounds)
        near.append(
            st.sampled_from(keys).flatmap(
                lambda key: near_bound(bounds[key]).map(lambda v: {**base, key: v})
            )
        )
    return st.one_of(
        st.just(base).map(lambda d: dump(d, fmt)),
        st.one_of(near).map(lambda d: dump(d, fmt)),
        mutated(base, HOSTILE_VALUE).map(lambda d: dump(d, fmt)),
        HOSTILE_BYTES,
    )


CONFIG_FILES = document_file(TINY, "json", bounds=CONFIG_BOUNDS)
HARDWARE_FILES = document_file(HARDWARE, "yaml")
BITS_FILES = document_file(BITS, "yaml")
LAW_FILES = document_file(LAW, "json")
SPACE_FILES = document_file(SPACE, "yaml")

# -- CSV files -------------------------------------------------------------------------

CELL = st.one_of(
    NUMBER_TEXT,
    st.sampled_from(["llama-3.2-1b", "h100-sxm", "l4", "vllm", "nosuch", "16", "8", "1", "128"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6),
    st.just("9" * 140_000),  # past the csv module's field limit
)


@st.composite
def csv_file(draw: Any, columns: list[str], valid_row: list[str]) -> bytes:
    """A header (maybe with a BOM, a column dropped, renamed or added) and rows, each
    the valid row with some cells replaced, or a row of another length."""
    header = list(columns)
    if draw(st.booleans()):
        action = draw(st.sampled_from(["drop", "rename", "add"]))
        index = draw(st.integers(0, len(header) - 1))
        if action == "drop":
            header.pop(index)
        elif action == "rename":
            header[index] = header[index] + "x"
        else:
            header.append("extra")
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row = list(valid_row[: len(header)]) + [""] * max(0, len(header) - len(valid_row))
        for _ in range(draw(st.integers(0, 2))):
            row[draw(st.integers(0, len(row) - 1))] = draw(CELL)
        if draw(st.integers(0, 9)) == 0:
            row = [*row, "5"] if draw(st.booleans()) else row[:-1]
        rows.append(",".join(_quoted(cell) for cell in row))
    text = "\n".join([",".join(header), *rows]) + "\n"
    prefix = "\ufeff" if draw(st.booleans()) else ""
    return (prefix + text).encode()


def _quoted(cell: str) -> str:
    return '"' + cell.replace('"', '""') + '"' if any(c in cell for c in ',"\n\r') else cell


SCENARIO_FILES = st.one_of(
    csv_file(SCENARIO_COLUMNS, ["llama-3.2-1b", "h100-sxm", "ideal", "1", "128", "16", "1"]),
    HOSTILE_BYTES,
)
MEASUREMENT_ROW = MEASUREMENT_HEADER.read_text().splitlines()[1].split(",")
MEASUREMENT_FILES = st.one_of(csv_file(MEASUREMENT_COLUMNS, MEASUREMENT_ROW), HOSTILE_BYTES)
TRACE_FILES = st.one_of(csv_file(TRACE_COLUMNS, ["0.5", "64", "8"]), HOSTILE_BYTES)

# -- flags -----------------------------------------------------------------------------

FLAG_TEXT = st.one_of(
    NUMBER_TEXT,
    st.sampled_from(["2", "10", "100000", "1e7", "65537", "0.001"]),
)
#: Numeric flags of ``serve`` and ``predict`` tried by the flag fuzzer, with a fast base.
FLAG_COMMANDS = {
    "serve": ["serve", "--model", "{tiny}", "--hw", "h100-sxm", "--rate", "2", "--duration", "2"],
    "predict": ["predict", "--model", "{tiny}", "--hw", "h100-sxm"],
}
SERVE_FLAGS = [
    *sorted(
        flag
        for flag in FLAG_BOUNDS
        if flag.startswith(
            ("--max-seqs", "--max-batched", "--block", "--gpu", "--scheduler", "--seed")
        )
        or flag
        in (
            "--length-cv",
            "--burst-cv",
            "--prefix-share",
            "--prefix-tokens",
            "--prefix-count",
            "--prefix-zipf",
            "--slo-ttft-p99-s",
            "--slo-tpot-p99-ms",
            "--rate",
            "--duration",
        )
    ),
    "--input",
    "--output",
    "--wbits",
    "--abits",
    "--kvbits",
    "--tp",
]
PREDICT_FLAGS = [
    "--batch",
    "--input",
    "--output",
    "--wbits",
    "--kvbits",
    "--chunk",
    "--tp",
    "--pp",
    "--compute-eff",
    "--memory-eff",
    "--bw-scale",
]
FLAGS = st.one_of(
    st.tuples(st.just("serve"), st.sampled_from(SERVE_FLAGS), FLAG_TEXT),
    st.tuples(st.just("predict"), st.sampled_from(PREDICT_FLAGS), FLAG_TEXT),
)

# -- running and judging ---------------------------------------------------------------


class Hang(Exception):
    """A case ran past `CASE_LIMIT_S`."""


def run_case(argv: list[str], limit_s: float = CASE_LIMIT_S) -> tuple[int, str, str]:
    """``codesign *argv`` in-process with hard time limits: (exit code, stdout, stderr).

    ``limit_s`` is CPU time (``ITIMER_PROF``: load on a shared machine does not count);
    `CASE_WALL_LIMIT_S` bounds the wall time too.
    """

    def expire(signum: int, _: Any) -> None:
        what = "CPU" if signum == signal.SIGPROF else "wall"
        raise Hang(
            f"over {limit_s if what == 'CPU' else CASE_WALL_LIMIT_S} s {what}: codesign {' '.join(argv)}"
        )

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGPROF, expire), signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_PROF, limit_s)
    signal.setitimer(signal.ITIMER_REAL, CASE_WALL_LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as stop:  # argparse's own one-line errors (exit 2)
                code = stop.code if isinstance(stop.code, int) else 2
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, previous[0])
        signal.signal(signal.SIGALRM, previous[1])
    return code, out.getvalue(), err.getvalue()


#: A NaN in printed text. ``inf`` is a value there: the operational intensity of an
#: operator that moves no memory (a pipeline send) is printed as pandas prints it.
_NON_FINITE = re.compile(r"(?<![\w.-])(nan|-inf)(?![\w.-])", re.IGNORECASE)


def check_answer(code: int, out: str, err: str, *, batch: bool = False) -> None:
    """The contract: exit 0 with finite numbers, or 1 (batch only) / 2 with one error line."""
    assert "Traceback" not in err, err
    if code == 0:
        if out.lstrip().startswith(("{", "[")):
            _assert_finite(json.loads(out))
        else:
            assert not _NON_FINITE.search(out), out
        return
    assert code in ((1, 2) if batch else (2,)), (code, err)
    lines = [line for line in err.strip().splitlines() if "warning:" not in line]
    assert lines, "no error message"
    assert re.match(r"^codesign( \w+)?: error: ", lines[-1]), lines[-1]
    if not batch:
        assert len(lines) == 1, err


def _assert_finite(value: Any) -> None:
    if isinstance(value, float):
        assert math.isfinite(value), value
    elif isinstance(value, dict):
        for item in value.values():
            _assert_finite(item)
    elif isinstance(value, list):
        for item in value:
            _assert_finite(item)


#: A file kind's name -> (strategy, file suffix, argv with ``{file}`` and ``{tiny}``, batch?).
KINDS: dict[str, tuple[st.SearchStrategy[bytes], str, list[str], bool]] = {
    "config": (
        CONFIG_FILES,
        ".json",
        ["predict", "--model", "{file}", "--hw", "h100-sxm", "--json"],
        False,
    ),
    "hardware": (
        HARDWARE_FILES,
        ".yaml",
        ["predict", "--model", "{tiny}", "--hw", "{file}", "--json"],
        False,
    ),
    "bits": (
        BITS_FILES,
        ".yaml",
        ["predict", "--model", "{tiny}", "--hw", "h100-sxm", "--bits-file", "{file}", "--json"],
        False,
    ),
    "scenario": (SCENARIO_FILES, ".csv", ["predict", "--scenarios", "{file}", "--json"], True),
    "measurement": (
        MEASUREMENT_FILES,
        ".csv",
        ["predict", "--scenarios", "{file}", "--json"],
        True,
    ),
    "trace": (
        TRACE_FILES,
        ".csv",
        [
            "serve",
            "--model",
            "{tiny}",
            "--hw",
            "h100-sxm",
            "--trace",
            "{file}",
            "--json",
            "--no-progress",
        ],
        False,
    ),
    "space": (
        SPACE_FILES,
        ".yaml",
        ["search", "--space", "{file}", "--json", "--no-progress", "--objective", "loss,tpot"],
        False,
    ),
    "law": (
        LAW_FILES,
        ".json",
        ["loss", "--law", "{file}", "--params", "1e9", "--tokens", "1e11", "--json"],
        False,
    ),
}


def file_case(kind: str, content: bytes, folder: Path) -> tuple[int, str, str]:
    """Write ``content`` as a ``kind`` file in ``folder`` and run its command."""
    _, suffix, argv, _ = KINDS[kind]
    path = folder / f"{kind}{suffix}"
    path.write_bytes(content)
    return run_case(fill(argv, folder, file=str(path)))


def fill(argv: list[str], folder: Path, **names: str) -> list[str]:
    """``argv`` with ``{tiny}`` (a tiny config.json written to ``folder``) and ``names``."""
    tiny = folder / "tiny.json"
    if not tiny.exists():
        tiny.write_text(json.dumps(TINY), encoding="utf-8")
    return [word.format(tiny=str(tiny), **names) if "{" in word else word for word in argv]


def flag_case(command: str, flag: str, value: str, folder: Path) -> tuple[int, str, str]:
    """Run ``command``'s fast base with ``flag value`` added."""
    argv = [*fill(FLAG_COMMANDS[command], folder), f"{flag}={value}"]
    if command == "serve":
        argv.append("--no-progress")
    return run_case(argv)
