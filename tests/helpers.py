"""Plain helpers shared by test modules (fixtures live in conftest.py): a tiny Llama
config, a made-up power model, one serving replica of a model on a platform, and the
CLI run in-process with its output captured, and a script loaded as a module."""

import contextlib
import dataclasses
import importlib.util
import io
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

from app import cli
from genz import Parallelism
from roofline import PowerModel
from search.serving import Replica, SchedulerConfig, Workload, build_replica


def load_script(path: Path, name: str | None = None) -> ModuleType:
    """The script at ``path`` imported as module ``name`` (default: its stem), registered
    in ``sys.modules`` (dataclasses look their module up there)."""
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


#: Hugging Face config of a 4-layer, 512-wide Llama: fast to predict, hand-checkable.
TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "intermediate_size": 1024,
    "vocab_size": 1000,
}

#: 50 W idle, 1 pJ/FLOP, 100 pJ/byte.
MADE_UP_POWER = PowerModel(idle_w=50.0, j_per_flop=1e-12, j_per_byte=1e-10)


def make_replica(model, platform, workload: Workload, tp: int = 1, **config) -> Replica:
    """`build_replica` at tensor parallelism ``tp`` with ``SchedulerConfig(**config)``."""
    return build_replica(
        model, platform, workload, parallelism=Parallelism(tp=tp), config=SchedulerConfig(**config)
    )


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``codesign *argv`` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_same_records(fast, slow) -> None:
    """Every field of two `RunRecord`s equal: arrays in dtype, shape and value (NaN equal to
    NaN), other fields by ``==``."""
    for field in dataclasses.fields(slow):
        a, b = getattr(fast, field.name), getattr(slow, field.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, field.name
            assert np.array_equal(a, b, equal_nan=True), field.name
        else:
            assert a == b, field.name
