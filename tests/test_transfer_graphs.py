"""The CUDA-graph attribute of the transferable model and the scoping of device terms
to the runtimes that measured them: the rules read the row's stack, and synthetic fits
whose true structure is known recover it."""

import dataclasses

import numpy as np
import pytest

from calibration import Measurement
from calibration.store import SourceInfo, StoredRow
from calibration.transfer import (
    PRIORS,
    SCOPED_PRIORS,
    Layout,
    Prior,
    fit_transfer,
    one_runtime_levels,
    predict_times,
    prior_means,
)
from calibration.transfer_graphs import decode_graphs
from calibration.transfer_terms import build_terms, with_graphs


def _row(runtime="vllm", hw="h100-sxm", date="2024-06", batch=1, source="lab", **extra):
    row = Measurement(
        model=extra.pop("model", "llama-3.1-8b"),
        hw=hw,
        runtime=runtime,
        batch=batch,
        input_tokens=extra.pop("input_tokens", 128),
        output_tokens=extra.pop("output_tokens", 128),
        ttft_s=1.0,
        itl_s=1.0,
        source=source,
    )
    harness = extra.pop("harness", "offline_generate")
    return StoredRow(row, SourceInfo(source, harness, "", date), "synthetic")


@pytest.mark.parametrize(
    ("item", "kind", "expected"),
    [
        (_row("vllm", date="2024-03"), "nvidia-gpu", True),  # after vllm#1926
        (_row("vllm", date="2023-10"), "nvidia-gpu", False),  # before it
        (_row("vllm", date="2024-10"), "amd-gpu", True),
        (_row("vllm", date="2024-10"), "intel-gpu", False),  # XPU backend: eager
        (_row("vllm", date=""), "nvidia-gpu", True),  # undated: read against current releases
        (_row("llama.cpp", date="2024-10"), "nvidia-gpu", True),  # llama.cpp#6766
        (_row("llama.cpp", date="2024-10", batch=4), "nvidia-gpu", False),  # batch 1 only
        (_row("llama.cpp", date="2024-05"), "nvidia-gpu", False),  # merge month: eager
        (_row("llama.cpp", date="2024-10"), "apple-soc", False),  # Metal
        (_row("llama.cpp", date="2025-02"), "amd-gpu", False),  # HIP graphs off by default
        (_row("other", date="", source="github:pytorch-labs/gpt-fast"), "nvidia-gpu", True),
        (_row("other", date="2024-01", source="github:casper-hansen/AutoAWQ"), "nvidia-gpu", False),
        (_row("tensorrt-llm", date="2024-10"), "nvidia-gpu", False),  # opt-in before 2025-07
    ],
)
def test_the_graph_attribute_follows_runtime_date_device_and_batch(item, kind, expected):
    assert decode_graphs([item], [kind]).tolist() == [expected]


def _graph_set():
    """One lab's eager rows (vLLM, 2023) and one lab's graph rows (vLLM, 2024), a 1B
    and an 8B model at short prompts, where launch costs are a large share."""
    rows = []
    for source, date in (("lab-eager", "2023-10"), ("lab-graphs", "2024-06")):
        for model in ("llama-3.2-1b", "llama-3.1-8b"):
            for tokens in (16, 32, 64, 128, 256):
                for batch in (1, 2, 4, 8):
                    rows.append(
                        _row(
                            "vllm",
                            date=date,
                            batch=batch,
                            source=source,
                            model=model,
                            input_tokens=tokens,
                            output_tokens=tokens,
                        )
                    )
    return rows


def _synthetic(stored, truth):
    """Terms (with the opt-in CUDA-graph attribute) whose measured times are the model's
    own at ``truth`` ((block, offset) -> value; the rest at the prior means)."""
    terms = build_terms(stored, graphs=True)
    layout = Layout.of(terms)
    params = prior_means(layout)
    for (block, offset), value in truth.items():
        params[layout.blocks[block].start + offset] = value
    times = predict_times(terms, layout, params, with_source=True)
    return dataclasses.replace(terms, measured=times), layout, params


def test_a_graph_engines_decode_launch_cost_is_recovered_as_the_graph_factor():
    stored = _graph_set()
    assert not build_terms(stored).graphs.any()  # opt-in: the default model has none
    probe = build_terms(stored, graphs=True)
    assert probe.graphs.tolist() == [s.info.date == "2024-06" for s in stored]
    # 10 us per kernel eager, 3 us replayed as a graph.
    kappa = float(np.log(10e-6))
    terms, layout, _ = _synthetic(stored, {("glob", 2): kappa, ("graphs", 0): float(np.log(0.3))})
    # 80 rows a lab: the shipped prior (0.7, sd 0.3 in log: 0.3 is 2.8 sd below it)
    # holds the factor near it, the data pull it a little towards the truth; a wide prior shows the data identify it (prefill pays kappa, decode
    # kappa x gamma, and a 1B and an 8B model tell launches from bytes), to within
    # what the lab's own random effects absorb.
    everything = np.ones(len(terms), bool)
    shipped = fit_transfer(terms, everything)
    assert 0.3 < float(np.exp(shipped.params[layout.blocks["graphs"]][0])) < 0.7
    wide = {"log_graph": Prior(PRIORS["log_graph"].mean, 5.0)}
    fit = fit_transfer(terms, everything, priors=wide)
    gamma = float(np.exp(fit.params[layout.blocks["graphs"]][0]))
    assert gamma == pytest.approx(0.3, rel=0.25)
    values = fit.row_terms()
    np.testing.assert_allclose(values["kappa"][~probe.graphs], 10e-6, rtol=0.1)
    np.testing.assert_allclose(values["kappa_decode"][~probe.graphs], 10e-6, rtol=0.1)
    np.testing.assert_allclose(values["kappa_decode"][probe.graphs], 3e-6, rtol=0.35)

    def worst(fitted):
        return np.abs(fitted.predict()["itl_s"] / terms.measured["itl_s"] - 1).max()

    assert worst(fit) < 0.03
    # Without the attribute one kappa per stack must serve both passes: the graph rows'
    # decode is charged the launch cost their prefill pays, or their prefill less.
    blind = fit_transfer(with_graphs(terms, False), everything)
    assert worst(blind) > max(0.03, 2 * worst(fit))
    assert Layout.of(with_graphs(terms, False)).blocks["graphs"] == slice(
        layout.size - 1, layout.size - 1
    )


def _scope_set():
    """Device A (h100-sxm) measured on deepspeed (and held-out vLLM rows); device B
    (a100-sxm-80gb) on deepspeed and vLLM, vLLM also on A100-40GB, one lab."""
    rows = []
    for hw, runtime in (
        ("h100-sxm", "deepspeed"),
        ("h100-sxm", "vllm"),
        ("a100-sxm-80gb", "deepspeed"),
        ("a100-sxm-80gb", "vllm"),
        ("a100-sxm-40gb", "vllm"),
    ):
        for tokens in (128, 1024):
            for batch in (1, 8, 32):
                rows.append(
                    _row(
                        runtime,
                        hw=hw,
                        date="2023-01",
                        batch=batch,
                        input_tokens=tokens,
                        output_tokens=tokens,
                    )
                )
    return rows


def test_a_one_runtime_devices_stack_effect_stays_with_that_runtime():
    stored = _scope_set()
    probe = build_terms(stored)
    held_out = np.array([s.row.hw == "h100-sxm" and s.row.runtime == "vllm" for s in stored])
    single = one_runtime_levels(probe.device, probe.runtime.index, ~held_out)
    assert dict(zip(probe.device.names, single.tolist(), strict=True)) == {
        "a100-sxm-40gb": True,
        "a100-sxm-80gb": False,
        "h100-sxm": True,
    }
    # DeepSpeed reaches exp(-1.5) of the compute and memory efficiency odds on the H100
    # only; vLLM on the H100 has no such term and no fit sees it.
    key = probe.class_runtime.names.index("h100-sxm|deepspeed")
    truth = {("class_runtime", 3 * key): -1.5, ("class_runtime", 3 * key + 1): -1.5}
    terms, layout, _ = _synthetic(stored, truth)
    h100 = probe.device.names.index("h100-sxm")
    moved, error = {}, {}
    for kind, priors in (("scoped", SCOPED_PRIORS), ("unscoped", None)):
        fit = fit_transfer(terms, ~held_out, priors=priors)
        moved[kind] = abs(fit.params[layout.blocks["device_c"]][h100])
        predicted = fit.predict(held_out, with_source=False)["ttft_s"]
        error[kind] = np.abs(predicted / terms.measured["ttft_s"][held_out] - 1).max()
    # Scoped (opt-in), the H100's device term (what another stack on it is given) stays
    # at its prior: the device x runtime term takes DeepSpeed's effect. With the default
    # (ordinary) device prior a share of it leaks into the device and so into vLLM on
    # the H100.
    assert moved["scoped"] < 0.01
    assert moved["unscoped"] > max(0.03, 3 * moved["scoped"])
    assert error["scoped"] < error["unscoped"]
