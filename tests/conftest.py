"""Shared fixtures: a simple hand-checkable platform."""

import pytest

from roofline import Efficiency, Interconnect, MemoryLevel, Platform


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
