"""Bit allocation on real presets: genz coupling, platforms, formats, sensitivity files, CLI."""

import json

import numpy as np
import pytest
import yaml

from app.cli import main
from genz.bits_file import load_precision, precision_to_dict
from genz.hf_config import load_model
from genz.params import parameter_count
from genz.predictor import predict
from genz.scenario import Precision, Scenario
from roofline import InputError, load_platform
from search.bits.costs import decision_units, unit_costs
from search.bits.formats import parse_formats
from search.bits.quantizer import QuantizeBudgets, quantize
from search.bits.sensitivity import (
    load_hessian_traces,
    load_sensitivity_table,
    proxy_sensitivity,
)

LLAMA = load_model("llama-3.1-8b")
JETSON = load_platform("jetson-agx-orin-64gb")
H100 = load_platform("h100-sxm")


@pytest.mark.parametrize("name", ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3"])
@pytest.mark.parametrize("bits", [16.0, 8.0, 4.0])
def test_costs_summed_over_units_equal_genz_predict(name, bits):
    # Every unit at the same width: constant + sum of unit costs must be what genz predicts
    # for that Precision (dense GQA, MoE, and MLA with leading dense layers).
    model = load_model(name)
    units = decision_units(model)
    formats = parse_formats("16,8,4")
    scenario = Scenario(batch=4, input_tokens=2048, output_tokens=256)
    costs, constants = unit_costs(model, JETSON, scenario, units, formats, kv_bits=8.0)
    column = [f.bits for f in formats].index(bits)
    total = {q: constants[q] + costs[q][:, column].sum() for q in costs}
    groups = {u.group: bits for u in units}
    precision = Precision(kv_bits=8.0, group_bits=groups)
    result = predict(model, JETSON, Scenario(4, 2048, 256, precision=precision))
    assert total["tpot_s"] == pytest.approx(result.tpot_s, rel=1e-12)
    assert total["ttft_s"] == pytest.approx(result.ttft_s, rel=1e-12)
    assert total["weights_bytes"] == pytest.approx(result.footprint.weights_bytes, rel=1e-12)
    assert total["kv_cache_bytes"] == pytest.approx(result.footprint.kv_cache_bytes, rel=1e-12)
    assert total["memory_bytes"] == pytest.approx(result.footprint.total_bytes, rel=1e-12)


def test_unit_weight_bytes_are_params_times_bits_over_8():
    units = decision_units(LLAMA)
    costs, _ = unit_costs(LLAMA, JETSON, Scenario(), units, parse_formats("8,4"), 16.0)
    ffn_down = next(i for i, u in enumerate(units) if u.group == "ffn_down")
    assert costs["weights_bytes"][ffn_down].tolist() == [4096 * 14336, 4096 * 14336 / 2]
    # int4 weights take exactly half the bytes of int8 for every unit (no rounding of bits/8).
    assert np.allclose(costs["weights_bytes"][:, 1], costs["weights_bytes"][:, 0] / 2)


def test_mixed_allocation_is_reproduced_by_predict_from_the_bits_file(tmp_path):
    result = quantize(
        LLAMA,
        JETSON,
        Scenario(),
        "16,8,4",
        QuantizeBudgets(max_memory_bytes=6e9, max_tpot_s=0.040),
    )
    assert result.success and result.result.status == "optimal"
    assert result.precision.layer_bits, "expected a per-layer mix for this budget"
    path = tmp_path / "bits.yaml"
    path.write_text(yaml.safe_dump(precision_to_dict(result.precision)))
    check = predict(LLAMA, JETSON, Scenario(precision=load_precision(path)))
    totals = result.result.totals
    assert check.tpot_s == pytest.approx(totals["tpot_s"], rel=1e-12)
    assert check.ttft_s == pytest.approx(totals["ttft_s"], rel=1e-12)
    assert check.footprint.total_bytes == pytest.approx(totals["memory_bytes"], rel=1e-12)
    assert totals["memory_bytes"] <= 6e9 and totals["tpot_s"] <= 0.040


def test_same_budget_binds_on_the_bandwidth_bound_board_not_on_the_gpu():
    # Batch-1 decode of 16 GB of fp16 weights: Jetson (204.8 GB/s x 0.75) needs ~105 ms a
    # token, an H100 (3.35 TB/s x 0.8) ~6 ms. A 40 ms TPOT budget forces low bits on the
    # Jetson and leaves the H100 at 16 bits.
    budgets = QuantizeBudgets(max_tpot_s=0.040)
    jetson = quantize(LLAMA, JETSON, Scenario(), "16,8,4", budgets)
    h100 = quantize(LLAMA, H100, Scenario(), "16,8,4", budgets)
    assert jetson.result.binding == ("tpot_s",)
    assert h100.result.binding == ()
    assert set(h100.precision.group_bits.values()) == {16.0}
    assert min(jetson.precision.group_bits.values()) < 16.0
    # Same allocation, different answers: the Jetson's allocation costed on the H100.
    on_h100 = predict(LLAMA, H100, Scenario(precision=jetson.precision))
    assert on_h100.tpot_s < jetson.result.totals["tpot_s"] / 10


def test_8bit_formats_use_the_int8_peak_only_where_the_platform_lists_one():
    # Prefill of 1024 tokens is compute-bound on both. With 8-bit activations, int8 weights
    # run at the Jetson's int8 peak (85 vs 42.5 TFLOP/s: half the time); the Apple M1 lists
    # no int8 rate, so the same format is weight-only there and saves no compute time.
    units = decision_units(LLAMA)
    up = next(i for i, u in enumerate(units) if u.group == "ffn_up_gate")
    scenario = Scenario(precision=Precision(activation_bits=8.0))
    formats = parse_formats("16,8")
    jetson, _ = unit_costs(LLAMA, JETSON, scenario, units, formats, 16.0)
    m1, _ = unit_costs(LLAMA, load_platform("apple-m1-8c"), scenario, units, formats, 16.0)
    assert jetson["ttft_s"][up, 1] / jetson["ttft_s"][up, 0] == pytest.approx(0.5, rel=0.01)
    assert m1["ttft_s"][up, 1] / m1["ttft_s"][up, 0] == pytest.approx(1.0, rel=0.01)


def test_fp8_with_8bit_activations_needs_an_fp8_peak():
    scenario = Scenario(precision=Precision(activation_bits=8.0))
    with pytest.raises(InputError, match="fp8 peak on jetson-agx-orin-64gb"):
        quantize(LLAMA, JETSON, scenario, "16,fp8", QuantizeBudgets())
    assert quantize(LLAMA, H100, scenario, "16,fp8", QuantizeBudgets()).success


@pytest.mark.parametrize(
    ("text", "names", "bits"),
    [
        ("16,8,4", ("fp16", "int8", "int4"), (16, 8, 4)),
        ("int4,mxfp4,fp8", ("fp8", "mxfp4", "int4"), (8, 4.25, 4)),
        ("nvfp4, 3, 4.85", ("int4.85", "nvfp4", "int3"), (4.85, 4.5, 3)),
    ],
)
def test_format_lists(text, names, bits):
    formats = parse_formats(text)
    assert tuple(f.name for f in formats) == names
    assert tuple(f.bits for f in formats) == bits


@pytest.mark.parametrize(
    ("text", "match"),
    [("16,int4x", "unknown format 'int4x'"), ("8,int8", "twice"), ("0.5", r"\[1, 16\]")],
)
def test_bad_format_lists(text, match):
    with pytest.raises(InputError, match=match):
        parse_formats(text)


def test_proxy_closed_form():
    # sens = prior * active params * 2^(-2 b): Mixtral's routed experts count the 2 of 8
    # experts a token uses; ffn_down's prior is 2.
    mixtral = load_model("mixtral-8x7b")
    units = decision_units(mixtral)
    experts = next(u for u in units if u.group == "experts")
    per_layer = parameter_count(mixtral).by_group["experts"] / mixtral.num_layers
    assert experts.active_params == pytest.approx(per_layer * 2 / 8)
    sens = proxy_sensitivity([experts], parse_formats("4"), mixtral.num_layers)
    assert sens[0, 0] == pytest.approx(per_layer / 4 * 2.0**-8)
    down = next(u for u in decision_units(LLAMA) if u.group == "ffn_down")
    assert proxy_sensitivity([down], parse_formats("8"), 32)[0, 0] == pytest.approx(
        2 * 4096 * 14336 * 2.0**-16
    )


def test_sensitivity_table_overrides_the_proxy(tmp_path):
    # lm_head made very sensitive at 4 and 8 bits: it stays at 16 under a memory budget.
    rows = ["layer,group,bits,sensitivity"]
    for group in ("attn_qkv", "attn_out", "ffn_up_gate", "ffn_down"):
        rows += [f",{group},16,0", f",{group},8,1", f",{group},int4,4"]
    rows += [",lm_head,16,0", ",lm_head,8,1000", ",lm_head,4,4000", "0,attn_qkv,4,99"]
    path = tmp_path / "sens.csv"
    path.write_text("\n".join(rows) + "\n")
    table = load_sensitivity_table(path)
    result = quantize(
        LLAMA,
        JETSON,
        Scenario(),
        "16,8,4",
        QuantizeBudgets(max_weights_bytes=7e9),
        sensitivity=table,
    )
    assert result.success
    assert result.precision.group_bits["lm_head"] == 16.0
    assert result.precision.layer_bits.get(0, {}).get("attn_qkv", 16.0) != 4.0


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("layer,group,bits\n", "missing column 'sensitivity'"),
        ("layer,group,bits,sensitivity\n,attn_qkv,16,0\n,mlp,8,1\n", "line 3: unknown group 'mlp'"),
        ("layer,group,bits,sensitivity\n,attn_qkv,7x,0\n", "line 2: unknown format '7x'"),
        ("layer,group,bits,sensitivity\n-1,attn_qkv,8,0\n", "line 2: layer must be >= 0"),
        ("layer,group,bits,sensitivity\n,attn_qkv,8,nan\n", "line 2: sensitivity must be"),
        ("layer,group,bits,sensitivity\n,attn_qkv,8,1\n,attn_qkv,int8,2\n", "line 3: duplicate"),
    ],
)
def test_sensitivity_table_errors_name_the_line(tmp_path, body, match):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    with pytest.raises(InputError, match=match):
        load_sensitivity_table(path)


def test_missing_table_row_names_the_unit(tmp_path):
    path = tmp_path / "partial.csv"
    path.write_text("layer,group,bits,sensitivity\n,attn_qkv,16,0\n")
    with pytest.raises(InputError, match=r"no sensitivity for L0\.attn_qkv at int8"):
        quantize(
            LLAMA,
            JETSON,
            Scenario(),
            "16,8",
            QuantizeBudgets(),
            sensitivity=load_sensitivity_table(path),
        )


def test_hessian_traces_use_the_hawq_v3_form(tmp_path):
    # sens = trace * range^2 * 2^(-2 b) / 12 (the n_u of trace/n_u and of the noise cancel).
    path = tmp_path / "trace.csv"
    path.write_text("layer,group,trace,range\n,attn_qkv,3.0,0.5\n2,attn_qkv,6.0,\n")
    traces = load_hessian_traces(path)
    units = [u for u in decision_units(LLAMA) if u.group == "attn_qkv"][:3]
    sens = traces.matrix(units, parse_formats("4"))
    assert sens[0, 0] == pytest.approx(3.0 * 0.25 * 2.0**-8 / 12)
    assert sens[2, 0] == pytest.approx(6.0 * 1.0 * 2.0**-8 / 12)


def test_kv_cache_format_is_chosen_when_its_budget_binds():
    # 16 sequences x 8192 tokens of fp16 KV cache: 16 * 8192 * 32 * 2048 elements * 2 B = 17.2 GB.
    scenario = Scenario(batch=16, input_tokens=8064, output_tokens=128)
    budgets = QuantizeBudgets(max_kv_cache_bytes=10e9)
    result = quantize(LLAMA, H100, scenario, "16,8", budgets, kv_formats="16,8")
    assert result.kv_format.name == "int8" and result.precision.kv_bits == 8.0
    failed = quantize(
        LLAMA, H100, scenario, "16,8", QuantizeBudgets(max_kv_cache_bytes=5e9), kv_formats="16,8"
    )
    assert not failed.success
    assert failed.result.message == (
        "infeasible: max-kv-gb=5 is below the smallest achievable 8.59 GB (decimal) "
        "with {fp16, int8} and KV {fp16, int8}"
    )


def run_cli(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_writes_a_bits_file_that_predict_accepts(tmp_path, capsys):
    out = tmp_path / "alloc.json"
    code, stdout, _ = run_cli(
        [
            "quantize",
            "--model",
            "llama-3.1-8b",
            "--hw",
            "jetson-agx-orin-64gb",
            "--max-memory-gb",
            "6",
            "--max-tpot-ms",
            "40",
            "--bits",
            "16,8,4",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0
    assert "optimal" in stdout and "ffn_down" in stdout
    assert json.loads(out.read_text())["group_bits"]["attn_qkv"] == 4.0
    code, stdout, _ = run_cli(
        [
            "predict",
            "--model",
            "llama-3.1-8b",
            "--hw",
            "jetson-agx-orin-64gb",
            "--bits-file",
            str(out),
            "--json",
        ],
        capsys,
    )
    assert code == 0
    assert json.loads(stdout)["summary"]["footprint_bytes_per_device"] <= 6e9


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (
            ["--hw", "jetson-agx-orin"],
            "unknown hardware 'jetson-agx-orin' (did you mean 'jetson-agx-orin-64gb'",
        ),
        (["--hw", "h100-sxm", "--bits", "16,7x"], "unknown format '7x'"),
        (["--hw", "h100-sxm", "--max-memory-gb", "2"], "infeasible: max-memory-gb=2 is below"),
        (
            ["--hw", "h100-sxm", "--max-tpot-ms", "-1"],
            "--max-tpot-ms must be a number of ms in (0, ",
        ),
        (["--hw", "h100-sxm", "--out", "alloc.txt"], "--out must end in .yaml, .yml, .json"),
        (["--hw", "h100-sxm", "--method", "exhaustive"], "exhaustive search is limited"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(extra, match, capsys):
    code, stdout, stderr = run_cli(["quantize", "--model", "llama-3.1-8b", *extra], capsys)
    assert code == 2 and stdout == ""
    assert stderr.count("\n") == 1 and stderr.startswith("codesign: error: ")
    assert match in stderr
