"""Decoding-mode, image, offload and architecture axes of `evaluate_grid`: every grid
point equals `predict` of the same scenario (and model variant), and bad values get
one-line errors naming the axis."""

import numpy as np
import pytest

from genz import (
    ARCHITECTURE_AXES,
    MODE_AXES,
    Parallelism,
    Precision,
    Scenario,
    evaluate_grid,
    load_model,
    load_runtime,
    predict,
    with_layer_mix,
)
from roofline import InputError, load_platform

H100 = load_platform("h100-sxm")  # the preset with a host section (offload)


def assert_point_equals_predict(grid, index, model, scenario, runtime=None):
    expected = predict(model, H100, scenario, runtime=runtime)
    got = {
        "ttft_s": grid.ttft_s[index],
        "tpot_s": grid.tpot_s[index],
        "e2e_s": grid.e2e_s[index],
        "throughput_tokens_per_s": grid.throughput_tokens_per_s[index],
        "weights_bytes": grid.weights_bytes[index],
        "kv_cache_bytes": grid.kv_cache_bytes[index],
    }
    want = {
        "ttft_s": expected.ttft_s,
        "tpot_s": expected.tpot_s,
        "e2e_s": expected.e2e_s,
        "throughput_tokens_per_s": expected.throughput_tokens_per_s,
        "weights_bytes": expected.footprint.weights_bytes,
        "kv_cache_bytes": expected.footprint.kv_cache_bytes,
    }
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12), key
    assert bool(grid.fits[index]) == expected.capacity.fits
    assert grid.bound_names("prefill")[index] == expected.prefill.bound.value
    assert grid.bound_names("decode")[index] == expected.decode.bound.value


@pytest.mark.parametrize("runtime", [None, "vllm"])
@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("parallel_samples", [1, 4, 16]),
        ("beam_width", [1, 4, 8]),
        ("weight_offload", [0.0, 0.25, 1.0]),
        ("kv_offload", [0.0, 0.5, 1.0]),
    ],
)
def test_mode_axis_equals_predict(name, values, runtime):
    model = load_model("llama-3.1-8b")
    profile = None if runtime is None else load_runtime(runtime)
    grid = evaluate_grid(
        model,
        H100,
        batch=8,
        input_tokens=2048,
        output_tokens=256,
        runtime=profile,
        **{name: values},
    )
    for index, value in enumerate(values):
        scenario = Scenario(batch=8, input_tokens=2048, output_tokens=256, **{name: value})
        assert_point_equals_predict(grid, index, model, scenario, profile)


def test_samples_multiply_throughput_and_beams_do_not():
    """n samples are all returned; k beams return one sequence per request."""
    model = load_model("llama-3.1-8b")
    samples = evaluate_grid(model, H100, parallel_samples=[1, 4])
    beams = evaluate_grid(model, H100, beam_width=[1, 4])
    assert samples.tpot_s[1] == beams.tpot_s[1]  # the same decode batch
    ratio = samples.throughput_tokens_per_s / beams.throughput_tokens_per_s
    assert ratio.tolist() == pytest.approx([1.0, 4.0])


def test_images_axis_equals_predict():
    model = load_model("llava-1.5-7b")
    grid = evaluate_grid(model, H100, batch=[1, 4], images=[[0], [1], [3]], input_tokens=64)
    for row, images in enumerate((0, 1, 3)):
        for column, batch in enumerate((1, 4)):
            scenario = Scenario(batch=batch, input_tokens=64, images=images)
            assert_point_equals_predict(grid, (row, column), model, scenario)
    # each image adds its 576 tokens to the prompt: TTFT grows with the images
    assert np.all(np.diff(grid.ttft_s, axis=0) > 0)


def test_offload_bounds_by_the_host_link():
    """Offloading every weight of a 16 GB model makes decode read 16 GB over the host
    link each step: TPOT = weight bytes / link bandwidth, bound by the interconnect."""
    model = load_model("llama-3.1-8b")
    grid = evaluate_grid(model, H100, weight_offload=[0.0, 1.0])
    full = predict(model, H100, Scenario()).footprint.weights_bytes
    assert grid.tpot_s[1] == pytest.approx(full / H100.host.link_bandwidth_bytes_per_s)
    assert grid.weights_bytes[1] == 0.0
    assert grid.bound_names("decode").tolist()[1] == "interconnect"


def test_window_axis_equals_predict_of_the_variant():
    model = load_model("mistral-7b")
    windows = [0, 1024, 4096]
    grid = evaluate_grid(
        model, H100, sliding_window=windows, input_tokens=[[8192], [32000]], output_tokens=64
    )
    for column, window in enumerate(windows):
        variant = with_layer_mix(model, sliding_window=window)
        for row, tokens in enumerate((8192, 32000)):
            scenario = Scenario(input_tokens=tokens, output_tokens=64)
            assert_point_equals_predict(grid, (row, column), variant, scenario)
    # KV stops growing with the context on windowed layers (0: full attention grows)
    assert grid.kv_cache_bytes[1, 0] > 3 * grid.kv_cache_bytes[0, 0]
    assert grid.kv_cache_bytes[1, 1] == grid.kv_cache_bytes[0, 1]


def test_attention_layer_axis_equals_predict_of_the_variant():
    model = load_model("jamba-v0.1")
    counts = [1, 4, 8, 16]
    grid = evaluate_grid(model, H100, attention_layers=counts, tp=2, input_tokens=16_000)
    kv = []
    for index, count in enumerate(counts):
        variant = with_layer_mix(model, attention_layers=count)
        assert variant.num_attention_layers == count
        assert variant.num_ssm_layers == model.num_layers - count
        scenario = Scenario(input_tokens=16_000, parallelism=Parallelism(tp=2))
        assert_point_equals_predict(grid, index, variant, scenario)
        kv.append(grid.kv_cache_bytes[index])
    # Each attention layer replacing an SSM layer adds its KV, 2 kv_heads head_dim 16-bit
    # values per token of the 16,128-token context (tp 2 splits the heads), less that
    # layer's fixed SSM state (well under 1 % of it here): linear in the count.
    per_layer = 16_128 * 2 * model.num_kv_heads * model.head_dim * 2 / 2
    slopes = np.diff(kv) / np.diff(counts)
    assert slopes == pytest.approx(np.full(3, slopes[0]), rel=1e-12)
    assert 0.99 * per_layer < slopes[0] < per_layer


def test_even_spread_reproduces_jambas_pattern():
    """Jamba: attention every 8th layer (offset 4), 4 of 32: the even spread puts one in
    every block of 8 as well."""
    model = load_model("jamba-v0.1")
    variant = with_layer_mix(model, attention_layers=model.num_attention_layers)
    assert variant is model
    spread = with_layer_mix(model, attention_layers=8)
    kinds = spread.layer_types
    assert [kinds[i : i + 4].count("full_attention") for i in range(0, 32, 4)] == [1] * 8


@pytest.mark.parametrize(
    ("model", "axes", "message"),
    [
        ("llama-3.1-8b", {"parallel_samples": 2, "beam_width": 2}, "cannot both exceed 1"),
        ("llama-3.1-8b", {"images": 1}, "images: Llama 3.1 8B has no vision encoder"),
        ("llama-3.1-8b", {"parallel_samples": 2.5}, r"parallel_samples must be an integer"),
        ("llama-3.1-8b", {"kv_offload": 1.5}, r"kv_offload must be in \[0, 1\]"),
        ("llama-3.1-8b", {"attention_layers": 8}, "attention_layers: .* is not an attention"),
        (
            "jamba-v0.1",
            {"attention_layers": 33},
            r"attention_layers must be an integer in \[1, 32\]",
        ),
        ("llama-3.1-8b", {"sliding_window": -1}, r"sliding_window must be in \[0, 1e\+08\]"),
    ],
)
def test_bad_axis_values_are_one_line_errors(model, axes, message):
    with pytest.raises(InputError, match=message):
        evaluate_grid(load_model(model), H100, **axes)


def test_offload_needs_a_host_link():
    with pytest.raises(InputError, match=r"need a host memory link: .* has no 'host'"):
        evaluate_grid(load_model("llama-3.1-8b"), load_platform("a100-sxm-80gb"), kv_offload=0.5)


def test_grid_keywords_cover_the_declared_axes():
    import inspect

    keywords = set(inspect.signature(evaluate_grid).parameters)
    assert set(MODE_AXES) | set(ARCHITECTURE_AXES) <= keywords


def test_precision_passes_through_unchanged():
    """The new axes leave a plain grid's numbers as before (defaults are no-ops)."""
    model = load_model("llama-3.1-8b")
    plain = evaluate_grid(model, H100, batch=[1, 8], kv_bits=8)
    explicit = evaluate_grid(
        model, H100, batch=[1, 8], kv_bits=8, parallel_samples=1, images=0, weight_offload=0.0
    )
    assert plain.tpot_s.tolist() == explicit.tpot_s.tolist()
    scenario = Scenario(batch=8, precision=Precision(kv_bits=8))
    assert_point_equals_predict(plain, 1, model, scenario)
