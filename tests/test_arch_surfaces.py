"""Issue 23's features on each surface (docs/model.md, "Feature x surface"): the cells
that were broken or silent before, each reached the way a user reaches it, and the
one-line refusals where a feature cannot apply."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from app.cli import main
from calibration.scenarios import parse_scenarios, predict_scenarios
from genz import (
    Parallelism,
    Scenario,
    load_model,
    parameter_count,
    predict,
    variant_refusal,
    with_lora,
)
from roofline import InputError, load_platform
from search.codesign import search_designs, space_from_dict
from search.codesign.frame import design_model, design_platform
from search.codesign.ilp import design_scenario
from search.sizing import ServiceLevel, find_requirement

H100 = load_platform("h100-sxm")


def cli_json(capsys, *argv: str) -> dict:
    assert main(list(argv)) in (0, None)
    return json.loads(capsys.readouterr().out)


# -- architecture variants a model refuses: one line, for the dashboard to show ---------


@pytest.mark.parametrize(
    ("name", "axis", "reason"),
    [
        ("zamba2-7b", "sliding_window", "windowed attention in shared transformer blocks"),
        ("zamba2-7b", "attention_layers", "invokes shared transformer blocks"),
        ("mamba-2.8b", "sliding_window", "has no attention layers to window"),
        ("falcon-h1-7b", "attention_layers", "side by side in every layer"),
        ("llama-3.1-8b", "attention_layers", "is not an attention / state-space hybrid"),
        ("jamba-v0.1", "attention_layers", None),
        ("jamba-v0.1", "sliding_window", None),
        ("gemma-2-9b", "sliding_window", None),
    ],
)
def test_variant_refusal_is_the_one_line_reason_or_none(name, axis, reason):
    found = variant_refusal(load_model(name), axis)
    if reason is None:
        assert found is None
    else:
        assert reason in found and "\n" not in found and not found.startswith(axis)


# -- co-design spaces -----------------------------------------------------------------------


def test_space_refuses_a_zamba2_base_naming_its_shared_blocks():
    with pytest.raises(InputError, match=r"shared transformer blocks \(Zamba2\)"):
        space_from_dict({"hardware": {"presets": ["h100-sxm"]}, "model": {"base": "zamba2-7b"}})


def test_space_varies_the_window_of_a_local_global_base_with_its_own_head_width():
    """Gemma 2 9B (16 heads x 256 on a 3,584 width) had no valid design point: the
    space derived heads from hidden / head_dim. Its head width is now kept."""
    result = search_designs(
        space_from_dict(
            {
                "hardware": {"presets": ["h100-sxm"]},
                "model": {"base": "gemma-2-9b", "sliding_window": [1024, 4096]},
                "workload": {"batch": 4, "input_tokens": 8000, "output_tokens": 64},
            }
        ),
        keep="feasible",
    )
    rows = result.designs.to_dict("records")
    assert {row["sliding_window"] for row in rows} == {1024, 4096}
    for row in rows:
        assert (row["heads"], row["head_dim"], row["hidden"]) == (16, 256, 3584)
        model = design_model(result.space, row)
        expected = predict(model, design_platform(result.space, row), design_scenario(row, 16))
        assert row["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-9)
    gemma = load_model("gemma-2-9b")
    assert parameter_count(model).total == parameter_count(gemma).total


def test_space_crossing_samples_and_beams_drops_the_points_that_have_both():
    """Was 'parallel_samples and beam_width cannot both exceed 1' for the whole space."""
    result = search_designs(
        space_from_dict(
            {
                "hardware": {"presets": ["h100-sxm"]},
                "model": {"base": "llama-3.1-8b"},
                "workload": {"batch": 4, "parallel_samples": [1, 4], "beam_width": [1, 2]},
            }
        ),
        keep="feasible",
    )
    assert result.evaluated_count == 3  # (1, 1), (4, 1), (1, 2)
    for row in result.designs.to_dict("records"):
        assert min(row["parallel_samples"], row["beam_width"]) == 1
        scenario = design_scenario(row, 16)
        expected = predict(design_model(result.space, row), H100, scenario)
        assert row["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-9)


# -- predict --scenarios files ----------------------------------------------------------------


def test_scenario_rows_take_lora_columns_and_equal_predict():
    text = (
        "model,hw,batch,input_tokens,output_tokens,lora_rank,lora_adapters,lora_targets\n"
        "llama-3.1-8b,h100-sxm,4,2048,64,16,8,qkv+o+ffn\n"
        'llama-3.1-8b,h100-sxm,4,2048,64,16,8,"qkv,o"\n'
        "llama-3.1-8b,h100-sxm,4,2048,64,,,\n"
    )
    rows, errors = parse_scenarios(text)
    assert not errors
    results = predict_scenarios(rows)
    base = load_model("llama-3.1-8b")
    scenario = Scenario(batch=4, input_tokens=2048, output_tokens=64)
    for result, model in zip(
        results,
        (with_lora(base, 16, 8, ("qkv", "o", "ffn")), with_lora(base, 16, 8), base),
        strict=True,
    ):
        assert result["tpot_s"] == pytest.approx(predict(model, H100, scenario).tpot_s, rel=1e-9)
    assert [r["lora_targets"] for r in results] == ["qkv+o+ffn", "qkv+o", "qkv+o"]
    assert results[0]["tpot_s"] > results[1]["tpot_s"] > results[2]["tpot_s"]


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ("99999,1,", r"lora_rank must be an integer in \[1, 4096\]"),
        ("16,1,attn", r"lora_targets: unknown target 'attn'"),
        (",4,", "lora_adapters and lora_targets go with lora_rank"),
        ("16,0,", "lora_adapters must be an integer >= 1"),
    ],
)
def test_bad_lora_cells_are_the_rows_one_line_error(cells, message):
    text = f"model,hw,lora_rank,lora_adapters,lora_targets\nllama-3.1-8b,h100-sxm,{cells}\n"
    rows, errors = parse_scenarios(text)
    found = list(errors.values()) or [r.get("error") for r in predict_scenarios(rows)]
    assert len(found) == 1 and found[0] is not None
    assert re.search(message, found[0])


# -- LoRA targets that adapt nothing ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "targets", "message"),
    [
        ("mamba-2.8b", ("qkv", "o"), "--lora-targets qkv: .* has no attention layers"),
        ("mixtral-8x7b", ("ffn",), "--lora-targets ffn: .* has no dense FFN layers"),
    ],
)
def test_lora_on_targets_the_model_lacks_is_refused(name, targets, message):
    """Were silent no-ops (the name said '+ 1 LoRA r16', the costs were the model's)."""
    with pytest.raises(InputError, match=message):
        with_lora(load_model(name), 16, 1, targets)


# -- capacity wall: offload proposed ----------------------------------------------------


def test_capacity_wall_proposes_the_least_weight_offload_and_its_link_time():
    """Llama 3.1 70B at 16 bits on one H100 (85.5 GB): the least 1 % step of the weights in
    host memory that fits, and its decode link time f W / 63 GB/s with W = 2 bytes x the
    parameter count (hand arithmetic, not the suggestion's own numbers)."""
    model = load_model("llama-3.1-70b")
    scenario = Scenario(batch=4, input_tokens=2048, output_tokens=256)
    prediction = predict(model, H100, scenario)
    assert not prediction.fits
    (offload,) = [s for s in prediction.suggestions if "host memory" in s]
    share = float(offload.split("--weight-offload ")[1].split(";")[0])
    assert share == 0.43
    fits = predict(model, H100, dataclasses.replace(scenario, weight_offload=share))
    short = predict(model, H100, dataclasses.replace(scenario, weight_offload=share - 0.01))
    assert fits.fits and not short.fits
    weights = 2 * parameter_count(model).total  # 141.1 GB
    link_ms = share * weights / 63e9 * 1e3  # 963 ms
    assert f"{link_ms:.3g} ms" in offload
    assert fits.tpot_s == pytest.approx(link_ms / 1e3, rel=1e-9)  # the link binds
    no_host = load_platform("rtx-4090")
    assert not any("host memory" in s for s in predict(model, no_host, scenario).suggestions)


# -- requirements --------------------------------------------------------------------------


def test_requirements_takes_lora_flags_and_prints_the_mode(capsys):
    lora = cli_json(
        capsys,
        *("requirements", "--model", "llama-3.1-8b", "--base-hw", "h100-sxm", "--json"),
        *("--batch", "4", "--input", "2048", "--output", "64", "--max-tpot-ms", "50"),
        *("--method", "devices", "--lora-rank", "16", "--lora-adapters", "8"),
    )
    model = with_lora(load_model("llama-3.1-8b"), 16, 8)
    expected = predict(model, H100, Scenario(batch=4, input_tokens=2048, output_tokens=64))
    (answer,) = [r for r in lora["requirements"] if r["method"] == "devices"]
    assert answer["prediction"]["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-9)
    main(
        [
            *("requirements", "--model", "llava-1.5-7b", "--base-hw", "h100-sxm"),
            *("--max-tpot-ms", "50", "--method", "devices", "--images", "2"),
            *("--parallel-samples", "3", "--kv-offload", "0.25"),
        ]
    )
    text = capsys.readouterr().out
    assert (
        "2176 in (2 image(s), 1152 image tokens) / 128 out, concurrency 1 per replica, "
        "w16a16kv16, 3 samples per request, KV 25% on host"
    ) in text


def test_requirements_with_weight_offload_splits_the_host_link_over_devices():
    """Was refused ('kernel overheads remain'): the floor was one device's host link.
    tp8 streams a half of an eighth of Llama 3.1 70B's weights per step:
    0.5 x 141.1 GB / 8 / 63 GB/s = 140 ms."""
    model = load_model("llama-3.1-70b")
    scenario = Scenario(batch=4, input_tokens=2048, output_tokens=256, weight_offload=0.5)
    found = find_requirement(model, H100, scenario, ServiceLevel(max_tpot_s=0.2), method="devices")
    assert found.scenario.parallelism == Parallelism(tp=8)
    weights = 2 * parameter_count(model).total
    assert found.prediction.tpot_s == pytest.approx(0.5 * weights / 8 / 63e9, rel=1e-3)


# -- predict --json, oicf ------------------------------------------------------------------


def test_predict_json_summary_names_the_decoding_mode_and_offload(capsys):
    summary = cli_json(
        capsys,
        *("predict", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--json"),
        *("--parallel-samples", "4", "--kv-offload", "0.5"),
    )["summary"]
    assert (summary["parallel_samples"], summary["beam_width"], summary["images"]) == (4, 1, 0)
    assert (summary["weight_offload"], summary["kv_offload"]) == (0.0, 0.5)


def test_oicf_table_labels_windowed_and_state_space_rows(capsys):
    main(
        [
            *("oicf", "--hw", "h100-sxm", "--use-cases", "chat", "--bits", "16/16"),
            *("--models", "mistral-7b,mamba-2.8b,jamba-v0.1,zamba2-7b,qwen3-next-80b-a3b"),
        ]
    )
    rows = capsys.readouterr().out.splitlines()
    labels = {
        "Mistral 7B v0.1": "GQA+SWA",
        "Mamba 2.8B": "SSM",
        "Jamba v0.1": "GQA+SSM",
        "Zamba2 7B": "MHA+SSM",
        "Qwen3-Next 80B-A3B": "GQA+LA",
    }
    for name, label in labels.items():
        (row,) = [line.split() for line in rows[:8] if f" {name} " in line]
        words = len(name.split())  # the row: use case, model name, arch, w/kv, ...
        assert row[1 + words : 3 + words] == [label, "16/16"], row
