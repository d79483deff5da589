"""Co-design search: space parsing, the result contract of every method, agreement with
genz and the law point by point, infeasible spaces, sampling, recommendations, CLI."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import run_cli

from genz.bits_file import load_precision
from genz.hf_config import load_model
from genz.params import parameter_count
from genz.predictor import predict
from roofline import load_platform
from roofline.errors import InputError
from scaling_law import PTQ_FORM, Architecture, predict_loss, ptq_loss_penalty
from search.codesign import (
    METHODS,
    CodesignResult,
    Constraints,
    load_space,
    search_designs,
    space_from_dict,
)
from search.codesign.frame import design_platform, row_fields
from search.codesign.ilp import design_scenario
from search.codesign.model import model_config, resolve_law
from search.codesign.recommend import folder_name, write_recommendations
from search.codesign.space import MAX_SPACE_BYTES

#: A quarter of the Orin Nano preset's 8 GiB (8.59e9 bytes): the capacity_scale 0.25 wall.
QUARTER_BYTES = 0.25 * 8.59e9

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: 8 architectures x 2 bandwidths x 2 capacities x 3 weight widths x 2 batches = 192 points.
SMALL = {
    "name": "small",
    "hardware": {
        "presets": ["jetson-orin-nano-8gb"],
        "bandwidth_scale": [1, 2],
        "capacity_scale": [0.25, 1],
    },
    "model": {
        "layers": [8, 16],
        "hidden": [1024, 2048],
        "head_dim": 128,
        "kv_heads": [4, 8],
        "ffn_ratio": 2.75,
        "ffn_multiple": 256,
    },
    "precision": {"weight_bits": [16, 8, 4]},
    "workload": {"batch": [1, 4], "input_tokens": 512, "output_tokens": 128},
    "law": {"tokens_per_parameter": 20},
}
KEY = [
    "platform",
    "bandwidth_scale",
    "capacity_scale",
    "layers",
    "hidden",
    "kv_heads",
    "weight_bits",
    "batch",
]


def small(**changes: object) -> dict:
    document = json.loads(json.dumps(SMALL))
    for path, value in changes.items():
        section, _, key = path.partition("__")
        if key:
            document[section][key] = value
        else:
            document[section] = value
    return document


@pytest.fixture(scope="module")
def grid() -> CodesignResult:
    return search_designs(space_from_dict(small()))


def keys(frame: pd.DataFrame) -> set[tuple]:
    return set(map(tuple, frame[KEY].astype(str).to_numpy()))


def non_dominated(
    frame: pd.DataFrame, minimise: Sequence[str], maximise: Sequence[str] = ()
) -> pd.DataFrame:
    """The rows no other row dominates (no worse in every column, better in one), by
    comparing every pair: the definition of the Pareto frontier, not the search's code."""
    values = np.column_stack(
        [frame[column].to_numpy(float) for column in minimise]
        + [-frame[column].to_numpy(float) for column in maximise]
    )
    no_worse = np.all(values[:, None, :] <= values[None, :, :], axis=2)
    better = np.any(values[:, None, :] < values[None, :, :], axis=2)
    dominated = np.any(no_worse & better, axis=0)  # [i, j]: row i dominates row j
    return frame[~dominated]


# --- the space file -------------------------------------------------------------------


def test_ranges_values_and_defaults_from_the_base() -> None:
    space = space_from_dict(
        {
            "hardware": {
                "presets": "l4",
                "compute_scale": {"min": 1, "max": 4, "steps": 3, "spacing": "log"},
            },
            "model": {"base": "qwen2.5-0.5b", "layers": {"min": 8, "max": 16, "steps": 3}},
            "precision": {"weight_bits": {"values": [16, 4, 16]}},
            "parallelism": {"tp": {"min": 1, "max": 2, "steps": 5}},
            "law": {"training_tokens": "18e12"},
        }
    )
    assert space.model.layers == (8.0, 12.0, 16.0)
    assert space.hardware.compute_scale == pytest.approx((1.0, 2.0, 4.0))
    assert space.precision.weight_bits == (16.0, 4.0)  # repeats dropped, order kept
    assert space.mesh["tp"] == (1, 2)  # integer axes round, then drop repeats
    assert space.law.training_tokens == 18e12  # YAML 1.1 reads 18e12 as text; accepted
    # Axes not given keep Qwen2.5-0.5B's values: 896 wide, 64-wide heads, FFN 4864.
    assert space.model.hidden == (896.0,) and space.model.heads == (64.0,)
    assert space.model.ffn_ratio[0] * 896 == pytest.approx(4864)
    assert space.size == 3 * 3 * 2 * 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hardwar": {}}, "unknown key 'hardwar'"),
        ({"model__layres": 4}, "unknown key 'layres'"),
        ({"model__heads": 8}, "heads or head_dim, not both"),
        ({"model__layers": {"min": 16, "max": 8, "steps": 2}}, "max (8) must be >= min (16)"),
        ({"model__layers": {"min": 8, "max": 16}}, "missing 'steps'"),
        ({"precision__weight_bits": [16, 64]}, "weight_bits must be in [1, 32]"),
        ({"precision__formats": "16,4"}, "only with weight_bits: ilp"),
        ({"hardware__presets": ["no-such-board"]}, "unknown hardware 'no-such-board'"),
        ({"objectives": ["loss", "speed"]}, "unknown objective 'speed'"),
        ({"objectives": 7}, "objectives must be a list or a comma-separated text"),
        ({"constraints": {"max_memory_mb": 1}}, "unknown constraint 'max_memory_mb'"),
        ({"model__base": "deepseek-v3"}, "multi-head latent attention"),
        ({"law": {"training_tokens": 1e12, "tokens_per_parameter": 20}}, "not both"),
        ({"workload__batch": 0}, "batch must be in [1, 1e+06]"),
    ],
)
def test_bad_space_is_one_line_naming_the_field(change: dict, message: str) -> None:
    with pytest.raises(InputError) as error:
        space_from_dict(small(**change))
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_space_file_limits(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("#" * (MAX_SPACE_BYTES + 1))
    with pytest.raises(InputError, match="larger than"):
        load_space(big)
    broken = tmp_path / "broken.yaml"
    broken.write_text("hardware: [unclosed\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_space(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match="expected a mapping"):
        load_space(listed)


def test_packaged_examples_have_the_sizes_their_axes_give() -> None:
    expected = {
        # 2 bandwidths x 3 layer counts x 3 widths x 3 weight widths.
        "edge_quickstart.yaml": 2 * 3 * 3 * 3,
        # 6 attention / Mamba-2 mixes x 2 weight widths x 2 batches x 2 prompts.
        "hybrid_space.yaml": 6 * 2 * 2 * 2,
        # 13 layer counts x 13 widths x 3 KV-head counts x 3 FFN ratios x 3 weight widths.
        "orin_space.yaml": 13 * 13 * 3 * 3 * 3,
        # 2 presets x 2 x 2 x 2 scales x (50 x 5 x 2 = 500 architectures) x 4 weight
        # widths x 2 KV widths x 8 batches x 2 prompts (the header rounds it to 1,000,000).
        "scale_space.yaml": 2 * 2 * 2 * 2 * 500 * 4 * 2 * 8 * 2,
    }
    sizes = {path.name: load_space(path).size for path in EXAMPLES.glob("*.yaml")}
    assert {name: sizes.get(name) for name in expected} == expected


# --- the result contract ----------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_result_contract_for_every_method(method: str, request: pytest.FixtureRequest) -> None:
    if method == "ray":
        request.getfixturevalue("ray_local")
    before = time.perf_counter()
    result = search_designs(space_from_dict(small()), method=method, samples=64, seed=1)
    wall = time.perf_counter() - before
    assert result.success and result.status == 0 and result.method == method
    assert result.message == (
        f"{len(result.frontier)} designs on the frontier of {result.feasible_count} feasible "
        f"({result.evaluated_count} evaluated)"
    )
    assert 0 < result.elapsed_s <= wall
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = 1  # type: ignore[misc]
    designs = result.designs
    assert len(designs) == result.feasible_count <= result.evaluated_count
    # Feasible: every kept design fits its device's memory (the capacity wall).
    assert designs["fits"].all()
    assert (designs["footprint_bytes"] <= designs["capacity_bytes"]).all()
    if method == "sample":
        assert result.evaluated_count < 192
    else:
        # 8 architectures (2 depths x 2 widths x 2 KV-head counts) x 2 bandwidths x
        # 2 capacities x 3 weight widths x 2 batches; at 0.25 x 8 GiB only the designs whose
        # footprint exceeds 2 GiB drop out (at the full 8 GiB all fit).
        assert result.evaluated_count == 192
        full = designs[designs["capacity_scale"] == 1]
        assert len(full) == 96
        assert result.feasible_count == 192 - (full["footprint_bytes"] > QUARTER_BYTES).sum()
    frame = result.to_frame()
    assert frame["on_frontier"].sum() == len(result.frontier)
    assert list(result.frontier["rank"]) == list(range(1, len(result.frontier) + 1))
    # The frontier is the non-dominated set of the designs the method kept.
    assert keys(result.frontier) == keys(non_dominated(designs, ["loss", "tpot_s"]))
    for column in ("loss", "perplexity", "tpot_s", "ttft_s", "footprint_bytes", "design"):
        assert column in result.frontier


def test_rows_match_genz_predict_and_the_law(grid: CodesignResult) -> None:
    law = resolve_law(grid.space.law)
    rows = pd.concat([grid.frontier.head(3), grid.designs.sample(5, random_state=0)])
    for row in rows.to_dict("records"):
        model = model_config(grid.space.model, row_fields(row))
        platform = design_platform(grid.space, row)
        expected = predict(model, platform, design_scenario(row, row["weight_bits"]))
        assert row["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-9)
        assert row["ttft_s"] == pytest.approx(expected.ttft_s, rel=1e-9)
        assert row["footprint_bytes"] == pytest.approx(expected.footprint.total_bytes, rel=1e-9)
        assert row["fits"] == expected.fits
        shape = Architecture(
            layers=row["layers"],
            hidden=row["hidden"],
            ffn=row["intermediate_size"],
            heads=row["heads"],
            kv_heads=row["kv_heads"],
            head_dim=row["head_dim"],
            gated_ffn=True,
        )
        tokens = 20 * shape.counts().total  # tokens_per_parameter: 20
        # Serving-time bits are post-training quantisation by default.
        loss = predict_loss(law, shape, tokens) + ptq_loss_penalty(
            law, shape, tokens, row["weight_bits"]
        )
        assert row["loss"] == pytest.approx(float(loss), rel=1e-12)
        assert row["precision_model"] == PTQ_FORM
        assert row["perplexity"] == pytest.approx(math.exp(row["loss"]), rel=1e-12)


def test_capacity_scale_changes_feasibility_not_time(grid: CodesignResult) -> None:
    designs = grid.designs
    index = [*KEY[3:], "bandwidth_scale"]
    full = designs[designs["capacity_scale"] == 1].set_index(index)
    quarter = designs[designs["capacity_scale"] == 0.25].set_index(index)
    shared = full.index.intersection(quarter.index)
    assert np.array_equal(full.loc[shared, "tpot_s"], quarter.loc[shared, "tpot_s"])
    # 8 GiB x 0.25 = 2 GiB: exactly the designs whose footprint exceeds it are missing.
    assert (quarter["footprint_bytes"] <= QUARTER_BYTES).all()
    missing = set(full.index[full["footprint_bytes"] > QUARTER_BYTES])
    assert set(full.index) - set(quarter.index) == missing


def test_batch_one_decode_time_is_bytes_over_bandwidth_plus_launches(grid: CodesignResult) -> None:
    designs = grid.designs
    pick = designs[
        (designs["layers"] == 16)
        & (designs["hidden"] == 2048)
        & (designs["kv_heads"] == 8)
        & (designs["weight_bits"] == 16)
        & (designs["batch"] == 1)
        & (designs["capacity_scale"] == 1)
    ].set_index("bandwidth_scale")
    # 16 layers x 47.19e6 + two untied 32000 x 2048 embeddings = 886.1e6 parameters; a
    # decode step reads all but the input embedding at 2 bytes, plus the KV cache at the
    # mean context 512 + 128 / 2 = 576 tokens: 576 x 16 layers x (2 x 8 x 128) x 2 bytes.
    # Orin Nano: 68 GB/s x 0.75; 8 kernels per layer + 3, 5 us each. Bandwidth-bound
    # reads halve with 2x bandwidth; the launch overheads do not: 33.6 ms -> 17.1 ms.
    step_bytes = (886.1e6 - 32000 * 2048) * 2 + 576 * 16 * 2 * 8 * 128 * 2
    launches_s = (8 * 16 + 3) * 5e-6
    for scale in (1.0, 2.0):
        expected = step_bytes / (scale * 68e9 * 0.75) + launches_s
        assert pick.loc[scale, "tpot_s"] == pytest.approx(expected, rel=0.01)


def test_best_per_budget_matches_brute_force(grid: CodesignResult) -> None:
    table = grid.best_per_budget("tpot")
    designs = grid.designs
    assert len(table) == grid.frontier["tpot_s"].nunique()
    for row in table.itertuples():
        within = designs[designs["tpot_s"] <= row.budget_limit]
        assert row.loss == within["loss"].min()
        assert row.tpot_s <= row.budget_limit
    # A maximised budget bounds from below: the best loss with at least L tokens/s.
    floors = [50.0, 400.0]
    table = grid.best_per_budget("throughput", limits=floors)
    for floor, row in zip(floors, table.itertuples(), strict=True):
        within = designs[designs["throughput_tokens_per_s"] >= floor]
        assert row.budget_limit == floor and row.loss == within["loss"].min()


def test_more_bandwidth_is_never_slower(grid: CodesignResult) -> None:
    designs = grid.designs
    index = [*KEY[2:]]
    slow = designs[designs["bandwidth_scale"] == 1].set_index(index).sort_index()
    fast = designs[designs["bandwidth_scale"] == 2].set_index(index).sort_index()
    # Bandwidth does not change the footprint: the same designs are feasible at both.
    assert slow.index.equals(fast.index)
    assert (fast["tpot_s"] < slow["tpot_s"]).all()
    assert (fast["ttft_s"] <= slow["ttft_s"]).all()
    assert (fast["loss"] == slow["loss"]).all()  # the law does not see the hardware


def test_two_objective_frontier_is_every_non_dominated_design(grid: CodesignResult) -> None:
    # Both directions, by brute force over all 190 feasible designs: nothing on the
    # frontier is dominated, and nothing left off it is non-dominated.
    assert keys(grid.frontier) == keys(non_dominated(grid.designs, ["loss", "tpot_s"]))


def test_three_objectives_frontier_is_every_non_dominated_design(grid: CodesignResult) -> None:
    result = search_designs(grid.space, objectives="loss,tpot,throughput")
    reference = non_dominated(result.designs, ["loss", "tpot_s"], ["throughput_tokens_per_s"])
    assert keys(result.frontier) == keys(reference)
    # A third objective only adds trade-offs: every (loss, tpot) frontier design stays on
    # it (a design could drop off only by tying another on loss and TPOT with less
    # throughput; here such ties differ only in capacity scale, so in nothing else).
    assert keys(grid.frontier) < keys(result.frontier)


# --- infeasible and empty spaces --------------------------------------------------------


def test_infeasible_memory_names_the_binding_constraint_and_best_value(
    grid: CodesignResult,
) -> None:
    result = search_designs(grid.space, constraints=Constraints(max_memory_bytes=1e7))
    assert not result.success and result.status == 1 and result.feasible_count == 0
    assert result.frontier.empty and result.designs.empty
    smallest = grid.designs["footprint_bytes"].min() / 1e9
    assert "\n" not in result.message
    assert "binding: max-memory-gb <= 0.01 GB (decimal)" in result.message
    assert f"{smallest:.4g} GB (decimal)" in result.message


def test_infeasible_together_and_capacity_wall_messages(grid: CodesignResult) -> None:
    both = search_designs(grid.space, constraints=Constraints(max_tpot_s=1e-6, max_loss=0.5))
    assert both.status == 1
    assert "relaxing any one alone is not enough" in both.message
    assert "max-tpot-ms" in both.message and "max-loss" in both.message
    wall = search_designs(space_from_dict(small(hardware__capacity_scale=0.001)))
    assert wall.status == 1
    assert "device memory capacity (footprint <= capacity)" in wall.message


def test_space_with_no_valid_architecture_is_status_2() -> None:
    # 1000 / 3 heads is no whole head width.
    document = small(model={"layers": 4, "hidden": 1000, "heads": 3, "kv_heads": 1})
    result = search_designs(space_from_dict(document))
    assert result.status == 2 and not result.success
    assert "no valid design point" in result.message


# --- sampling ---------------------------------------------------------------------------


def test_sampled_designs_are_grid_designs_and_refinement_reaches_the_frontier(
    grid: CodesignResult,
) -> None:
    sampled = search_designs(grid.space, method="sample", samples=24, refine_rounds=0, seed=3)
    assert sampled.evaluated_count < grid.evaluated_count
    merged = sampled.designs.merge(grid.designs, on=KEY, suffixes=("", "_grid"))
    assert len(merged) == len(sampled.designs)
    for column in ("loss", "tpot_s", "ttft_s", "footprint_bytes"):
        # Same model; numpy's SIMD sums over arrays of other lengths may differ in the last bit.
        assert np.allclose(merged[column], merged[f"{column}_grid"], rtol=1e-12, atol=0)
    # Without refinement the sampled frontier may be worse, never better than the grid's.
    grid_best = grid.designs["loss"].min()
    assert sampled.designs["loss"].min() >= grid_best
    refined = search_designs(grid.space, method="sample", samples=24, refine_rounds=30, seed=3)
    assert keys(refined.frontier) == keys(grid.frontier)


def test_keep_frontier_gives_the_same_frontier(grid: CodesignResult) -> None:
    light = search_designs(grid.space, keep="frontier")
    assert keys(light.frontier) == keys(grid.frontier)
    assert light.feasible_count == grid.feasible_count
    # It keeps fewer designs, all of them grid designs, at least the whole frontier.
    assert keys(grid.frontier) <= keys(light.designs) < keys(grid.designs)


def test_ilp_mode_refines_the_best_frontier_designs(tmp_path: Path) -> None:
    document = {
        "hardware": {"presets": ["jetson-orin-nano-8gb"]},
        "model": {"base": "qwen2.5-0.5b", "layers": [4, 6]},
        "precision": {"weight_bits": "ilp", "formats": "16,8,6,4"},
        "workload": {"batch": 1, "input_tokens": 256, "output_tokens": 64},
    }
    result = search_designs(space_from_dict(document), ilp_candidates=1)
    # Only the best-ranked design gets an allocation; the uniform one is always feasible
    # within its own TPOT and footprint, so it is solved.
    assert list(result.frontier["ilp_status"]) == ["optimal"] + [""] * (len(result.frontier) - 1)
    row = result.frontier.iloc[0].to_dict()
    assert row["ilp_tpot_s"] <= row["tpot_s"] * (1 + 1e-6)
    assert row["ilp_footprint_bytes"] <= row["footprint_bytes"] * (1 + 1e-6)
    # The written bits file reproduces the allocation's latency and footprint, and its
    # parameter-weighted bits are the mean the frontier reports.
    (folder,) = write_recommendations(result, tmp_path / "ilp", top=1)
    precision = load_precision(folder / "bits.yaml")
    model = load_model(folder / "config.json")
    scenario = dataclasses.replace(design_scenario(row, 16.0), precision=precision)
    again = predict(model, load_platform(folder / "platform.yaml"), scenario)
    assert again.tpot_s == pytest.approx(row["ilp_tpot_s"], rel=1e-9)
    assert again.footprint.total_bytes == pytest.approx(row["ilp_footprint_bytes"], rel=1e-9)
    assert not precision.layer_bits
    groups = parameter_count(model).by_group
    bits = {group: precision.group_bits.get(group, precision.weight_bits) for group in groups}
    mean = sum(groups[g] * bits[g] for g in groups) / sum(groups.values())
    assert row["ilp_mean_weight_bits"] == pytest.approx(mean, rel=1e-9)


# --- recommendations --------------------------------------------------------------------


def test_recommend_writes_reproducible_files_only_inside_out_dir(
    grid: CodesignResult, tmp_path: Path
) -> None:
    out = tmp_path / "recommended"
    folders = write_recommendations(grid, out, top=2)
    assert len(folders) == 2
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(out in p.parents for p in written)
    assert {p.name for p in written} == {"config.json", "bits.yaml", "platform.yaml", "design.json"}
    first = grid.frontier.iloc[0]
    folder = folders[0]
    config = json.loads((folder / "config.json").read_text())
    assert config["num_hidden_layers"] == first["layers"]
    assert config["hidden_size"] == first["hidden"]
    # The files alone reproduce the design's genz numbers.
    precision = load_precision(folder / "bits.yaml")
    scenario = dataclasses.replace(design_scenario(first, 16.0), precision=precision)
    again = predict(
        load_model(folder / "config.json"), load_platform(folder / "platform.yaml"), scenario
    )
    assert again.tpot_s == pytest.approx(first["tpot_s"], rel=1e-9)
    assert again.footprint.total_bytes == pytest.approx(first["footprint_bytes"], rel=1e-9)
    platform = yaml.safe_load((folder / "platform.yaml").read_text())
    assert platform["source"].startswith("derived from preset jetson-orin-nano-8gb")
    design = json.loads((folder / "design.json").read_text())
    assert design["commands"]["latency_memory"].startswith("codesign predict --model config.json")


def test_recommend_refuses_overwrite_symlinks_and_traversal(
    grid: CodesignResult, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    write_recommendations(grid, out, top=1)
    with pytest.raises(InputError, match="is not empty; pass --force"):
        write_recommendations(grid, out, top=1)
    write_recommendations(grid, out, top=1, force=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(InputError, match="symbolic link"):
        write_recommendations(grid, link, top=1)
    with pytest.raises(InputError, match="does not exist"):
        write_recommendations(grid, tmp_path / "missing" / "out", top=1)
    assert "/" not in folder_name(1, "../../etc/passwd")
    evil = grid.frontier.copy()
    evil["design"] = "../../escaped"
    hostile = dataclasses.replace(grid, frontier=evil)
    folders = write_recommendations(hostile, tmp_path / "safe", top=1)
    assert folders[0].parent == (tmp_path / "safe").resolve()
    assert not (tmp_path / "escaped").exists()


# --- CLI --------------------------------------------------------------------------------


@pytest.fixture
def space_file(tmp_path: Path) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(small()))
    return path


def test_cli_search_json_and_tables(space_file: Path, tmp_path: Path) -> None:
    code, out, _ = run_cli(
        "search",
        "--space",
        str(space_file),
        "--objective",
        "loss,tpot",
        "--max-memory-gb",
        "3",
        "--json",
        "--out",
        str(tmp_path / "designs.csv"),
        "--frontier-out",
        str(tmp_path / "frontier.parquet"),
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["success"] and payload["constraints"] == {"max-memory-gb": 3.0}
    assert all(row["footprint_bytes"] <= 3e9 for row in payload["frontier"])
    designs = pd.read_csv(tmp_path / "designs.csv")
    assert designs["on_frontier"].sum() == len(payload["frontier"])
    frontier = pd.read_parquet(tmp_path / "frontier.parquet")
    assert list(frontier["design"]) == [row["design"] for row in payload["frontier"]]


def test_cli_errors_are_one_line(
    space_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_cli(
        "search", "--space", str(space_file), "--max-memory-gb", "0.001", "--no-progress"
    )
    assert code == 2 and err.startswith("codesign: error: no design meets the constraints")
    assert err.count("\n") == 1
    code, _, err = run_cli("search", "--space", str(space_file), "--out", str(tmp_path / "x.txt"))
    assert code == 2 and "must end in .csv or .parquet" in err
    monkeypatch.setattr("app.cli.codesign.importlib.util.find_spec", lambda name: None)
    code, _, err = run_cli(
        "search", "--space", str(space_file), "--out", str(tmp_path / "x.parquet")
    )
    assert code == 2 and "needs pyarrow" in err and "use .csv" in err


def test_cli_recommend_writes_folders(space_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "rec"
    argv = ["recommend", "--space", str(space_file), "--top", "2", "--out-dir", str(out)]
    code, stdout, _ = run_cli(*argv, "--no-progress")
    assert code == 0 and "wrote 2 folders" in stdout
    assert len(list(out.iterdir())) == 2
    code, _, err = run_cli(*argv)
    assert code == 2 and "pass --force" in err


def test_space_constraints_can_be_ignored() -> None:
    space = space_from_dict(small(constraints={"max_memory_gb": 1}))
    bounded = search_designs(space)
    free = search_designs(space, space_constraints=False)
    assert bounded.constraints.max_memory_bytes == 1e9 and free.constraints == Constraints()
    # The bound removes exactly the designs above 1 GB (decimal).
    within = free.designs[free.designs["footprint_bytes"] <= 1e9]
    assert bounded.feasible_count == len(within) < free.feasible_count
    assert keys(bounded.designs) == keys(within)
