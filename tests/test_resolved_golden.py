"""Golden outputs of the cost path with every runtime profile, recorded before the profile
was resolved once (`genz.resolved`): the refactor must change no bit.

`tests/resolved_golden.json` holds, for a grid of models (dense MHA, GQA, MoE, MLA + MoE)
x platforms (H100: FP8 arithmetic; A100: none, so an FP8 KV cache is emulated; an Apple
SoC; Jetson AGX Orin) x scenarios (batch, lengths, prefill chunks, weight bits 16 / 8 / 4,
KV bits 16 / 8, mixed per-layer bits, tp / pp / ep) x every shipped profile, ``ideal`` and
None (physics), plus two profiles built here (inherited efficiencies with a device-class
override; weight formats without phases): TTFT and TPOT (at 11 significant digits) and a SHA-256 of
every number of the `genz.Prediction` (per-operator compute, memory, interconnect and
overhead times, time, layers, FLOP, bytes and bound of both passes, memory footprint,
throughputs, suggestions); for each model x platform x profile the same digest of an
`evaluate_grid` and a `cost_breakdown` (per-group bit arrays), and for a few of them of a
`step_cost` table (what the serving simulator consumes).

Numbers are compared at 11 significant digits (``"%.10e"``), not bit for bit: numpy picks
its SIMD kernels by CPU at run time, and on an AVX-512 machine its transcendental ufuncs
differ from the AVX2 ones in the last bits (main's MoE step and grid digests failed that
way on such a machine; with ``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL"`` they matched).
A change of 1e-9 relative or more on any number still moves a digest (tested below).

Regenerate (only when a change is *meant* to move numbers, and say so in the commit):
``python tests/test_resolved_golden.py --write``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from genz import (
    KVFormat,
    Parallelism,
    PhaseProfile,
    Precision,
    RuntimeProfile,
    Scenario,
    WeightFormat,
    cost_breakdown,
    evaluate_grid,
    list_runtimes,
    load_model,
    load_runtime,
    predict,
    step_cost,
)
from roofline import load_platform

GOLDEN = Path(__file__).with_name("resolved_golden.json")
MODELS = ("llama-2-7b", "llama-3.1-8b", "mixtral-8x7b", "deepseek-v3")
PLATFORMS = ("h100-sxm", "a100-sxm-80gb", "apple-m2-max-30c", "jetson-agx-orin-64gb")
#: (model, platform) pairs whose step-cost tables are recorded (a few: each takes ~0.1 s).
STEP_CASES = (("llama-3.1-8b", "h100-sxm"), ("mixtral-8x7b", "a100-sxm-80gb"))
#: StepCost fields added after the recording, with the value they take for these models
#: (no state-space or linear-attention layers, no LoRA adapters, no vision tower): left out
#: of the digests at that value.
ADDED_STEP_FIELDS: dict[str, Any] = {
    "state_prefill_s": None,
    "state_pass_s": None,
    "state_pass_work": None,
    "lora_adapters": 0.0,
    "vision_s": None,
    "vision_work": None,
    "adapter_tables": None,
    "adapter_weight_s": None,
    "adapter_work": None,
}

_INHERIT = PhaseProfile(None, 0.55, 2e-3, 1e-4, 0.5)
_OVERRIDE = PhaseProfile(0.3, None, 1e-3)
#: Inherited efficiencies (default and nvidia-gpu override), routing independence < 1,
#: an all-reduce latency per class, a weight format and an FP8 KV format.
INHERIT = RuntimeProfile(
    name="test-inherit",
    phases={"prefill": _INHERIT, "decode": _INHERIT},
    all_reduce_latency_s=4e-6,
    weight_formats=(WeightFormat("q4", 4.0, 4.5, 16.0, 6.0, 0.8),),
    device_classes={"nvidia-gpu": {"decode": _OVERRIDE}},
    class_all_reduce_latency_s={"apple-soc": 9e-6},
    kv_formats=(KVFormat("fp8", 8.0, "fp8", 0.7),),
    class_kv_scales={"nvidia-gpu": {"fp8": 0.6}},
)
#: Weight formats only: stored bits change, efficiencies stay the preset's.
FORMATS_ONLY = RuntimeProfile(
    name="test-formats-only",
    weight_formats=(
        WeightFormat("q8", 8.0, 8.5, 8.5, 8.5, 1.2),
        WeightFormat("q4", 4.0, 4.8, 6.0, 6.0),
    ),
)


def profiles() -> dict[str, RuntimeProfile | None]:
    """Every shipped profile, physics (None) and the two built here."""
    named: dict[str, RuntimeProfile | None] = {"none": None}
    named.update({name: load_runtime(name) for name in list_runtimes()})
    named.update({INHERIT.name: INHERIT, FORMATS_ONLY.name: FORMATS_ONLY})
    return named


def scenarios(moe: bool, mesh: bool = True) -> list[Scenario]:
    """Five scenarios; ``mesh`` False: every one on one device (a platform without an
    interconnect)."""
    ep = 2 if moe else 1
    mixed = Precision(
        weight_bits=4.0,
        layer_bits={
            0: {"attn_qkv": 16.0, "ffn_up_gate": 8.0},
            1: {"attn_out": 8.0, "experts": 8.0},
        },
    )
    cases = [
        Scenario(batch=1, input_tokens=128, output_tokens=128),
        Scenario(
            batch=8,
            input_tokens=2048,
            output_tokens=256,
            prefill_chunk=512,
            precision=Precision(weight_bits=8.0, kv_bits=8.0),
        ),
        Scenario(
            batch=32,
            input_tokens=512,
            output_tokens=512,
            precision=Precision(weight_bits=4.0),
            parallelism=Parallelism(tp=2),
        ),
        Scenario(
            batch=4,
            input_tokens=1000,
            output_tokens=64,
            prefill_chunk=300,
            precision=Precision(kv_bits=8.0, activation_bits=8.0),
            parallelism=Parallelism(tp=4, pp=2, ep=ep),
        ),
        Scenario(batch=16, input_tokens=300, output_tokens=40, precision=mixed),
    ]
    if mesh:
        return cases
    return [dataclasses.replace(case, parallelism=Parallelism()) for case in cases]


#: How a number enters a digest: 11 significant digits (see the module docstring).
NUMBER_FORMAT = "%.10e"


def _rounded(value: float) -> str:
    return NUMBER_FORMAT % value


class _Digest:
    """SHA-256 over numbers (at `NUMBER_FORMAT`) and strings, in the order fed."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def add(self, value: Any) -> None:
        if isinstance(value, str):
            self._hash.update(b"s" + value.encode())
        elif isinstance(value, bool | int | float | np.number | np.ndarray):
            array = np.ascontiguousarray(np.asarray(value))
            if array.dtype.kind == "U":  # bound names
                self.add(array.tolist())
                return
            if array.dtype == bool:
                self._hash.update(f"b{array.shape}".encode() + array.tobytes())
                return
            text = " ".join(np.char.mod(NUMBER_FORMAT, array.astype(float).ravel()))
            self._hash.update(f"f{array.shape}".encode() + text.encode())
        elif value is None:
            self._hash.update(b"none")
        elif isinstance(value, list | tuple):
            self._hash.update(f"[{len(value)}".encode())
            for item in value:
                self.add(item)
        elif isinstance(value, dict):
            for key in sorted(value):
                self.add(str(key))
                self.add(value[key])
        else:
            self.add(str(value))

    def hex(self) -> str:
        return self._hash.hexdigest()[:20]


PASS_FIELDS = (
    "layers",
    "flop_per_run",
    "bytes_per_run",
    "compute_s",
    "memory_s",
    "interconnect_s",
    "overhead_s",
    "time_s",
    "bound_code",
)


def _pass(digest: _Digest, cost: Any) -> None:
    digest.add([cost.names, [kind.name for kind in cost.kinds], cost.groups, cost.blocks])
    digest.add(cost.collective)
    for name in PASS_FIELDS:
        digest.add(getattr(cost, name))


def prediction_digest(result: Any) -> str:
    digest = _Digest()
    digest.add(
        [
            result.ttft_s,
            result.tpot_s,
            result.e2e_s,
            result.throughput_tokens_per_s,
            result.throughput_tokens_per_s_per_device,
            result.request_tokens_per_s,
            result.decode_tokens_per_s,
            result.prefill_tokens_per_s,
            result.footprint.weights_bytes,
            result.footprint.kv_cache_bytes,
            result.footprint.activation_bytes,
            result.capacity.fits,
            [str(s) for s in result.suggestions],
        ]
    )
    for phase in (result.prefill, result.decode):
        digest.add([phase.time_s, phase.flop, phase.bytes, phase.bound.name])
        _pass(digest, phase.pass_cost)
    return digest.hex()


def grid_digest(model: Any, platform: Any, runtime: RuntimeProfile | None) -> str:
    digest = _Digest()
    tp = 1.0 if platform.interconnect is None else 2.0
    grid = evaluate_grid(
        model,
        platform,
        batch=np.array([1.0, 4.0, 64.0])[:, None, None],
        input_tokens=np.array([256.0, 3000.0])[None, :, None],
        output_tokens=200.0,
        weight_bits=np.array([16.0, 8.0, 4.0, 4.0])[None, None, :],
        kv_bits=np.array([16.0, 8.0, 16.0, 8.0])[None, None, :],
        tp=np.array([1.0, tp])[None, :, None],
        prefill_chunk=1024.0,
        runtime=runtime,
    )
    digest.add(grid.to_dict())
    breakdown = cost_breakdown(
        model,
        platform,
        Scenario(batch=4, input_tokens=700, output_tokens=90),
        group_bits={"attn_qkv": np.array([16.0, 8.0, 4.0]), "lm_head": np.array([16.0, 16.0, 8.0])},
        runtime=runtime,
        kv_bits=np.array([16.0, 8.0, 8.0]),
    )
    for cost in (breakdown.prefill, breakdown.decode):
        _pass(digest, cost)
    digest.add(
        [
            breakdown.ttft_s,
            breakdown.tpot_s,
            breakdown.e2e_s,
            breakdown.weights_bytes,
            breakdown.kv_cache_bytes,
            breakdown.activation_bytes,
        ]
    )
    return digest.hex()


def step_digest(model: Any, platform: Any, runtime: RuntimeProfile | None) -> str:
    digest = _Digest()
    for precision in (Precision(), Precision(weight_bits=4.0, kv_bits=8.0)):
        cost = step_cost(
            model, platform, precision, max_tokens=96, max_sequences=12, runtime=runtime
        )
        digest.add(
            {
                name: value
                for name, value in vars(cost).items()
                if not name.startswith("_")
                and not (name in ADDED_STEP_FIELDS and _unset(value, ADDED_STEP_FIELDS[name]))
            }
        )
    return digest.hex()


def _unset(value: Any, default: Any) -> bool:
    return value is None if default is None else isinstance(value, float) and value == default


def record(models: tuple[str, ...] = MODELS) -> Iterator[tuple[str, Any]]:
    """(key, value) of every recorded case of ``models``, in a fixed order."""
    named = profiles()
    for model_name in models:
        model = load_model(model_name)
        for platform_name in PLATFORMS:
            platform = load_platform(platform_name)
            cases = scenarios(model.is_moe, platform.interconnect is not None)
            for profile_name, runtime in named.items():
                key = f"{model_name}|{platform_name}|{profile_name}"
                rows = []
                for scenario in cases:
                    result = predict(model, platform, scenario, runtime=runtime)
                    rows.append(
                        [
                            _rounded(result.ttft_s),
                            _rounded(result.tpot_s),
                            prediction_digest(result),
                        ]
                    )
                yield f"predict|{key}", rows
                yield f"grid|{key}", grid_digest(model, platform, runtime)
                if (model_name, platform_name) in STEP_CASES:
                    yield f"steps|{key}", step_digest(model, platform, runtime)


@pytest.mark.parametrize("model", MODELS)
def test_every_output_equals_the_recorded_one(model):
    recorded = json.loads(GOLDEN.read_text())
    golden = {key: value for key, value in recorded.items() if key.split("|")[1] == model}
    got = dict(record((model,)))
    assert sorted(got) == sorted(golden), "the recorded grid changed: regenerate deliberately"
    differing = [key for key in golden if got[key] != golden[key]]
    assert not differing, f"{len(differing)} cases differ, first: {differing[:5]}"


@pytest.mark.parametrize("which", ["predict", "grid"])
def test_the_digest_sees_a_one_in_a_billion_change(which):
    """The comparison can fail: a relative change of 1e-9 on one input moves the digest."""
    model, platform = load_model("llama-3.1-8b"), load_platform("h100-sxm")
    runtime = load_runtime("vllm")
    nudged = RuntimeProfile(
        name=runtime.name,
        phases={
            name: PhaseProfile(
                phase.compute_efficiency,
                phase.memory_efficiency * (1.0 + 1e-9),
                phase.step_overhead_s,
                phase.sequence_overhead_s,
                phase.routing_independence,
            )
            for name, phase in runtime.phases.items()
        },
        all_reduce_latency_s=runtime.all_reduce_latency_s,
        weight_formats=runtime.weight_formats,
        kv_formats=runtime.kv_formats,
    )
    if which == "predict":
        scenario = scenarios(False)[0]
        assert prediction_digest(predict(model, platform, scenario, runtime=nudged)) != (
            prediction_digest(predict(model, platform, scenario, runtime=runtime))
        )
    else:
        assert grid_digest(model, platform, nudged) != grid_digest(model, platform, runtime)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    GOLDEN.write_text(json.dumps(dict(record()), indent=0, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes)")
