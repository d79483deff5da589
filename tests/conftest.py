"""Shared fixtures: a simple hand-checkable platform, and the shipped H100 SXM preset and
Llama 3.1 8B model that many modules test against (loaded once per session; both are
frozen dataclasses); a benchmarks/ converter rerun into a temporary file; and one local
Ray instance for every test that needs it (starting Ray takes seconds)."""

import runpy
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from genz import ModelConfig, load_model
from roofline import Efficiency, Interconnect, MemoryLevel, Platform, load_platform

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def simple_platform() -> Platform:
    """100 TFLOP/s bf16, 1 TB/s, 100 GB, efficiencies 1, no overhead: easy hand maths."""
    return Platform(
        name="simple",
        display_name="Simple test device",
        peak_flops_per_s={"bf16": 100e12, "int8": 200e12},
        memory=(MemoryLevel("dram", 1e12, 100e9),),
        interconnect=Interconnect(
            link_bandwidth_bytes_per_s=100e9, link_latency_s=1e-6, devices_per_node=8
        ),
        efficiency=Efficiency(compute=1.0, memory=1.0, interconnect=1.0),
        kernel_overhead_s=0.0,
        source="test fixture",
    )


@pytest.fixture(scope="session")
def h100() -> Platform:
    """The shipped ``h100-sxm`` preset."""
    return load_platform("h100-sxm")


@pytest.fixture(scope="session")
def llama8b() -> ModelConfig:
    """The shipped ``llama-3.1-8b`` model."""
    return load_model("llama-3.1-8b")


@pytest.fixture(scope="session")
def ray_local():
    """A local 2-CPU Ray instance shared by the session (skips without ray)."""
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install '.[distributed]')")
    ray.init(num_cpus=2, include_dashboard=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def rerun_converter(tmp_path, monkeypatch) -> Callable[..., bytes]:
    """``rerun_converter("convert_x.py", *extra)`` runs ``benchmarks/convert_x.py --out FILE
    *extra`` as ``__main__`` (benchmarks/ on the path), asserts it exits 0 and returns
    FILE's bytes."""

    def rerun(script: str, *extra: str) -> bytes:
        out = tmp_path / "converted.csv"
        monkeypatch.syspath_prepend(str(BENCHMARKS))
        monkeypatch.setattr(sys, "argv", ["convert", "--out", str(out), *extra])
        with pytest.raises(SystemExit) as exit_info:
            runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
        assert exit_info.value.code == 0
        return out.read_bytes()

    return rerun
