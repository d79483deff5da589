"""The per-collective base latency of an interconnect, and the small-message fit of
benchmarks/validate_collectives.py on hand-made rows."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from roofline import (
    InputError,
    all_gather_time,
    all_reduce_time,
    load_platform,
    point_to_point_time,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from validate_collectives import fit, load_rows


def _with_base(platform, base_s):
    return dataclasses.replace(
        platform,
        interconnect=dataclasses.replace(platform.interconnect, collective_latency_s=base_s),
    )


def test_base_is_paid_once_per_collective_on_two_or_more_devices(simple_platform):
    based = _with_base(simple_platform, 3e-6)
    size = np.array([8.0, 8.0, 8.0, 1e6])
    n = np.array([1, 2, 8, 4])
    # 100 GB/s, 1 us per hop: ring all-reduce 2(n-1)/n S / bw + 2(n-1) us, plus 3 us.
    expected = [0.0, 8 / 100e9 + 2e-6 + 3e-6, 14 / 8 * 8 / 100e9 + 14e-6 + 3e-6]
    expected.append(1.5 * 1e6 / 100e9 + 6e-6 + 3e-6)
    assert all_reduce_time(based, size, n) == pytest.approx(expected)
    assert all_gather_time(based, 8.0, 4) == pytest.approx(0.75 * 8 / 100e9 + 3e-6 + 3e-6)
    # a point-to-point send is not a collective call
    assert point_to_point_time(based, 8.0) == point_to_point_time(simple_platform, 8.0)


def test_default_base_leaves_the_shipped_presets_unchanged():
    h100 = load_platform("h100-sxm")
    assert h100.interconnect.collective_latency_s == 0.0
    # 8 B over 8 GPUs: 2 x 7 hops x 2 us link latency, the wire term is ~0.
    assert float(all_reduce_time(h100, 8.0, 8)) == pytest.approx(28e-6, rel=1e-4)


def test_preset_key_is_microseconds_and_rejects_negative(tmp_path):
    text = (
        "name: t\nsource: test\npeak_tflops: {bf16: 1}\n"
        "memory: [{name: m, bandwidth_gb_per_s: 100, capacity_gb: 8}]\n"
        "interconnect: {link_bandwidth_gb_per_s: 50, link_latency_us: 1, collective_latency_us: %s}\n"
    )
    path = tmp_path / "t.yaml"
    path.write_text(text % "3.6")
    assert load_platform(str(path)).interconnect.collective_latency_s == pytest.approx(3.6e-6)
    path.write_text(text % "-1")
    with pytest.raises(InputError, match=r"interconnect\.collective_latency_us"):
        load_platform(str(path))


def test_fit_recovers_a_base_and_hop_scale_from_exact_rows():
    rows = pd.DataFrame(
        {
            "preset": ["p", "p", "q", "q"],
            "hops_latency_us": [2.0, 14.0, 10.0, 70.0],
            "wire_us": [0.1, 0.2, 0.0, 1.0],
        }
    )
    rows["time_us"] = 3.0 + 0.5 * rows.hops_latency_us + rows.wire_us
    base, scale = fit(rows)
    assert base == pytest.approx(3.0, abs=1e-6) and scale == pytest.approx(0.5, abs=1e-6)


def test_every_published_row_names_its_source_and_date():
    rows = load_rows()
    assert len(rows) >= 14
    assert rows.source.str.startswith("https://").all()
    assert (rows.date_read != "").all() and (rows.time_us > 0).all()


def test_profile_all_reduce_latency_replaces_the_platform_base(simple_platform):
    """A runtime profile's fitted all-reduce latency stands for every latency term of the
    collective, so a platform base latency must not be added on top of it."""
    from genz.op_terms import OpTerms
    from genz.runtime_cost import all_reduce_wire_s

    fields = dict.fromkeys(OpTerms._fields)
    op = OpTerms(
        **{**fields, "message_bytes": np.array([8.0, 1e6]), "group_size": np.array([4, 4])}
    )
    plain = all_reduce_wire_s(op, simple_platform)
    based = all_reduce_wire_s(op, _with_base(simple_platform, 3e-6))
    assert based == pytest.approx(plain)
    # the wire term alone: 2(n-1)/n S / bw, no hop latency
    assert plain == pytest.approx(1.5 * np.array([8.0, 1e6]) / 100e9)
