"""Requirements solver: tight bisection, binding SLO/resource, device search, bad SLOs."""

import dataclasses
import json

import pytest

from genz.model import load_model
from genz.params import parameter_count
from genz.predictor import predict
from genz.scaled_models import scale_model, with_gqa, with_mla
from genz.scenario import Parallelism, Scenario
from roofline import Bound, InputError, derive_platform, load_platform
from search.sizing.mesh import mesh_candidates
from search.sizing.requirements import (
    AXES,
    METHODS,
    ServiceLevel,
    check_attainable,
    find_requirement,
    scaled_platform,
)
from search.sizing.slo import check_slo

CHAT = Scenario(batch=1, input_tokens=1024, output_tokens=256)


@pytest.fixture(scope="module")
def llama8b():
    return load_model("llama-3.1-8b")


@pytest.fixture(scope="module")
def h100():
    return load_platform("h100-sxm")


def meets(model, platform, scenario, slo) -> bool:
    return all(check.ok for check in check_slo(predict(model, platform, scenario), slo))


# (method, SLO, scenario, binding SLO, binding resource); each needs a scale != 1.
AXIS_CASES = [
    # 8B bf16 decode reads ~16 GB per step: 5 ms needs more than H100's 3.35 TB/s x 0.8.
    ("bandwidth", ServiceLevel(max_tpot_s=0.005), CHAT, "tpot", Bound.MEMORY_BANDWIDTH),
    # 1024-token prefill is ~17 TFLOP: 50 ms needs less than half an H100's compute.
    ("compute", ServiceLevel(max_ttft_s=0.05), CHAT, "ttft", Bound.COMPUTE),
    # 16 coding-agent contexts of 50k tokens hold ~107 GB of KV cache: beyond 80 GB.
    (
        "capacity",
        ServiceLevel(),
        Scenario(batch=16, input_tokens=49152, output_tokens=1024),
        "capacity",
        Bound.CAPACITY,
    ),
    ("joint", ServiceLevel(max_ttft_s=0.01, max_tpot_s=0.004), CHAT, "ttft", Bound.COMPUTE),
    (
        "link",
        ServiceLevel(max_ttft_s=0.04),
        Scenario(batch=1, input_tokens=4096, output_tokens=256, parallelism=Parallelism(tp=4)),
        "ttft",
        Bound.COMPUTE,
    ),
]


@pytest.mark.parametrize(("method", "slo", "scenario", "binding", "bound"), AXIS_CASES)
def test_axis_bisection_is_tight(llama8b, h100, method, slo, scenario, binding, bound):
    result = find_requirement(llama8b, h100, scenario, slo, method=method)
    assert result.success and result.status == 0
    assert result.scale != pytest.approx(1.0, abs=0.02)
    assert meets(llama8b, scaled_platform(h100, method, result.scale), scenario, slo)
    weaker = scaled_platform(h100, method, result.scale / 1.05)
    assert not meets(llama8b, weaker, scenario, slo)
    assert (result.binding_slo, result.binding_bound) == (binding, bound)


def test_others_unlimited_gives_a_lower_bound(llama8b, h100):
    slo = ServiceLevel(max_ttft_s=0.05, max_tpot_s=0.01)
    for method in ("bandwidth", "compute"):
        alone = find_requirement(llama8b, h100, CHAT, slo, method=method)
        bound = find_requirement(llama8b, h100, CHAT, slo, method=method, others="unlimited")
        assert bound.success
        assert bound.scale <= alone.scale * 1.01


@pytest.mark.parametrize("method", METHODS)
def test_every_method_returns_the_scipy_style_contract(llama8b, h100, method):
    slo = ServiceLevel(max_ttft_s=0.5, max_tpot_s=0.02)
    scenario = dataclasses.replace(CHAT, parallelism=Parallelism(tp=2))
    result = find_requirement(llama8b, h100, scenario, slo, method=method)
    assert isinstance(result.success, bool)
    assert result.success == (result.status == 0)
    assert result.message.startswith(method)
    assert result.method == method
    json.dumps(result.to_dict())


def test_axis_that_cannot_help_reports_best_figure(llama8b, h100):
    # Prefill of 32k tokens is compute-bound: bandwidth alone cannot bring TTFT to 0.2 s.
    scenario = Scenario(batch=1, input_tokens=32768, output_tokens=16)
    result = find_requirement(
        llama8b, h100, scenario, ServiceLevel(max_ttft_s=0.2), method="bandwidth"
    )
    assert not result.success and result.status == 1
    assert "best at 1024x" in result.message and "TTFT" in result.message
    assert result.binding_slo == "ttft" and result.binding_bound == Bound.COMPUTE


def test_devices_search_finds_the_fewest(h100):
    model = load_model("llama-3.1-70b")
    slo = ServiceLevel(max_tpot_s=0.025)
    result = find_requirement(model, h100, CHAT, slo, method="devices")
    # 141 GB of bf16 weights need 2 H100s; at tp2 each reads 70 GB per step at
    # 3.35 TB/s x 0.8: 26 ms > 25 ms, so 4 devices.
    assert result.success and result.devices == 4
    assert result.binding_slo == "tpot" and result.binding_bound == Bound.MEMORY_BANDWIDTH
    for mesh in mesh_candidates(model, h100, CHAT.batch, 256):
        if mesh.devices < result.devices:
            scenario = dataclasses.replace(CHAT, parallelism=mesh)
            assert not meets(model, h100, scenario, slo)


def test_throughput_floor_adds_replicas(llama8b, h100):
    scenario = Scenario(batch=8, input_tokens=1024, output_tokens=256)
    slo = ServiceLevel(max_tpot_s=0.03, min_throughput_tokens_per_s=5000)
    result = find_requirement(llama8b, h100, scenario, slo, method="devices")
    mesh = result.scenario.parallelism
    assert result.success and mesh.dp > 1
    assert result.prediction.throughput_tokens_per_s >= 5000
    fewer = dataclasses.replace(scenario, parallelism=dataclasses.replace(mesh, dp=mesh.dp - 1))
    assert predict(llama8b, h100, fewer).throughput_tokens_per_s < 5000
    assert result.binding_slo == "throughput"


def test_cost_objective_needs_a_price(llama8b):
    unpriced = derive_platform(load_platform("h100-sxm"), price_usd_per_hour=None)
    with pytest.raises(InputError, match="needs a price"):
        find_requirement(llama8b, unpriced, CHAT, ServiceLevel(), objective="cost")


@pytest.mark.parametrize(
    ("slo", "fragment"),
    [
        ({"max_ttft_s": -1.0}, "max_ttft_s must be a finite number > 0"),
        ({"max_tpot_s": 0.0}, "max_tpot_s must be a finite number > 0"),
        ({"min_throughput_tokens_per_s": float("nan")}, "min_throughput_tokens_per_s must be"),
    ],
)
def test_bad_slo_values_are_rejected(slo, fragment):
    with pytest.raises(InputError, match=fragment):
        ServiceLevel(**slo)


@pytest.mark.parametrize("label", ["max_ttft_s", "max_tpot_s"])
def test_impossible_slo_names_the_best_achievable(llama8b, h100, label):
    # Kernel overheads (2 us per launch, ~10 per layer x 32 layers) remain with unlimited
    # resources: ~0.6 ms per pass, so 10 us cannot be met on any platform derived from H100.
    with pytest.raises(InputError) as error:
        check_attainable(llama8b, h100, CHAT, ServiceLevel(**{label: 1e-5}))
    message = str(error.value)
    assert "\n" not in message and label in message and "best achievable is" in message


def test_method_and_others_are_validated(llama8b, h100):
    with pytest.raises(InputError, match="method must be one of"):
        find_requirement(llama8b, h100, CHAT, ServiceLevel(), method="memory")
    with pytest.raises(InputError, match="others must be one of"):
        find_requirement(llama8b, h100, CHAT, ServiceLevel(), method="compute", others="none")
    with pytest.raises(InputError, match="needs an interconnect"):
        find_requirement(llama8b, load_platform("raspberry-pi-5"), CHAT, ServiceLevel(), "link")


def test_axes_scale_the_named_resources(h100):
    joint = scaled_platform(h100, "joint", 2.0)
    assert joint.main_memory.bandwidth_bytes_per_s == pytest.approx(6.7e12)
    assert joint.main_memory.capacity_bytes == pytest.approx(160e9)
    assert joint.peak("bf16") == pytest.approx(2 * 989.4e12)
    assert set(AXES) == {"bandwidth", "compute", "capacity", "link", "joint"}


@pytest.mark.parametrize("name", ["llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen2.5-7b"])
@pytest.mark.parametrize("ratio", [0.5, 2.0, 8.0])
def test_scale_model_hits_the_parameter_target(name, ratio):
    model = load_model(name)
    scaled = scale_model(model, params_scale=ratio)
    total = parameter_count(scaled).total / parameter_count(model).total
    # Layers are whole numbers: one layer of a 0.5x model is up to ~2% of its parameters.
    assert total == pytest.approx(ratio, rel=0.02)
    assert scaled.num_heads % scaled.num_kv_heads == 0
    assert scaled.vocab_size == model.vocab_size


def test_scale_model_experts():
    model = load_model("mixtral-8x7b")
    scaled = scale_model(model, experts_scale=2.0)
    assert scaled.num_experts == 16 and scaled.experts_per_token == 2
    # Routed experts are ~96% of Mixtral: doubling them nearly doubles the total.
    ratio = parameter_count(scaled).total / parameter_count(model).total
    assert 1.9 < ratio < 2.0
    with pytest.raises(InputError, match="experts_scale needs a MoE model"):
        scale_model(load_model("llama-3.1-8b"), experts_scale=2.0)


def test_attention_twins_keep_the_model_size():
    deepseek = load_model("deepseek-v3")
    gqa = with_gqa(deepseek)
    assert gqa.attention_type == "GQA" and gqa.num_kv_heads == 8
    assert parameter_count(gqa).total == pytest.approx(parameter_count(deepseek).total, rel=0.01)
    llama = load_model("llama-3.1-70b")
    mla = with_mla(llama)
    assert mla.attention_type == "MLA"
    assert parameter_count(mla).total == pytest.approx(parameter_count(llama).total, rel=0.04)
