"""The transferable model written as genz runtime profiles (calibration.transfer_profile):
genz predicts the stored rows as the model does; the generic profile holds only the terms
that transfer; the export command re-derives what it wrote."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from app.cli import main
from calibration.store import load_store
from calibration.transfer import fit_transfer, predict_times
from calibration.transfer_held_out import predict_rows
from calibration.transfer_profile import (
    fitted_stacks,
    generic_document,
    generic_values,
    stack_document,
    stack_graph_share,
)
from calibration.transfer_terms import (
    PASS_TIMED_HARNESSES,
    build_terms,
    with_device_priors,
    with_graphs,
    with_stacks,
    with_step_cost,
)
from genz import load_runtime, runtime_from_dict

COMMAND = "codesign calibrate-transfer --stacks all --out-dir test"


def _sample():
    """A sample of the store that has decode (ITL), prefill (TTFT) and batch-latency
    rows, quantised ones, FP8 rows of a device with a cited FP8 GEMM fraction,
    llama-bench rows and several stacks."""
    stored = load_store()
    rng = np.random.default_rng(7)
    sample = [stored[i] for i in sorted(rng.choice(len(stored), 240, replace=False))]
    quantised = [item for item in stored if item.row.weight_bits < 9][:25]
    fp8 = [item for item in stored if item.row.hw == "h100-sxm" and item.row.weight_bits == 8]
    bench = [item for item in stored if item.info.harness == "llama-bench"]
    return sample + quantised + fp8[:8] + bench[:: max(1, len(bench) // 12)]


@pytest.fixture(scope="module")
def fitted():
    """A short fit of the default model on `_sample` (the equalities below hold for any
    parameters, converged or not)."""
    terms = build_terms(_sample())
    return fit_transfer(terms, np.ones(len(terms), bool), max_nfev=6)


@pytest.fixture(scope="module")
def fitted_b(fitted):
    """Part B (``microbenchmarks/harness``) on `_sample`, at parameters moved off the
    prior by noise, so every block (harness levels, compute format factors, device
    terms) is far from 0 and a term the profile drops shows."""
    terms = with_stacks(with_device_priors(fitted.terms, "microbenchmarks"), "harness")
    fit = fit_transfer(terms, np.ones(len(terms), bool), max_nfev=2)
    noise = np.random.default_rng(3).normal(0.0, 0.3, fit.params.shape)
    return dataclasses.replace(fit, params=fit.params + noise)


@pytest.fixture(scope="module")
def fitted_graphs(fitted):
    """The opt-in CUDA-graph attribute and per-step cost on `_sample` (its vLLM and
    llama.cpp rows replay decode as graphs), a short fit moved off the prior by noise
    (so ``gamma`` and every ``tau`` differ from their prior means and from 1)."""
    terms = with_step_cost(with_graphs(fitted.terms, True), True)
    assert terms.graphs.any()
    fit = fit_transfer(terms, np.ones(len(terms), bool), max_nfev=2)
    noise = np.random.default_rng(5).normal(0.0, 0.3, fit.params.shape)
    return dataclasses.replace(fit, params=fit.params + noise)


@pytest.fixture(scope="module", params=["default", "part_b", "graphs"])
def any_fit(request, fitted, fitted_b, fitted_graphs):
    return {"default": fitted, "part_b": fitted_b, "graphs": fitted_graphs}[request.param]


def _profile_replays(fit, stack):
    """Per row, whether ``stack``'s profile gives its decode the graph launch cost."""
    share = stack_graph_share(fit, stack)
    kinds = [fit.terms.device_class.names[k] for k in fit.terms.device_class.index]
    return np.array([share.get(kind, 0.0) == 1.0 for kind in kinds])


def test_the_sample_has_every_metric_and_quantised_rows(fitted):
    for name in ("ttft_s", "itl_s", "batch_latency_s"):
        assert np.isfinite(fitted.terms.measured[name]).sum() >= 5, name
    assert any(item.row.weight_bits < 9 for item in fitted.terms.stored)


def test_stack_profiles_through_genz_predict_what_the_model_predicts(any_fit):
    fitted = any_fit
    expected = fitted.predict(with_source=False)
    terms = fitted.terms
    checked = {name: 0 for name in expected}
    worst = {"quantised": 0.0, "16-bit": 0.0}
    replayed = 0
    for stack in fitted_stacks(fitted):
        profile = runtime_from_dict(stack_document(fitted, stack, COMMAND))
        stacked = terms.stack.index == terms.stack.names.index(stack)
        got = predict_rows(terms, stacked, profile)
        agrees = _profile_replays(fitted, stack) == terms.graphs
        replayed += int((stacked & agrees & terms.graphs).sum())
        for name, values in expected.items():
            rows = stacked
            # A profile's decode launch cost is one per device (class): graphs or eager,
            # as most of the stack's rows there. A row on the other side (llama.cpp at
            # batch > 1, a year's stack that spans the merge) has the model's alone; its
            # prefill (TTFT) is still the profile's exactly.
            if name != "ttft_s":
                rows = rows & agrees
            measured = rows & np.isfinite(terms.measured[name])
            difference = np.abs(got[name][rows] / values[rows] - 1)
            bits = np.array([terms.stored[i].row.weight_bits for i in np.flatnonzero(rows)])
            for kind, chosen in (("quantised", bits < 15.5), ("16-bit", bits >= 15.5)):
                worst[kind] = max(worst[kind], float(difference[chosen].max(initial=0.0)))
            checked[name] += int(measured.sum())
    # decode (ITL), prefill (TTFT) and batch rows were all among the measured ones
    assert min(checked.values()) >= 5
    assert max(worst.values()) < 1e-12, worst
    assert replayed > 0 or not terms.graphs.any()  # graph rows' decode was compared


def test_part_b_profiles_carry_its_compute_format_factor_and_no_llama_bench_request_cost(
    fitted_b,
):
    """The terms part B adds reach the profile: a compute-efficiency scale per quantised
    format and device, and no request cost on a pass-timed (llama-bench) stack."""
    compute_scales, bench = [], []
    for stack in fitted_stacks(fitted_b):
        profile = runtime_from_dict(stack_document(fitted_b, stack, COMMAND))
        for device in profile.devices.values():
            compute_scales += list(device.compute_format_scales.values())
        if stack.split("|")[1] in PASS_TIMED_HARNESSES:
            bench.append(profile.request_overhead_s)
        else:
            assert profile.request_overhead_s > 0
    assert compute_scales and min(abs(scale - 1) for scale in compute_scales) > 0
    assert bench and all(cost == 0.0 for cost in bench)


def test_the_default_model_writes_no_compute_format_scale(fitted):
    """Bit-identity of the default profiles: with preset priors and no compute format
    term, no format carries a compute scale."""
    for stack in fitted_stacks(fitted):
        for device in stack_document(fitted, stack, COMMAND)["devices"].values():
            for scales in device.get("weight_formats", {}).values():
                assert "compute_efficiency_scale" not in scales


def test_the_generic_profile_is_the_model_with_every_stack_at_the_mean_of_stacks(any_fit):
    """Reference: the model's own prediction with the stack terms replaced by their mean
    over fitted stacks, no device x runtime term and the mean format offsets (part B:
    no harness level, the mean compute format offsets; llama-bench rows pay no request
    cost, the others the mean of the paying stacks')."""
    fitted = any_fit
    terms, layout = fitted.terms, fitted.layout
    generic = generic_values(fitted)
    params = fitted.params.copy()
    blocks = layout.blocks
    params[blocks["glob"]] = [
        generic.eff_c,
        generic.eff_m,
        np.log(generic.kappa),
        np.log(generic.sigma),
        np.log(generic.rho),
    ]
    for name in ("runtime", "harness", "stack", "class_runtime", "graphs"):
        params[blocks[name]] = 0.0
    if terms.step_cost:  # the per-step cost at the mean of stacks' (log scale)
        params[blocks["step_glob"]] = np.log(generic.tau)
        params[blocks["step_runtime"]] = 0.0
        params[blocks["step_stack"]] = 0.0
    params[blocks["format"]] = [
        generic.format_offsets.get(name.split("|")[1], 0.0) for name in terms.fmt.names
    ]
    if terms.stacks == "harness":
        params[blocks["format_c"]] = [
            generic.format_compute_offsets.get(name.split("|")[1], 0.0) for name in terms.fmt.names
        ]
    expected = predict_times(terms, layout, params, with_source=False)
    # ... and on each device class, the decode launch cost kappa x gamma ** share (share:
    # the fraction of fitted stacks that replay graphs there; a stack no row measured is
    # not known to replay them or not): the graph factor gamma ** share on every row.
    if terms.graphs.any():
        assert 0 < max(generic.graph_share.values()) < 1  # some stacks replay, some not
        gamma = float(np.exp(fitted.params[blocks["graphs"]][0]))
        kinds = np.array(terms.device_class.names)[terms.device_class.index]
        for kind, share in generic.graph_share.items():
            graph_params = params.copy()
            graph_params[blocks["graphs"]] = share * np.log(gamma)
            on = dataclasses.replace(terms, graphs=np.ones(len(terms), bool))
            per_class = predict_times(on, layout, graph_params, with_source=False)
            for name in expected:
                expected[name][kinds == kind] = per_class[name][kinds == kind]
    # rows whose stored bits are their nominal bits (runtimes without a formats file, or
    # 16-bit): the generic profile knows no runtime's storage
    plain = np.array(
        [
            item.row.weight_bits >= 15.5 or item.row.runtime not in ("llama.cpp", "vllm")
            for item in terms.stored
        ]
    )
    got = predict_rows(terms, plain, runtime_from_dict(generic_document(fitted, COMMAND)))
    for name, values in expected.items():
        np.testing.assert_allclose(got[name][plain], values[plain], rtol=1e-12)


def test_the_generic_profile_holds_no_stack_key_and_a_stack_profile_names_its_stack(fitted):
    generic = runtime_from_dict(generic_document(fitted, COMMAND))
    stack = fitted_stacks(fitted)[0]
    own = runtime_from_dict(stack_document(fitted, stack, COMMAND))
    assert generic.stack is None
    assert "|".join(own.stack.to_dict().values()) == stack
    assert own.domain is not None and own.domain.hardware


def test_profiles_stay_under_the_loader_size_limit(fitted):
    from genz.runtime import MAX_PROFILE_BYTES

    for document in [generic_document(fitted, COMMAND)] + [
        stack_document(fitted, stack, COMMAND) for stack in fitted_stacks(fitted)
    ]:
        assert len(yaml.safe_dump(document)) < MAX_PROFILE_BYTES


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--out-dir", "absent"], "--out-dir: folder does not exist"),
        (["--out-dir", ".", "--stacks", "vllm|nope|2024"], "--stacks: unknown stack 'vllm|nope"),
    ],
)
def test_cli_refuses_a_missing_folder_and_an_unknown_stack(
    tmp_path, capsys, monkeypatch, extra, message
):
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate-transfer", *extra]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_shipped_generic_profile_is_re_derived_from_its_command():
    """data/runtimes/transfer/transfer.yaml is what its calibrated_from command writes,
    but for its accuracy block: that one is measured out of source by its own command
    (26 held-out fits, `benchmarks/transfer_profiles.py --write-accuracy`), too long
    for a test; here it must at least name that command and every metric."""
    from calibration import rederive_transfer
    from roofline import data_dir

    path = data_dir() / "runtimes" / "transfer" / "transfer.yaml"
    shipped = load_runtime(path)
    command = yaml.safe_load(path.read_text(encoding="utf-8"))["kernel_launch_s"]["calibrated_from"]
    rederived = runtime_from_dict(rederive_transfer(shipped, command))
    # The fit stops at its evaluation limit, so the last bits of numpy's kernels (AVX-512
    # against AVX2) carry into its values: re-derived on an AVX-512 machine they moved by up
    # to 5.8e-5 relative. Every number within 1e-3, everything else equal.
    assert_close_profiles(rederived, dataclasses.replace(shipped, accuracy=None), rel=1e-3)
    assert load_runtime("transfer") == shipped
    if shipped.accuracy is not None:
        assert "benchmarks/transfer_profiles.py" in shipped.accuracy.calibrated_from
        assert set(shipped.accuracy.held_out_mape) == {"batch_latency_s", "ttft_s", "itl_s"}


def assert_close_profiles(got: object, want: object, rel: float, where: str = "profile") -> None:
    """``got`` equals ``want`` field by field, floats within ``rel`` (relative)."""
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if dataclasses.is_dataclass(got):
        for item in dataclasses.fields(got):
            name = item.name
            assert_close_profiles(getattr(got, name), getattr(want, name), rel, f"{where}.{name}")
    elif isinstance(got, dict):
        assert isinstance(want, dict) and sorted(got) == sorted(want), f"{where}: keys differ"
        for key in got:
            assert_close_profiles(got[key], want[key], rel, f"{where}[{key!r}]")
    elif isinstance(got, list | tuple):
        assert isinstance(want, list | tuple) and len(got) == len(want), f"{where}: lengths"
        for index, (a, b) in enumerate(zip(got, want, strict=True)):
            assert_close_profiles(a, b, rel, f"{where}[{index}]")
    elif isinstance(got, float):
        assert got == pytest.approx(want, rel=rel), f"{where}: {got!r} != {want!r}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def test_profile_comparison_can_fail():
    shipped = load_runtime("transfer")
    nudged = dataclasses.replace(shipped, kernel_launch_s=shipped.kernel_launch_s * 1.002)
    assert_close_profiles(shipped, shipped, rel=1e-3)
    with pytest.raises(AssertionError, match="kernel_launch_s"):
        assert_close_profiles(nudged, shipped, rel=1e-3)
