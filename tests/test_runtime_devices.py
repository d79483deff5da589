"""Per-kernel, per-request and per-device terms of a runtime profile (genz.runtime_devices)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from genz import load_model, runtime_from_dict
from genz.fitting import GridInputs, evaluate
from genz.params import WEIGHT_GROUPS
from roofline import InputError, load_platform

SOURCE = {"source": "test"}
MODEL = "llama-3-8b"
HW = "a100-sxm-40gb"


def value(number: float | str) -> dict[str, object]:
    return {"value": number, **SOURCE}


def phase(compute: float = 0.5, memory: float = 0.7, step: float = 1e-3) -> dict[str, object]:
    return {
        "compute_efficiency": value(compute),
        "memory_efficiency": value(memory),
        "step_overhead_s": value(step),
    }


def document(**extra: object) -> dict[str, object]:
    return {"name": "test", "prefill": phase(), "decode": phase(), **extra}


def inputs(bits: float = 16.0, batch: float = 4.0, prompt: float = 512.0) -> GridInputs:
    one = np.array([1.0])
    return GridInputs(
        batch=one * batch,
        input_tokens=one * prompt,
        output_tokens=one * 128,
        weight_bits={group: one * bits for group in WEIGHT_GROUPS},
        activation_bits=one * 16,
        kv_bits=one * 16,
        tp=one,
        pp=one,
        ep=one,
        dp=one,
        chunk=one * prompt,
    )


def run(profile_document: dict[str, object], hw: str = HW, model: str = MODEL, **kw: float):
    return evaluate(
        load_model(model), load_platform(hw), inputs(**kw), runtime_from_dict(profile_document)
    )


def kernels(model: str, hw: str = HW) -> tuple[float, float]:
    """Kernels one prefill and one decode pass launch: busy operators x layers, counted
    as the physics' own kernel overhead at 1 s per kernel."""
    platform = dataclasses.replace(load_platform(hw), kernel_overhead_s=1.0)
    counted = evaluate(load_model(model), platform, inputs())
    return float(counted.prefill.overhead_s.sum()), float(counted.decode.overhead_s.sum())


@pytest.mark.parametrize("model", ["llama-3.2-1b", "llama-2-70b"])
def test_kernel_launch_cost_is_paid_per_kernel_of_each_pass(model):
    base = run(document(), model=model)
    launched = run(document(kernel_launch_s=value(5e-6)), model=model)
    prefill, decode = kernels(model)
    assert float(launched.ttft_s[0] - base.ttft_s[0]) == pytest.approx(5e-6 * prefill, rel=1e-9)
    assert float(launched.tpot_s[0] - base.tpot_s[0]) == pytest.approx(5e-6 * decode, rel=1e-9)
    # ops x layers: a 70B model (80 layers) launches ~5x the kernels of a 1B one (16).
    assert decode > 0


def test_a_1b_model_pays_fewer_launches_than_a_70b_model_at_one_launch_cost():
    small, large = kernels("llama-3.2-1b")[1], kernels("llama-2-70b")[1]
    assert large / small == pytest.approx(80 / 16, rel=0.1)


def test_request_overhead_is_added_once_to_ttft_and_end_to_end_not_to_tpot():
    base = run(document())
    costed = run(document(request_overhead_s=value(0.03)))
    assert float(costed.ttft_s[0] - base.ttft_s[0]) == pytest.approx(0.03, rel=1e-9)
    assert float(costed.e2e_s[0] - base.e2e_s[0]) == pytest.approx(0.03, rel=1e-9)
    assert float(costed.tpot_s[0]) == float(base.tpot_s[0])


def test_a_device_entry_wins_over_its_class_and_leaves_other_devices_alone():
    classes = {"nvidia-gpu": {"prefill": phase(0.4, 0.6), "decode": phase(0.4, 0.6)}}
    devices = {HW: {"prefill": phase(0.3, 0.35), "decode": phase(0.3, 0.35)}}
    by_class = run(document(device_classes=classes))
    by_device = run(document(device_classes=classes, devices=devices))
    # decode at batch 4 is bandwidth-bound: time scales as 1 / memory efficiency
    assert float(by_device.tpot_s[0]) > 1.5 * float(by_class.tpot_s[0])
    other = "h100-sxm"
    assert float(run(document(device_classes=classes, devices=devices), hw=other).tpot_s[0]) == (
        float(run(document(device_classes=classes), hw=other).tpot_s[0])
    )


def test_a_device_entry_overrides_the_kernel_launch_cost_and_a_format_scale():
    formats = {
        "int4": {
            key: value(bits)
            for key, bits in (
                ("nominal_bits", 4.0),
                ("stored_bits", 4.25),
                ("embedding_bits", 16.0),
                ("lm_head_bits", 16.0),
            )
        }
    }
    devices = {
        HW: {
            "prefill": phase(),
            "decode": phase(),
            "kernel_launch_s": value(2e-5),
            "weight_formats": {"int4": {"memory_efficiency_scale": value(0.5)}},
        }
    }
    plain = run(document(weight_formats=formats, kernel_launch_s=value(1e-6)), bits=4.0)
    own = run(
        document(weight_formats=formats, kernel_launch_s=value(1e-6), devices=devices), bits=4.0
    )
    decode_kernels = kernels(MODEL)[1]
    memory_gain = float(own.decode.memory_s.sum()) / float(plain.decode.memory_s.sum())
    assert memory_gain == pytest.approx(2.0, rel=1e-9)  # scale 0.5 halves the bandwidth
    extra = float(own.decode.overhead_s.sum() - plain.decode.overhead_s.sum())
    assert extra == pytest.approx((2e-5 - 1e-6) * decode_kernels, rel=1e-9)


def test_new_terms_absent_leave_a_profile_unchanged():
    profile = runtime_from_dict(document())
    assert profile.kernel_launch_s == 0.0 and profile.request_overhead_s == 0.0
    assert not profile.devices and profile.stack is None


def test_stack_key_is_read_back():
    stack = {"runtime": "vllm", "harness": "offline_generate", "version_family": "2024"}
    assert runtime_from_dict(document(stack=stack)).stack.to_dict() == stack


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kernel_launch_s": value(-1e-6)}, r"kernel_launch_s: value must be a number in \[0, "),
        ({"kernel_launch_s": value(0.5)}, r"kernel_launch_s: value must be a number in \[0, 0.001"),
        ({"request_overhead_s": value(20.0)}, r"request_overhead_s: value must be .*\[0, 10\]"),
        ({"devices": {"a100-sxm-4gb": {}}}, "devices.a100-sxm-4gb: not a hardware preset"),
        ({"devices": {HW: {"decode": phase()}}}, f"devices.{HW}: missing 'prefill'"),
        (
            {"devices": {HW: {"prefill": phase(), "decode": phase(), "launch": 1}}},
            "unknown key 'launch'",
        ),
        (
            {"devices": {HW: {"prefill": phase(), "decode": phase(memory=1.5)}}},
            f"devices.{HW}.decode.memory_efficiency: value must be",
        ),
        (
            {
                "devices": {
                    HW: {
                        "prefill": phase(),
                        "decode": phase(),
                        "weight_formats": {"Q4": {"memory_efficiency_scale": value(0.5)}},
                    }
                }
            },
            "weight_formats.Q4: not a format of weight_formats",
        ),
        ({"stack": {"runtime": "vllm", "harness": ""}}, "stack.harness: must be a string"),
        ({"stack": {"runtime": "vllm", "harness": "x", "version": "1"}}, "unknown key 'version'"),
    ],
)
def test_new_fields_are_checked_with_one_line_errors(change, message):
    with pytest.raises(InputError, match=message):
        runtime_from_dict(document(**change))


def test_new_fields_need_phases():
    with pytest.raises(InputError, match="kernel_launch_s needs prefill and decode"):
        runtime_from_dict({"name": "x", "kernel_launch_s": value(1e-6)})
