"""The transferable calibration: store tagging, term attribution, conformal coverage."""

import dataclasses

import numpy as np
import pytest

from calibration import Measurement
from calibration.store import HARNESSES, SourceInfo, StoredRow, load_store, source_counts
from calibration.transfer import Layout, Prior, fit_transfer, predict_times
from calibration.transfer_terms import build_terms
from calibration.transfer_validation import (
    blend,
    choose_shrinkage,
    conformal_bounds,
    nested_shrinkage,
)
from roofline import InputError


def test_every_shipped_row_has_a_source_and_a_known_harness():
    stored = load_store()
    assert len(stored) > 3900
    counts = source_counts(stored)
    assert len(counts) >= 14
    assert all(item.info.harness in HARNESSES for item in stored)
    # LLM-Inference-Bench measured llama.cpp with llama-bench -pg, the others offline.
    bench = [s for s in stored if s.info.source_id == "argonne-lcf/LLM-Inference-Bench"]
    assert {s.info.harness for s in bench if s.row.runtime == "llama.cpp"} == {"llama-bench-pg"}
    assert {s.info.harness for s in bench if s.row.runtime == "vllm"} == {"offline_generate"}


def test_a_row_no_source_matches_is_refused(tmp_path):
    validation = tmp_path / "validation"
    (validation / "store").mkdir(parents=True)
    (validation / "runs.csv").write_text(
        "model,hw,runtime,batch,input_tokens,output_tokens,itl_s,source\n"
        "llama-3.1-8b,h100-sxm,vllm,1,128,128,0.01,somewhere unknown\n"
    )
    (validation / "store" / "sources.yaml").write_text(
        "files: [runs.csv]\nsources:\n  - {id: a, match: elsewhere, harness: other}\n"
    )
    with pytest.raises(InputError, match=r"runs.csv:2: no source .* matches"):
        load_store(tmp_path)


def _rows(model, hw, harness, source, lengths, batches):
    rows = []
    for tokens in lengths:
        for batch in batches:
            row = Measurement(
                model=model,
                hw=hw,
                runtime="vllm",
                batch=batch,
                input_tokens=tokens,
                output_tokens=tokens,
                ttft_s=1.0,
                itl_s=1.0,
                source=source,
            )
            rows.append(StoredRow(row, SourceInfo(source, harness, "", ""), "synthetic"))
    return rows


def _synthetic(stored, truth, stacks="runtime"):
    """Terms whose measured times are the model's own at ``truth`` (a parameter dict)."""
    terms = build_terms(stored, stacks=stacks)
    layout = Layout.of(terms)
    params = np.zeros(layout.size)
    from calibration.transfer import prior_means

    params[:] = prior_means(layout)
    for (block, offset), value in truth.items():
        params[layout.blocks[block].start + offset] = value
    times = predict_times(terms, layout, params, with_source=True)
    measured = {name: values.copy() for name, values in times.items()}
    return dataclasses.replace(terms, measured=measured), layout, params


def test_a_harness_per_request_cost_goes_to_its_stack_not_to_the_device():
    stored = _rows(
        "llama-3.1-8b", "h100-sxm", "server_load", "lab-a", (128, 512, 2048), (1, 8, 32)
    ) + _rows("llama-3.1-8b", "h100-sxm", "offline_generate", "lab-b", (128, 512, 2048), (1, 8, 32))
    probe = build_terms(stored)
    server = probe.stack.names.index("vllm|server_load|undated")
    # The server harness adds 30 ms per request (log rho offset of its stack).
    rho_offset = float(np.log(30e-3) - np.log(1e-3))
    terms, layout, truth = _synthetic(stored, {("stack", 5 * server + 4): rho_offset})
    fit = fit_transfer(terms, np.ones(len(terms), bool))
    stacks = fit.stack_terms()
    # The priors shrink it a little (27 rows a lab): within 25 %, and far above the
    # offline harness's.
    assert stacks["vllm|server_load|undated"]["rho"] == pytest.approx(30e-3, rel=0.25)
    assert (
        stacks["vllm|server_load|undated"]["rho"]
        > 5 * stacks["vllm|offline_generate|undated"]["rho"]
    )
    predicted = fit.predict()
    for name in ("ttft_s", "itl_s"):
        np.testing.assert_allclose(predicted[name], terms.measured[name], rtol=0.25)
    # The device's memory efficiency is not bent to absorb the request cost.
    device = layout.blocks["device_m"]
    assert abs(fit.params[device][0] - truth[device][0]) < 0.15


def test_one_per_kernel_cost_serves_a_1b_and_a_70b_model():
    lengths, batches = (128, 512, 1024, 4096), (1, 2, 4, 16)
    stored = _rows("llama-3.2-1b", "h100-sxm", "offline_generate", "lab", lengths, batches) + (
        _rows("llama-3.1-70b", "h100-sxm", "offline_generate", "lab", lengths, batches)
    )
    kappa = float(np.log(8e-6) - np.log(4e-6))  # 8 us per kernel
    terms, _, _ = _synthetic(stored, {("glob", 2): float(np.log(4e-6)) + kappa})
    fit = fit_transfer(terms, np.ones(len(terms), bool))
    np.testing.assert_allclose(fit.row_terms()["kappa"], 8e-6, rtol=0.1)
    np.testing.assert_allclose(fit.predict()["itl_s"], terms.measured["itl_s"], rtol=0.02)
    small = np.array([s.row.model == "llama-3.2-1b" for s in stored])
    # Launch overhead follows the kernels: a 1B model (16 layers) launches fewer than
    # a 70B model (80 layers) and is charged proportionally less.
    ratio = terms.kernels_decode[~small].mean() / terms.kernels_decode[small].mean()
    assert ratio == pytest.approx(80 / 16, rel=0.05)


def test_conformal_intervals_cover_the_nominal_share_on_synthetic_residuals():
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(40), 25)
    shift = rng.normal(0, 0.2, 40)[groups]  # group effects: the exchangeable unit
    measured = np.exp(shift + rng.normal(0, 0.1, len(groups)))
    predicted = np.ones(len(groups))
    low, high = conformal_bounds(predicted, measured, groups)
    inside = (measured >= predicted * low) & (measured <= predicted * high)
    assert 0.72 <= inside.mean() <= 0.88


def test_shrinkage_is_chosen_without_the_group_and_zero_keeps_physics():
    ideal = np.full(30, 1.0)
    model = np.full(30, 2.0)
    measured = np.full(30, 1.0)
    groups = np.repeat(np.arange(3), 10)
    assert choose_shrinkage(ideal, model, measured, groups) == 0.0
    np.testing.assert_allclose(blend(ideal, model, 0.0), ideal)
    measured_model = np.full(30, 2.0)
    shrunk, weights = nested_shrinkage(ideal, model, measured_model, groups)
    assert set(weights.values()) == {1.0}
    np.testing.assert_allclose(shrunk, model)


def test_the_ideal_profile_carries_physics_error_over_the_whole_store():
    """data/runtimes/ideal.yaml's accuracy block is re-derived from the store
    (benchmarks/physics_accuracy.py --write), value for value."""
    import yaml

    from calibration.physics_accuracy import physics_accuracy
    from roofline import data_dir

    shipped = yaml.safe_load((data_dir() / "runtimes" / "ideal.yaml").read_text())["accuracy"]
    assert shipped == physics_accuracy(load_store())


def test_a_quantised_formats_slower_prefill_goes_to_its_compute_factor():
    lengths, batches = (256, 512, 1024, 2048, 4096, 8192), (1, 2, 4, 8, 16, 32)
    sixteen = _rows("llama-3.1-8b", "h100-sxm", "offline_generate", "lab", lengths, batches)
    packed = [
        dataclasses.replace(
            item, row=dataclasses.replace(item.row, weight_bits=4.5, weight_format="awq")
        )
        for item in sixteen
    ]
    probe = build_terms(sixteen + packed, stacks="harness")
    four = probe.fmt.names.index("vllm|4")
    # Dequantising GEMMs of 4-bit weights run at exp(-0.5) of the 16-bit odds. With
    # 36 rows a format the shipped prior (sd 0.6) shrinks it by half; a wide prior
    # shows the factor is identified from prefill alone.
    terms, layout, _ = _synthetic(sixteen + packed, {("format_c", four): -0.5}, "harness")
    fit = fit_transfer(terms, np.ones(len(terms), bool), priors={"format_compute": Prior(0, 5)})
    assert fit.params[layout.blocks["format_c"]][four] == pytest.approx(-0.5, abs=0.15)
    # The memory-side factor of the format is not bent to absorb it.
    assert abs(fit.params[layout.blocks["format"]][four]) < 0.3
    np.testing.assert_allclose(fit.predict()["ttft_s"], terms.measured["ttft_s"], rtol=0.1)


def _bench_and_server_rows():
    return _rows("llama-3.1-8b", "h100-sxm", "llama-bench", "lab-a", (512,), (1,)) + _rows(
        "llama-3.1-8b", "h100-sxm", "server_load", "lab-b", (512,), (1,)
    )


def test_the_default_stacks_have_no_part_b_terms():
    # The default model (what the shipped profiles come from) has no harness level, no
    # compute-side format factor and a per-request cost on every row.
    terms = build_terms(_bench_and_server_rows())
    assert terms.stacks == "runtime"
    blocks = Layout.of(terms).blocks
    assert blocks["harness"].stop == blocks["harness"].start
    assert blocks["format_c"].stop == blocks["format_c"].start
    assert terms.request_cost_applies.tolist() == [True, True]
    part_b = Layout.of(build_terms(_bench_and_server_rows(), stacks="harness"))
    assert part_b.blocks["harness"].stop - part_b.blocks["harness"].start == 2 * 5
    with pytest.raises(ValueError, match="stacks must be one of runtime, harness"):
        build_terms(_bench_and_server_rows(), stacks="lab")


def test_llama_bench_rows_carry_no_per_request_cost_under_harness_stacks():
    # llama-bench reports the pass's own rate (pp512 = 512 / time of the prompt pass),
    # so no request set-up is in it; a server's time to first token has one.
    terms = build_terms(_bench_and_server_rows(), stacks="harness")
    layout = Layout.of(terms)
    from calibration.transfer import prior_means, row_terms

    params = prior_means(layout)
    assert terms.request_cost_applies.tolist() == [False, True]
    rho = row_terms(terms, layout, params, with_source=False)["rho"]
    assert rho[0] == 0.0
    assert rho[1] == pytest.approx(1e-3)  # the global prior mean: about a millisecond
    ttft = predict_times(terms, layout, params, with_source=False)["ttft_s"]
    assert ttft[1] - ttft[0] == pytest.approx(1e-3, rel=1e-6)
