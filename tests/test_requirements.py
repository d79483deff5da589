"""Requirements solver: tight bisection, binding SLO/resource, device search, bad SLOs."""

import dataclasses
import json

import pytest

from genz.hf_config import load_model
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


def meets(model, platform, scenario, slo) -> bool:
    return all(check.ok for check in check_slo(predict(model, platform, scenario), slo))


# (method, SLO, scenario, binding SLO, binding resource); each needs a scale != 1.
AXIS_CASES = [
    # 8B bf16 decode reads ~15.2 GB per step: 5 ms needs more than H100's 3.35 TB/s x 0.8.
    ("bandwidth", ServiceLevel(max_tpot_s=0.005), CHAT, "tpot", Bound.MEMORY_BANDWIDTH),
    # 1024-token prefill is ~14.6 TFLOP: 50 ms needs less than half an H100's compute.
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
    assert result.success == (result.status == 0)
    assert result.message.startswith(method)
    assert result.method == method
    # Success means the answer meets the SLO when predicted again from the platform and
    # mesh it returns (not from the search's internal state).
    assert result.success == meets(llama8b, result.platform, result.scenario, slo)
    if method != "devices":
        assert result.platform == scaled_platform(h100, method, result.scale)
        assert result.scenario.parallelism == scenario.parallelism
    # The summary survives JSON unchanged and says the same as the result.
    payload = json.loads(json.dumps(result.to_dict()))
    assert payload == result.to_dict()
    assert payload["success"] is result.success and payload["scale"] == result.scale
    mesh = result.scenario.parallelism
    assert payload["devices"] == mesh.tp * mesh.pp * mesh.ep * mesh.dp
    assert payload["binding_slo"] == result.binding_slo


#: Llama 3.1 8B (Meta's model card: 8.03e9 parameters, vocabulary 128256 x 4096 wide).
#: A decode step reads every weight once except the input embedding (a one-row gather):
#: (8.03e9 - 128256 * 4096) x 2 bytes = 15.01 GB, plus the KV cache at the mean decode
#: context 1024 + 256 / 2 = 1152 tokens: 1152 x 32 layers x (2 x 8 heads x 128) x 2 bytes.
LLAMA8B_DECODE_BYTES = (8.03e9 - 128256 * 4096) * 2 + 1152 * 32 * 2 * 8 * 128 * 2
#: 8 kernels per layer (2 norms, QKV, attention, output, up/gate, activation, down) x 32
#: layers + embedding, final norm and LM head, 2 us each on H100.
LLAMA8B_OVERHEAD_S = (8 * 32 + 3) * 2e-6


def test_bandwidth_requirement_is_the_bytes_per_token_over_the_slo(llama8b, h100):
    # Batch-1 decode is bandwidth-bound: TPOT = bytes / (s x 3.35 TB/s x 0.8) + overheads,
    # so s = bytes / ((SLO - overheads) x 2.68 TB/s): 1.26x, 0.60x, 0.29x for 5, 10, 20 ms.
    scales = []
    for max_tpot_s in (0.005, 0.010, 0.020):
        expected = LLAMA8B_DECODE_BYTES / ((max_tpot_s - LLAMA8B_OVERHEAD_S) * 3.35e12 * 0.8)
        slo = ServiceLevel(max_tpot_s=max_tpot_s)
        result = find_requirement(llama8b, h100, CHAT, slo, method="bandwidth")
        # 2 %: activations and attention's query/output vectors are left out of the count.
        assert result.scale == pytest.approx(expected, rel=0.02)
        scales.append(result.scale)
    # Doubling the SLO never needs more bandwidth; with fixed overheads, less than half.
    assert scales[0] > 2 * scales[1] > 4 * scales[2]


def test_compute_requirement_is_the_prefill_flop_over_the_slo(llama8b, h100):
    # 1024-token prefill: 2 FLOP per weight per token for all weights but the embedding
    # and the LM head (the LM head runs for the last token only), plus causal attention
    # 2 x layers x s^2 x d: 2 x 6.98e9 x 1024 + 2 x 32 x 1024^2 x 4096 = 1.457e13 FLOP.
    flop = 2 * (8.03e9 - 2 * 128256 * 4096) * 1024 + 2 * 32 * 1024**2 * 4096
    expected = flop / ((0.05 - LLAMA8B_OVERHEAD_S) * 989.4e12 * 0.7)
    result = find_requirement(llama8b, h100, CHAT, ServiceLevel(max_ttft_s=0.05), method="compute")
    # 5 %: the memory-bound norms, activations and softmax of prefill are left out.
    assert result.scale == pytest.approx(expected, rel=0.05)


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


@pytest.mark.parametrize(("max_tpot_s", "devices"), [(0.05, 2), (0.025, 4), (0.014, 8)])
def test_tighter_tpot_slo_needs_more_devices(h100, max_tpot_s, devices):
    # 70B decode reads (70.55e9 - 1.05e9 embedding) x 2 bytes = 139 GB per step, split over
    # tp devices at 3.35 TB/s x 0.8, plus 8 kernels x 80 layers x 2 us = 1.28 ms of
    # launches: tp2 27.2 ms, tp4 14.3 ms, tp8 7.8 ms before the 160 all-reduces per step
    # (ring: 2 (tp - 1) hops of 2 us plus a launch: 1 ms at tp2, 4.8 ms at tp8). 141 GB of
    # weights need at least 2 H100s. So 50 ms -> 2, 25 ms -> 4, 14 ms -> 8 devices,
    # whatever the all-reduce costs up to ring latency; a looser SLO never needs more.
    model = load_model("llama-3.1-70b")
    result = find_requirement(model, h100, CHAT, ServiceLevel(max_tpot_s=max_tpot_s), "devices")
    assert result.success and result.devices == devices


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


@pytest.mark.parametrize(
    ("method", "scaled"),
    [
        ("bandwidth", {"bandwidth"}),
        ("compute", {"compute"}),
        ("capacity", {"capacity"}),
        ("link", {"link"}),
        ("joint", {"bandwidth", "compute", "capacity"}),
    ],
)
def test_axes_scale_the_named_resources_only(h100, method, scaled):
    platform = scaled_platform(h100, method, 2.0)
    resources = {
        "bandwidth": (platform.main_memory.bandwidth_bytes_per_s, 3.35e12),
        "compute": (platform.peak("bf16"), 989.4e12),
        "capacity": (platform.main_memory.capacity_bytes, 85.521e9),  # 81559 MiB
        "link": (platform.interconnect.link_bandwidth_bytes_per_s, 450e9),
    }
    for name, (value, stock) in resources.items():
        assert value == pytest.approx(stock * (2.0 if name in scaled else 1.0)), name
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


@pytest.mark.parametrize(
    ("flags", "model_change", "scenario_change"),
    [
        (["--parallel-samples", "4"], {}, {"parallel_samples": 4}),
        (["--beam-width", "4"], {}, {"beam_width": 4}),
        (["--kv-offload", "0.5"], {}, {"kv_offload": 0.5}),
        (["--sliding-window", "1024"], {"sliding_window": 1024}, {}),
    ],
)
def test_requirements_cli_takes_mode_offload_and_window_axes(
    capsys, flags, model_change, scenario_change
):
    """`codesign requirements` with each axis equals `find_requirement` of the same
    model variant and scenario, and its prediction equals `predict` at the found scale."""
    from app.cli import main
    from genz import with_layer_mix

    fixed = ["requirements", "--model", "mistral-7b", "--base-hw", "h100-sxm", "--input", "8192"]
    main([*fixed, "--max-tpot-ms", "20", "--method", "bandwidth", "--json", *flags])
    found = json.loads(capsys.readouterr().out)["requirements"][0]
    model = with_layer_mix(load_model("mistral-7b"), **model_change)
    scenario = Scenario(input_tokens=8192, **scenario_change)
    base = load_platform("h100-sxm")
    direct = find_requirement(model, base, scenario, ServiceLevel(max_tpot_s=0.02), "bandwidth")
    assert found["scale"] == pytest.approx(direct.scale, rel=1e-12)
    scaled = derive_platform(base, memory_bandwidth_scale=direct.scale)
    assert found["prediction"]["tpot_s"] == pytest.approx(
        predict(model, scaled, scenario).tpot_s, rel=1e-9
    )
