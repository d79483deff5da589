"""Roofline maths: hand-checked cases, properties, collectives and capacity."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline import (
    BOUND_ORDER,
    DTYPE_BITS,
    Bound,
    CapacityFootprint,
    Gemm,
    InputError,
    Operator,
    all_reduce_time,
    attainable_flops_per_s,
    bound_codes,
    bytes_per_element,
    check_capacity,
    classify_bound,
    cost,
    derive_platform,
    load_platform,
    operator_time_s,
    peak_for_bits,
    roofline_time,
)


def test_a100_bf16_ridge_point_matches_spec_sheet():
    a100 = load_platform("a100-sxm-80gb")
    assert a100.ridge_point("bf16") == pytest.approx(312e12 / 2.039e12, rel=0.01)


def test_memory_bound_operator_time_is_bytes_over_bandwidth(simple_platform):
    op = Operator("axpy", flop=1e9, bytes_main=1e10, dtype="bf16")
    result = cost(op, simple_platform)
    assert result.time_s == pytest.approx(1e10 / 1e12)
    assert result.bound is Bound.MEMORY_BANDWIDTH
    assert result.attainable_flops_per_s == pytest.approx(1e9 / 1e-2)


def test_compute_bound_operator_uses_dtype_peak(simple_platform):
    op = Operator("gemm", flop=1e15, bytes_main=1e9, dtype="int8")
    result = cost(op, simple_platform)
    assert result.time_s == pytest.approx(1e15 / 200e12)
    assert result.bound is Bound.COMPUTE


def test_efficiency_and_overhead_enter_the_time(simple_platform):
    derated = derive_platform(
        simple_platform,
        efficiency=type(simple_platform.efficiency)(compute=0.5, memory=0.5),
        kernel_overhead_s=1e-6,
    )
    op = Operator("x", flop=0.0, bytes_main=1e12)
    assert cost(op, derated).time_s == pytest.approx(2.0 + 1e-6)


def test_tiny_operator_is_overhead_bound(simple_platform):
    platform = derive_platform(simple_platform, kernel_overhead_s=5e-6)
    assert cost(Operator("tiny", 10.0, 10.0), platform).bound is Bound.OVERHEAD


def test_gemm_counts_and_int4_half_of_int8():
    gemm = Gemm("g", m=4, n=8, k=16, b_bits=8)
    assert gemm.flops() == 2 * 4 * 8 * 16
    int8_bytes = 8 * 16 * 1.0
    int4 = Gemm("g", m=4, n=8, k=16, b_bits=4)
    assert int4.bytes_moved() - (gemm.bytes_moved() - int8_bytes) == pytest.approx(int8_bytes / 2)
    assert bytes_per_element(4) == 0.5 * bytes_per_element(8)


def test_attainable_is_min_of_peak_and_bandwidth_slope(simple_platform):
    oi = np.array([1.0, 100.0, 1000.0])
    np.testing.assert_allclose(
        attainable_flops_per_s(oi, simple_platform, "bf16"), [1e12, 100e12, 100e12]
    )


def test_ring_all_reduce_formula(simple_platform):
    size, n = 1e9, 4
    expected = 2 * (n - 1) / n * size / 100e9 + 2 * (n - 1) * 1e-6
    assert all_reduce_time(simple_platform, size, n) == pytest.approx(expected)
    assert all_reduce_time(simple_platform, size, 1) == 0.0


def test_capacity_wall_verdict():
    verdict = check_capacity(CapacityFootprint(weights_bytes=70e9, kv_cache_bytes=20e9), 80e9)
    assert not verdict.fits
    assert verdict.headroom_bytes == pytest.approx(-10e9)
    assert verdict.utilization == pytest.approx(90 / 80)
    assert check_capacity(50e9, 80e9).fits


def test_derive_scales_bandwidth_and_names_the_variant():
    h100 = load_platform("h100-sxm")
    fast = derive_platform(h100, memory_bandwidth_scale=2.0)
    assert fast.main_memory.bandwidth_bytes_per_s == pytest.approx(2 * 3.35e12)
    assert fast.peak("bf16") == h100.peak("bf16")
    assert fast.name != h100.name


def test_derive_rejects_unknown_field_and_bad_scale(simple_platform):
    with pytest.raises(InputError, match="unknown platform field 'bandwith'"):
        derive_platform(simple_platform, bandwith=1)
    with pytest.raises(InputError, match="memory_bandwidth_scale must be a finite number > 0"):
        derive_platform(simple_platform, memory_bandwidth_scale=-2)


def test_compute_dtype_for_bits_picks_narrowest_supported():
    a100 = load_platform("a100-sxm-80gb")
    assert a100.compute_dtype_for_bits(8) == "int8"
    assert a100.compute_dtype_for_bits(16) in ("bf16", "fp16")
    m2 = load_platform("apple-m2-ultra")
    assert m2.compute_dtype_for_bits(4) in ("fp16", "bf16")


def test_unknown_dtype_names_the_accepted_ones(simple_platform):
    with pytest.raises(InputError, match="lists no peak for dtype 'fp8'; accepted: bf16, int8"):
        simple_platform.peak("fp8")


positive = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False)
scale = st.floats(min_value=1.0, max_value=1e3)


@given(flop=positive, moved=positive, peak=positive, bw=positive, more=scale)
def test_more_bandwidth_or_compute_never_slower(flop, moved, peak, bw, more):
    base = roofline_time(flop, moved, peak, bw)
    assert roofline_time(flop, moved, peak, bw * more) <= base * (1 + 1e-12)
    assert roofline_time(flop, moved, peak * more, bw) <= base * (1 + 1e-12)


@given(flop=positive, moved=positive, peak=positive, bw=positive, factor=st.floats(0.01, 100))
def test_time_scales_linearly_with_work(flop, moved, peak, bw, factor):
    base = float(roofline_time(flop, moved, peak, bw))
    scaled = float(roofline_time(flop * factor, moved * factor, peak, bw))
    assert math.isclose(scaled, base * factor, rel_tol=1e-9)


times = st.floats(min_value=0.0, max_value=1e3, allow_nan=False, allow_infinity=False)


@given(compute=times, memory=times, overhead=times, interconnect=times)
def test_bound_code_names_the_largest_time_term(compute, memory, overhead, interconnect):
    code = bound_codes(compute, memory, overhead, interconnect)
    terms = {
        Bound.COMPUTE: compute,
        Bound.MEMORY_BANDWIDTH: memory,
        Bound.INTERCONNECT: interconnect,
        Bound.OVERHEAD: overhead,
    }
    assert terms[BOUND_ORDER[int(code)]] == max(terms.values())
    named = classify_bound(compute, memory, overhead)
    assert terms[named] == max(compute, memory, overhead)


def test_bound_codes_are_elementwise_and_match_the_scalar_verdict():
    compute = np.array([3.0, 1.0, 1.0, 0.0])
    memory = np.array([1.0, 3.0, 1.0, 0.0])
    overhead = np.array([0.5, 0.5, 2.0, 0.0])
    codes = bound_codes(compute, memory, overhead)
    expected = [Bound.COMPUTE, Bound.MEMORY_BANDWIDTH, Bound.OVERHEAD, Bound.COMPUTE]
    assert [BOUND_ORDER[code] for code in codes] == expected
    for index, bound in enumerate(expected):
        assert classify_bound(compute[index], memory[index], overhead[index]) is bound


@given(flop=positive, moved=positive)
def test_cost_of_one_operator_is_the_vectorised_roofline_time(flop, moved):
    platform = derive_platform(load_platform("h100-sxm"), kernel_overhead_s=3e-6)
    result = cost(Operator("op", flop, moved, "bf16"), platform)
    efficiency = platform.efficiency
    expected = roofline_time(
        flop,
        moved,
        platform.peak("bf16"),
        platform.main_memory.bandwidth_bytes_per_s,
        efficiency.compute,
        efficiency.memory,
        platform.kernel_overhead_s,
    )
    assert result.time_s == float(expected)
    assert result.time_s == float(
        operator_time_s(result.compute_time_s, result.memory_time_s, result.overhead_s)
    )


@pytest.mark.parametrize("name", ["a100-sxm-80gb", "h100-sxm", "apple-m2-ultra", "mi300x", "b200"])
def test_vectorised_peak_is_the_peak_of_the_dtype_chosen_for_the_width(name):
    # peak_for_bits (used by genz on whole grids) must pick what compute_dtype_for_bits
    # picks one width at a time, at every width up to the platform's widest dtype.
    platform = load_platform(name)
    widest = max(DTYPE_BITS[dtype] for dtype in platform.peak_flops_per_s)
    widths = np.arange(1.0, widest + 0.25, 0.25)
    expected = [platform.peak(platform.compute_dtype_for_bits(bits)) for bits in widths]
    np.testing.assert_array_equal(peak_for_bits(platform, widths), expected)
    assert float(peak_for_bits(platform, 16.0)) == expected[list(widths).index(16.0)]
