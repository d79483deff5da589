"""Every shipped hardware preset loads, carries a source, and bad files fail clearly."""

import pytest

from roofline import InputError, list_platforms, load_platform

REQUIRED_PRESETS = {
    "a100-sxm-80gb",
    "h100-sxm",
    "h200-sxm",
    "b200",
    "l4",
    "rtx-4090",
    "jetson-agx-orin-64gb",
    "jetson-orin-nano-8gb",
    "mi300x",
    "apple-m2-ultra",
    "apple-m4-pro",
    "xeon-8480",
    "raspberry-pi-5",
    # devices of the LLM-Inference-Bench measurements
    "a100-sxm-40gb",
    "mi250-gcd",
    "gaudi2",
    "intel-max-1550",
    "sn40l",
}


def test_required_presets_are_shipped():
    assert set(list_platforms()) >= REQUIRED_PRESETS


@pytest.mark.parametrize("name", list_platforms())
def test_preset_loads_with_source_and_sane_values(name):
    platform = load_platform(name)
    assert platform.name == name
    assert len(platform.source) > 20
    assert platform.main_memory.bandwidth_bytes_per_s > 1e9
    assert platform.main_memory.capacity_bytes >= 4e9
    assert all(peak > 1e10 for peak in platform.peak_flops_per_s.values())


def test_h100_values_are_spec_sheet_values():
    h100 = load_platform("h100-sxm")
    assert h100.peak("bf16") == pytest.approx(989.4e12)
    assert h100.main_memory.bandwidth_bytes_per_s == pytest.approx(3.35e12)
    # 81559 MiB as nvidia-smi reports it (80 GiB less the driver's share)
    assert h100.main_memory.capacity_bytes == pytest.approx(81559 * 2**20, rel=1e-4)


@pytest.mark.parametrize(
    ("name", "fp16_tflops", "bandwidth_gb_per_s", "capacity_gb"),
    [
        ("a100-sxm-40gb", 312, 1555, 40),  # NVIDIA A100 datasheet, 40GB SXM column
        ("mi250-gcd", 362.1 / 2, 3276.8 / 2, 64),  # half of an MI250 module
        ("gaudi2", 432, 2450, 96),
        ("intel-max-1550", 838.9, 3276.8, 128),
        ("sn40l", 638, 1600, 64),  # HBM tier only
    ],
)
def test_llm_inference_bench_devices_carry_their_spec_values(
    name, fp16_tflops, bandwidth_gb_per_s, capacity_gb
):
    platform = load_platform(name)
    assert platform.peak("fp16") == pytest.approx(fp16_tflops * 1e12)
    assert platform.main_memory.bandwidth_bytes_per_s == pytest.approx(bandwidth_gb_per_s * 1e9)
    # the vendors' "GB" of HBM are GiB (data/hardware/README.md)
    assert platform.main_memory.capacity_bytes == pytest.approx(capacity_gb * 2**30, rel=1e-4)


def _write(tmp_path, text):
    path = tmp_path / "hw.yaml"
    path.write_text(text)
    return path


MINIMAL = "name: x\nsource: test\npeak_tflops: {bf16: 1}\nmemory: [{name: m, bandwidth_gb_per_s: 1, capacity_gb: 1}]\n"


def test_minimal_file_loads(tmp_path):
    assert load_platform(_write(tmp_path, MINIMAL)).peak("bf16") == 1e12


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: [unclosed", "not valid YAML"),
        ("- a\n- b\n", "expected a mapping"),
        (MINIMAL + "bandwith: 3\n", "unknown key 'bandwith'"),
        (MINIMAL.replace("source: test\n", ""), "missing required key 'source'"),
        (
            MINIMAL.replace("bandwidth_gb_per_s: 1", "bandwidth_gb_per_s: -1"),
            "must be a number of GB/s in (0, 1e+08], got -1",
        ),
        (MINIMAL.replace("{bf16: 1}", "{bf17: 1}"), "unknown dtype 'bf17'"),
        (MINIMAL.replace("{bf16: 1}", "{bf16: fast}"), "must be a number"),
        (MINIMAL + "efficiency: {compute: 1.5}\n", "efficiency.compute must be in (0, 1]"),
    ],
)
def test_bad_yaml_gives_one_line_error(tmp_path, text, message):
    with pytest.raises(InputError) as info:
        load_platform(_write(tmp_path, text))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_preset_lists_names():
    with pytest.raises(InputError, match=r"unknown hardware 'h1000' .*; accepted: .*h100-sxm"):
        load_platform("h1000")


def test_preset_names_ignore_case():
    assert load_platform("H100-SXM") == load_platform("h100-sxm")


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("h100-sx", "'h100-sxm'"),
        ("RTX-4909", "'rtx-4090'"),
        ("jetson-orin-nano", "'jetson-orin-nano-8gb'"),
    ],
)
def test_near_miss_preset_name_gets_a_suggestion(typed, suggested):
    with pytest.raises(InputError, match="did you mean") as info:
        load_platform(typed)
    hint = str(info.value).split("did you mean ", 1)[1].split("?", 1)[0]
    assert suggested in hint


def test_far_miss_gets_no_suggestion():
    with pytest.raises(InputError) as info:
        load_platform("quantum-annealer")
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        # the value as written in the file (GB/s, TFLOP/s, us), never its SI conversion
        (
            ("bandwidth_gb_per_s: 1", "bandwidth_gb_per_s: -3350"),
            "memory[0].bandwidth_gb_per_s must be a number of GB/s in (0, 1e+08], got -3350",
        ),
        (
            ("{bf16: 1}", "{bf16: 0}"),
            "peak_tflops.bf16 must be a number of TFLOP/s in (0, 1e+06], got 0",
        ),
        (
            ("capacity_gb: 1", "capacity_gb: -80"),
            "memory[0].capacity_gb must be a number of GB in (0, 1e+06], got -80",
        ),
    ],
)
def test_file_errors_name_the_file_and_echo_the_files_unit(tmp_path, replace, message):
    path = _write(tmp_path, MINIMAL.replace(*replace))
    with pytest.raises(InputError) as info:
        load_platform(path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("power_w: -7\n", "power_w must be a number of W in (0, 1e+06], got -7"),
        (
            "kernel_overhead_us: -2\n",
            "kernel_overhead_us must be a number of us in [0, 1e+06], got -2",
        ),
        ("efficiency: {compute: 1.5}\n", "efficiency.compute must be in (0, 1], got 1.5"),
        (
            "interconnect: {link_bandwidth_gb_per_s: -450, link_latency_us: 2}\n",
            "interconnect.link_bandwidth_gb_per_s must be a number of GB/s in (0, 1e+06], got -450",
        ),
        (
            "interconnect: {link_bandwidth_gb_per_s: 450, link_latency_us: 2, devices_per_node: 0}\n",
            "interconnect.devices_per_node must be an integer in [1, 65536], got 0",
        ),
    ],
)
def test_errors_of_optional_sections_name_the_file(tmp_path, extra, message):
    path = _write(tmp_path, MINIMAL + extra)
    with pytest.raises(InputError) as info:
        load_platform(path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("interconnect: [450]\n", "interconnect must be a mapping"),
        ("efficiency: 0.5\n", "efficiency must be a mapping"),
        ("power_model: 300\n", "power_model must be a mapping"),
        ("interconnect: {link_latency: 2}\n", "interconnect: unknown key 'link_latency'"),
        ("efficiency: {compute_eff: 1}\n", "efficiency: unknown key 'compute_eff'"),
        ("power_model: {idle: 50}\n", "power_model: unknown key 'idle'"),
    ],
)
def test_an_optional_section_must_be_a_mapping_of_its_keys(tmp_path, extra, message):
    path = _write(tmp_path, MINIMAL + extra)
    with pytest.raises(InputError) as info:
        load_platform(path)
    assert str(info.value).startswith(f"{path}: {message}")
