"""Issue #25, second round: batch exit codes of ``calibrate``, bounds of hardware files,
command-specific bounds of every numeric flag, one definition per quantity, and the
dashboard's inputs taking their ranges and messages from the same table."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
from helpers import run_cli

from calibration import Measurement, write_measurements
from calibration.rows import decompose
from genz.runtime import PhaseProfile, RuntimeProfile

PROFILE = RuntimeProfile(
    name="synthetic",
    phases={
        "prefill": PhaseProfile(0.45, 0.6, 2e-3, 2e-5),
        "decode": PhaseProfile(0.45, 0.6, 2e-3, 2e-5),
    },
    all_reduce_latency_s=3e-5,
)


def _runs(tmp_path, extra: list[Measurement]) -> str:
    """A measurement CSV: 24 runs of vLLM with the latencies ``PROFILE`` gives (1 %
    noise), followed by ``extra`` rows."""
    rows = [
        Measurement(model, hw, "vllm", batch, tokens, tokens, tp=tp, batch_latency_s=1.0)
        for hw in ("a100-sxm-40gb", "h100-sxm")
        for model, tp in (("llama-3-8b", 1), ("llama-2-7b", 2))
        for batch in (1, 8, 32)
        for tokens in (128, 1024)
    ]
    predicted = decompose(rows).predict(PROFILE)["batch_latency_s"]
    noise = np.exp(np.random.default_rng(0).normal(0.0, 0.01, len(rows)))
    rows = [
        dataclasses.replace(row, batch_latency_s=float(value))
        for row, value in zip(rows, predicted * noise, strict=True)
    ]
    path = tmp_path / "runs.csv"
    write_measurements([*rows, *extra], path)
    return str(path)


def _calibrate(path: str, out: str, *flags: str) -> tuple[int, str, str]:
    return run_cli("calibrate", "--measurements", path, "--runtime", "vllm", "--out", out, *flags)


def test_calibrate_exits_0_when_no_row_is_excluded(tmp_path):
    code, out, err = _calibrate(_runs(tmp_path, []), str(tmp_path / "p.yaml"))
    assert code == 0, err
    assert "0 excluded" in out and "excluded" not in err


def test_calibrate_exits_1_and_counts_excluded_rows_by_reason(tmp_path):
    # llama-3-8b has 8 KV heads and 32 query heads: tp 3 cannot split them; a 1 us batch
    # of 1024 + 1024 tokens is faster than any device could run it.
    extra = [
        Measurement("llama-3-8b", "h100-sxm", "vllm", 1, 128, 128, tp=3, batch_latency_s=1.0),
        Measurement("llama-3-8b", "h100-sxm", "vllm", 4, 256, 64, tp=3, batch_latency_s=1.0),
        Measurement("llama-3-8b", "h100-sxm", "vllm", 8, 1024, 1024, batch_latency_s=1e-6),
    ]
    out = tmp_path / "p.yaml"
    for json_flag in ((), ("--json",)):
        code, stdout, err = _calibrate(_runs(tmp_path, extra), str(out), *json_flag)
        assert code == 1, err
        last = err.strip().splitlines()[-1]
        assert last == (
            "codesign: error: 3 of 27 rows excluded (2 a mesh the model cannot split, "
            "1 batch latency faster than the efficiency-1 bound); the profile, fitted on "
            f"the other 24, is written to {out}"
        )
        assert out.is_file()
        out.unlink()
    assert json.loads(stdout)["excluded_by_kind"] == {
        "a mesh the model cannot split": 2,
        "batch latency faster than the efficiency-1 bound": 1,
    }
