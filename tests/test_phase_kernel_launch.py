"""A launch cost per pass: ``kernel_launch_s`` inside ``prefill:`` / ``decode:`` blocks
(genz.runtime_phase, genz.RuntimeProfile.kernel_launch, genz.runtime_cost.phase_launch)."""

from __future__ import annotations

import pytest
from test_runtime_devices import HW, document, kernels, phase, run, value

from genz import runtime_from_dict
from roofline import InputError, load_platform

MODEL = "llama-3.2-1b"


def with_launch(entry: dict[str, object], seconds: float) -> dict[str, object]:
    return {**entry, "kernel_launch_s": value(seconds)}


def test_a_decode_launch_cost_changes_decode_only_and_is_paid_per_kernel():
    eager = run(document(kernel_launch_s=value(8e-6)), model=MODEL)
    graphs = run(
        document(kernel_launch_s=value(8e-6), decode=with_launch(phase(), 2e-6)), model=MODEL
    )
    prefill, decode = kernels(MODEL)
    assert float(graphs.ttft_s[0]) == float(eager.ttft_s[0])  # prefill stays eager
    assert float(eager.tpot_s[0] - graphs.tpot_s[0]) == pytest.approx(6e-6 * decode, rel=1e-9)
    assert prefill > 0 and decode > 0


def test_a_phase_without_its_own_falls_back_to_the_top_level_value():
    top = runtime_from_dict(document(kernel_launch_s=value(8e-6)))
    assert top.phases["decode"].kernel_launch_s is None
    platform = load_platform(HW)
    assert top.kernel_launch(platform, "decode") == top.kernel_launch(platform) == 8e-6
    same = run(document(kernel_launch_s=value(8e-6)), model=MODEL)
    explicit = run(
        document(
            kernel_launch_s=value(8e-6),
            prefill=with_launch(phase(), 8e-6),
            decode=with_launch(phase(), 8e-6),
        ),
        model=MODEL,
    )
    assert float(same.tpot_s[0]) == float(explicit.tpot_s[0])
    assert float(same.ttft_s[0]) == float(explicit.ttft_s[0])


def test_the_most_specific_launch_cost_wins():
    platform = load_platform(HW)
    devices = {HW: {"prefill": phase(), "decode": with_launch(phase(), 1e-6)}}
    classes = {platform.device_class: {"decode": with_launch(phase(), 3e-6)}}
    profile = runtime_from_dict(
        document(
            kernel_launch_s=value(9e-6),
            decode=with_launch(phase(), 5e-6),
            device_classes=classes,
            devices=devices,
        )
    )
    assert profile.kernel_launch(platform, "decode") == 1e-6  # the preset's phase
    assert profile.kernel_launch(platform, "prefill") == 9e-6  # nothing more specific
    del devices[HW]["decode"]["kernel_launch_s"]
    devices[HW]["kernel_launch_s"] = value(2e-6)
    profile = runtime_from_dict(
        document(kernel_launch_s=value(9e-6), device_classes=classes, devices=devices)
    )
    assert profile.kernel_launch(platform, "decode") == 2e-6  # the preset's own
    profile = runtime_from_dict(
        document(
            kernel_launch_s=value(9e-6), decode=with_launch(phase(), 5e-6), device_classes=classes
        )
    )
    assert profile.kernel_launch(platform, "decode") == 3e-6  # its class's phase
    gaudi = load_platform("gaudi2")
    assert gaudi.device_class != platform.device_class
    assert profile.kernel_launch(gaudi, "decode") == 5e-6  # the default phase


@pytest.mark.parametrize(
    ("where", "entry", "message"),
    [
        (
            "decode",
            with_launch(phase(), 2e-3),
            r"decode\.kernel_launch_s: value must be a number in \[0, 0\.001\]",
        ),
        ("prefill", with_launch(phase(), -1.0), r"prefill\.kernel_launch_s: value must be"),
        (
            "decode",
            {**phase(), "kernel_launch_s": {"value": 1e-6}},
            r"decode\.kernel_launch_s: needs 'source'",
        ),
    ],
)
def test_a_bad_phase_launch_cost_is_one_line_naming_the_field(where, entry, message):
    with pytest.raises(InputError, match=message) as error:
        runtime_from_dict(document(**{where: entry}))
    assert "\n" not in str(error.value)
