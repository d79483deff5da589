"""A runtime profile's fitted per-request cost is the simulator's front-end time when
none is stated: an idle replica's TTFT is then `genz.predict`'s TTFT with the profile
(which adds ``request_overhead_s`` once per request), and a stated value wins."""

import contextlib
import io
import json

import pytest

from app.cli import main
from genz import Scenario, load_runtime, predict
from roofline import data_dir
from search.serving import (
    SchedulerConfig,
    build_replica,
    front_end_seconds,
    run,
    synthetic_workload,
)

TRANSFER = data_dir() / "runtimes" / "transfer" / "transfer.yaml"


def test_the_shipped_transfer_profile_fits_a_per_request_cost():
    assert load_runtime(TRANSFER).request_overhead_s > 1e-4


def test_stated_wins_then_profile_then_zero():
    profile = load_runtime(TRANSFER)
    assert front_end_seconds(profile, 0.0) == 0.0
    assert front_end_seconds(profile, 0.25) == 0.25
    assert front_end_seconds(profile, None) == profile.request_overhead_s
    assert front_end_seconds(None, None) == 0.0


def test_idle_ttft_is_predicts_ttft_with_the_profiles_request_cost(llama8b, h100):
    profile = load_runtime(TRANSFER)
    workload = synthetic_workload(0.05, 2000.0, length_cv=0.0, seed=1)
    config = SchedulerConfig(request_overhead_s=front_end_seconds(profile, None))
    replica = build_replica(llama8b, h100, workload, config=config, runtime=profile)
    alone = predict(llama8b, h100, Scenario(1, 1024, 256), runtime=profile).ttft_s
    without = run(workload, build_replica(llama8b, h100, workload, runtime=profile))
    assert run(workload, replica).summary["ttft_s_p50"] == pytest.approx(alone, rel=1e-9)
    assert without.summary["ttft_s_p50"] == pytest.approx(
        alone - profile.request_overhead_s, rel=1e-9
    )


def _serve(*extra: str) -> dict:
    out = io.StringIO()
    args = ["serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "0.05",
            "--duration", "400", "--json", "--runtime", str(TRANSFER), *extra]  # fmt: skip
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    return json.loads(out.getvalue())


def test_cli_takes_the_profiles_cost_unless_a_flag_states_one():
    profile = load_runtime(TRANSFER)
    default, stated = _serve(), _serve("--request-overhead-ms", "0")
    assert default["request_overhead_s"] == profile.request_overhead_s
    assert stated["request_overhead_s"] == 0.0
    gap = default["ttft_s_p50"] - stated["ttft_s_p50"]
    assert gap == pytest.approx(profile.request_overhead_s, rel=1e-6)
