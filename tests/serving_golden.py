"""Runs of the serving loop on non-windowed models with one sequence per request, and
a digest of every `RunRecord` field, for `test_serving_windows_golden` (the golden file
was recorded from main before window-aware occupancy and decoding modes were added;
re-record with ``python tests/serving_golden.py``). Float arrays enter the digest at 11
significant digits, as in `test_resolved_golden`: numpy's AVX-512 and AVX2 kernels differ
in the last bits of transcendental ufuncs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).with_name("serving_golden.json")


def _cases() -> dict[str, tuple[object, object, int]]:
    """name -> (workload, replica, replicas)."""
    from genz import load_model
    from roofline import load_platform
    from search.serving import SchedulerConfig, build_replica, synthetic_workload

    h100 = load_platform("h100-sxm")
    model = load_model("llama-3.1-8b")
    shared = synthetic_workload(
        40.0, 6.0, input_tokens=1500, output_tokens=200, prefix_share=0.5,
        prefix_tokens=600, prefix_count=3, seed=3,
    )  # fmt: skip
    closed = synthetic_workload(
        float("inf"), 1.0, input_tokens=900, output_tokens=150, requests=120,
        max_concurrency=24, seed=5,
    )  # fmt: skip
    cases = {}
    for name, workload, config, replicas in (
        ("continuous-prefix-recompute", shared, SchedulerConfig(kv_blocks=1500), 1),
        ("chunked-swap", shared, SchedulerConfig(policy="chunked", max_batched_tokens=512,
                                                 preemption="swap", kv_blocks=1200), 1),
        ("multistep", shared, SchedulerConfig(scheduler_steps=4, kv_blocks=2000), 1),
        ("closed-loop", closed, SchedulerConfig(kv_blocks=900), 1),
        ("pool", shared, SchedulerConfig(kv_blocks=1500), 2),
    ):  # fmt: skip
        cases[name] = (workload, build_replica(model, h100, workload, config=config), replicas)
    return cases


def digest(record: object) -> dict[str, str]:
    """Field -> sha256 of its value (arrays: dtype, shape and contents, floats at 11
    significant digits; else repr)."""
    out = {}
    for item in fields(record):  # type: ignore[arg-type]
        value = getattr(record, item.name)
        if isinstance(value, np.ndarray):
            array = np.ascontiguousarray(value)
            body = (
                " ".join(np.char.mod("%.10e", array.ravel())).encode()
                if array.dtype.kind == "f"
                else array.tobytes()
            )
            text = f"{array.dtype}{array.shape}".encode() + body
        else:
            text = repr(value).encode()
        out[item.name] = hashlib.sha256(text).hexdigest()[:16]
    return out


def records() -> dict[str, dict[str, str]]:
    """Digests of every case, run on the Python loop."""
    from search.serving import simulate_replica

    return {
        name: digest(simulate_replica(workload, replica, replicas=replicas))  # type: ignore[arg-type]
        for name, (workload, replica, replicas) in _cases().items()
    }


if __name__ == "__main__":
    import os

    os.environ["CODESIGN_SERVING_CORE"] = "python"
    GOLDEN.write_text(json.dumps(records(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
