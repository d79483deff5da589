"""`codesign requirements --design`: the cheapest parametric design for an SLO and the
joint prefill/decode design pair with its N:M pools (search.sizing.cheapest,
search.sizing.design_pairs)."""

from __future__ import annotations

import json
import math

import pytest

from genz import Scenario
from roofline import AcceleratorDesign, InputError, MemorySpec
from search.economics import design_hourly_usd, evaluate_design
from search.sizing import (
    DesignGrid,
    ServiceLevel,
    cheapest_design,
    design_pair,
    pool_ratio,
)

SCENARIO = Scenario(batch=16, input_tokens=1024, output_tokens=128)


def small_grid() -> DesignGrid:
    return DesignGrid(
        compute_tflops=(100.0, 400.0),
        memories=("hbm3e:2", "lpddr5x:8", "gddr7:8"),
        sram_mb=(32.0,),
        nodes=("n5",),
        links=("pcie5:16",),
    )


def test_pool_ratio_matches_a_hand_calculation() -> None:
    # A prefill replica serves 10 requests/s, a decode replica 2.5: 1 prefill to 4 decode
    # balances them; at US$1 per replica-hour each, 5 US$/h for 10 requests/s.
    assert pool_ratio(10.0, 2.5, 1.0, 1.0, 1, 1, 64) == (1, 4, 10.0, 5.0)
    # A floor of 25 requests/s needs ceil(25/10) = 3 prefill and ceil(25/2.5) = 10 decode.
    assert pool_ratio(10.0, 2.5, 1.0, 1.0, 1, 1, 64, min_requests_per_s=25.0) == (
        3,
        10,
        25.0,
        13.0,
    )
    # Decode replicas of 2 devices: 1 + 4 x 2 = 9 devices do not fit a cap of 8.
    assert pool_ratio(10.0, 2.5, 1.0, 1.0, 1, 2, 8) != (1, 4, 10.0, 5.0)
    assert pool_ratio(10.0, 2.5, 1.0, 1.0, 4, 4, 7) is None


def test_cheapest_design_equals_a_brute_force_over_predict(llama8b) -> None:
    slo = ServiceLevel(max_ttft_s=2.0, max_tpot_s=0.02)
    designs = small_grid().designs()
    answer = cheapest_design(llama8b, SCENARIO, slo, designs, max_devices=1)
    feasible = []
    for design in designs:
        evaluation = evaluate_design(design, llama8b, SCENARIO)
        if evaluation.fits and evaluation.ttft_s <= 2.0 and evaluation.tpot_s <= 0.02:
            feasible.append((evaluation.device_cost_usd, design.name, evaluation))
    assert feasible, "the test space must hold an answer"
    cost, name, evaluation = min(feasible, key=lambda item: item[0])
    assert answer.best.design.name == name
    assert answer.best.hardware_cost_usd == pytest.approx(cost)
    assert answer.best.tpot_s == pytest.approx(evaluation.tpot_s, rel=1e-9)
    assert answer.best.ttft_s == pytest.approx(evaluation.ttft_s, rel=1e-9)
    # Cheaper designs were refused, and the answer says which constraint did it.
    assert answer.binding in ("ttft", "tpot", "capacity")
    assert sum(answer.rejected.values()) >= 1
    if len(feasible) == 1:
        assert answer.runner_up is None
    else:
        runner = sorted(feasible, key=lambda item: item[0])[1]
        assert answer.runner_up is not None
        assert answer.runner_up.design.name == runner[1]


def test_usd_per_mtok_objective_is_devices_hourly_over_throughput(llama8b) -> None:
    slo = ServiceLevel(max_tpot_s=0.05)
    designs = small_grid().designs()
    answer = cheapest_design(
        llama8b, SCENARIO, slo, designs, objective="usd-per-mtok", max_devices=4
    )
    best = answer.best
    hourly = design_hourly_usd(best.cost.device_cost_usd, best.cost.tdp_w)
    expected = best.devices * hourly / 3600 / best.throughput_tokens_per_s * 1e6
    assert best.usd_per_million_output_tokens == pytest.approx(expected)
    by_cost = cheapest_design(llama8b, SCENARIO, slo, designs, max_devices=4)
    assert best.usd_per_million_output_tokens <= by_cost.best.usd_per_million_output_tokens


def test_a_loose_slo_binds_nothing_and_a_tight_one_names_tpot(llama8b) -> None:
    designs = small_grid().designs()
    loose = cheapest_design(llama8b, SCENARIO, ServiceLevel(max_tpot_s=10.0), designs)
    assert loose.binding == "none"
    assert "no constraint binds" in loose.message
    fitting = [evaluate_design(d, llama8b, SCENARIO) for d in designs]
    cheapest = min(e.device_cost_usd for e in fitting if e.fits and e.tpot_s <= 10.0)
    assert loose.best.hardware_cost_usd == pytest.approx(cheapest)
    tight = cheapest_design(
        llama8b, SCENARIO, ServiceLevel(max_tpot_s=0.012), designs, max_devices=1
    )
    assert tight.binding == "tpot"
    assert tight.best.tpot_s <= 0.012
    assert tight.best.hardware_cost_usd > loose.best.hardware_cost_usd


def test_a_throughput_floor_adds_replicas(llama8b) -> None:
    designs = small_grid().designs()
    one = cheapest_design(llama8b, SCENARIO, ServiceLevel(max_tpot_s=0.05), designs)
    floor = one.best.throughput_tokens_per_s * 2.5
    more = cheapest_design(
        llama8b,
        SCENARIO,
        ServiceLevel(max_tpot_s=0.05, min_throughput_tokens_per_s=floor),
        designs,
    )
    assert more.best.throughput_tokens_per_s >= floor
    assert more.best.hardware_cost_usd > one.best.hardware_cost_usd


def test_an_unreachable_slo_names_the_best_achievable(llama8b) -> None:
    with pytest.raises(InputError, match=r"--max-tpot-ms 0\.1 ms .* best achievable is"):
        cheapest_design(llama8b, SCENARIO, ServiceLevel(max_tpot_s=1e-4), small_grid().designs())


def _pair_space() -> list[AcceleratorDesign]:
    """A compute-rich part on cheap, slow LPDDR5X and a compute-lean part on HBM3E."""
    return [
        AcceleratorDesign(
            {"bf16": 1000.0},
            MemorySpec("lpddr5x", 8),
            sram_mb=32,
            links={"pcie5": 16},
            name="compute-rich",
        ),
        AcceleratorDesign(
            {"bf16": 100.0},
            MemorySpec("hbm3e", 2),
            sram_mb=32,
            links={"pcie5": 16},
            name="bandwidth-rich",
        ),
    ]


def test_design_pair_specialises_and_adds_up_by_hand(llama8b) -> None:
    slo = ServiceLevel(max_ttft_s=1.0, max_tpot_s=0.05)
    pair = design_pair(llama8b, SCENARIO, slo, _pair_space(), max_devices=1 + 16)
    assert pair.prefill.design.name == "compute-rich"
    assert pair.decode.design.name == "bandwidth-rich"
    # KV of one prompt: tokens x layers x 2 (K, V) x KV heads x head dim x 2 bytes (bf16).
    model = llama8b
    per_token = model.num_layers * 2 * model.num_kv_heads * model.head_dim * 2
    assert pair.kv_transfer_bytes == pytest.approx(per_token * SCENARIO.input_tokens, rel=2e-3)
    # Over the off-node link: 16 PCIe 5 lanes (bytes/s per direction) at the default
    # interconnect efficiency 0.8, plus the 2 us link latency.
    pcie = 16 * 3.938e9 * 0.8
    assert pair.kv_transfer_s == pytest.approx(pair.kv_transfer_bytes / pcie + 2e-6)
    prefill_alone = evaluate_design(
        pair.prefill.design, llama8b, Scenario(batch=1, input_tokens=1024, output_tokens=1)
    )
    assert pair.ttft_s == pytest.approx(prefill_alone.ttft_s + pair.kv_transfer_s)
    decode = evaluate_design(pair.decode.design, llama8b, SCENARIO)
    assert pair.tpot_s == pytest.approx(decode.tpot_s)
    assert pair.decode.requests_per_s == pytest.approx(16 / (127 * decode.tpot_s))
    served = min(
        pair.prefill.replicas * pair.prefill.requests_per_s,
        pair.decode.replicas * pair.decode.requests_per_s,
    )
    assert pair.requests_per_s == pytest.approx(served)
    hourly = (
        pair.prefill.replicas * pair.prefill.hourly_usd
        + pair.decode.replicas * pair.decode.hourly_usd
    )
    assert pair.usd_per_million_output_tokens == pytest.approx(hourly / 3600 / (served * 128) * 1e6)
    # The colocated best suffers the prefill stalls: TPOT = step + B x prefill / o.
    colocated = pair.colocated
    assert colocated is not None
    assert colocated.tpot_s > pair.tpot_s
    assert pair.saving == pytest.approx(
        colocated.usd_per_million_output_tokens / pair.usd_per_million_output_tokens
    )


def test_design_pair_refuses_an_unreachable_tpot(llama8b) -> None:
    with pytest.raises(InputError, match="best achievable"):
        design_pair(llama8b, SCENARIO, ServiceLevel(max_tpot_s=1e-4), _pair_space())
    with pytest.raises(InputError, match="--output must be >= 2"):
        design_pair(llama8b, Scenario(batch=4, output_tokens=1), ServiceLevel(), _pair_space())


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    from app.cli import main

    try:
        code = main(list(argv)) or 0
    except SystemExit as stop:
        code = int(stop.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


SMALL_FLAGS = (
    "--design-compute-tflops",
    "100,400",
    "--design-memory",
    "hbm3e:2,lpddr5x:8",
    "--design-sram-mb",
    "32",
    "--design-nodes",
    "n5",
    "--design-links",
    "pcie5:16",
    "--batch",
    "16",
    "--input",
    "1024",
    "--output",
    "128",
)


def test_cli_design_json_and_text(capsys) -> None:
    code, out, _ = _run(
        capsys,
        "requirements",
        "--model",
        "llama-3.1-8b",
        "--design",
        "--max-tpot-ms",
        "20",
        *SMALL_FLAGS,
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["best"]["tpot_s"] <= 0.02
    assert payload["binding"] in ("none", "ttft", "tpot", "capacity", "throughput")
    assert payload["best"]["cost"]["device_cost_usd"] == pytest.approx(
        payload["best"]["device_cost_usd"]
    )
    code, out, _ = _run(
        capsys,
        "requirements",
        "--model",
        "llama-3.1-8b",
        "--design",
        "--max-tpot-ms",
        "20",
        *SMALL_FLAGS,
    )
    assert code == 0
    assert "runner-up" in out and "device cost (US$)" in out


def test_cli_disaggregated_pair(capsys) -> None:
    code, out, _ = _run(
        capsys,
        "requirements",
        "--model",
        "llama-3.1-8b",
        "--design",
        "--disaggregated",
        "--max-ttft-s",
        "1",
        "--max-tpot-ms",
        "50",
        *SMALL_FLAGS,
        "--json",
    )
    assert code == 0
    pair = json.loads(out)["pair"]
    n, m = (int(x) for x in pair["pool_ratio"].split(":"))
    assert n == pair["prefill"]["replicas"] and m == pair["decode"]["replicas"]
    assert pair["ttft_s"] <= 1.0 and pair["tpot_s"] <= 0.05
    assert math.isfinite(pair["usd_per_million_output_tokens"])


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("--max-tpot-ms", "5"), "--base-hw"),
        (("--base-hw", "h100-sxm", "--disaggregated"), "--disaggregated applies only"),
        (("--design", "--design-memory", "hbm9:4"), "memory technology"),
        (("--design", "--design-compute-tflops", "abc"), "--design-compute-tflops"),
        (("--design", "--kv-link-gb-per-s", "50"), "--kv-link-gb-per-s"),
        (("--design", "--max-tpot-ms", "0.01"), "best achievable"),
        (("--design", "--tp", "2"), "--tp is searched"),
        (("--design", "--objective", "cost"), "--design-objective"),
        (("--design", "--compute-scale", "2"), "scales a preset"),
        (("--design", "--base-hw", "h100-sxm"), "drop --base-hw"),
    ],
)
def test_cli_design_errors_are_one_line(capsys, argv, needle) -> None:
    code, _, err = _run(capsys, "requirements", "--model", "llama-3.1-8b", *argv)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_design_pair_sizes_both_pools_for_a_throughput_floor(llama8b) -> None:
    floor = 20_000.0  # output tokens/s
    slo = ServiceLevel(max_ttft_s=1.0, max_tpot_s=0.05, min_throughput_tokens_per_s=floor)
    pair = design_pair(llama8b, SCENARIO, slo, _pair_space(), max_devices=256)
    requests = floor / SCENARIO.output_tokens
    prefill, decode = pair.prefill, pair.decode
    assert prefill.replicas * prefill.requests_per_s >= requests
    assert decode.replicas * decode.requests_per_s >= requests
    # The fewest replicas: one fewer of either pool misses the floor.
    assert (prefill.replicas - 1) * prefill.requests_per_s < requests
    assert (decode.replicas - 1) * decode.requests_per_s < requests
    with pytest.raises(InputError, match="--max-devices"):
        design_pair(llama8b, SCENARIO, slo, _pair_space(), max_devices=4)


def test_pair_kv_and_prefill_rate_count_whole_prompts_under_expert_parallelism() -> None:
    # DeepSeek-V3 (MLA, 256 experts): one design, meshes with EP; a prompt's latent cache is
    # tokens x layers x (kv_lora_rank + rope dim) x 2 bytes whatever the EP degree.
    from genz import load_model

    model = load_model("deepseek-v3")
    design = AcceleratorDesign(
        {"bf16": 1000.0}, MemorySpec("hbm3e", 8), sram_mb=32, links={"pcie5": 16}, name="d"
    )
    scenario = Scenario(batch=16, input_tokens=1024, output_tokens=128)
    pair = design_pair(
        model, scenario, ServiceLevel(max_ttft_s=5.0, max_tpot_s=0.1), [design], max_devices=64
    )
    assert pair.prefill.ep > 1
    latent = 61 * (512 + 64) * 2
    assert pair.kv_transfer_bytes == pytest.approx(1024 * latent, rel=5e-3)
    # One prompt per EP rank per prefill pass (the transfer is shorter than the pass).
    assert pair.kv_transfer_s < pair.prefill.seconds
    assert pair.prefill.requests_per_s == pytest.approx(pair.prefill.ep / pair.prefill.seconds)


def test_cli_design_space_file_equals_the_same_axes_as_flags(capsys, tmp_path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(
        "hardware:\n  design:\n    compute_tflops: [100, 400]\n"
        "    memory: {technology: [hbm3e, lpddr5x], units: [2, 8]}\n"
        "    sram_mb: 32\n    node: n5\n    links: {pcie5: 16}\n",
        encoding="utf-8",
    )
    common = ("requirements", "--model", "llama-3.1-8b", "--design", "--max-tpot-ms", "20")
    shape = ("--batch", "16", "--input", "1024", "--output", "128", "--json")
    code, out, err = _run(capsys, *common, "--design-space", str(space), *shape)
    assert code == 0, err
    from_file = json.loads(out)
    flags = (
        "--design-compute-tflops", "100,400",
        "--design-memory", "hbm3e:2,hbm3e:8,lpddr5x:2,lpddr5x:8",
        "--design-sram-mb", "32", "--design-nodes", "n5", "--design-links", "pcie5:16",
    )  # fmt: skip
    code, out, _ = _run(capsys, *common, *flags, *shape)
    from_flags = json.loads(out)
    assert from_file["designs"] == from_flags["designs"]
    assert from_file["best"]["hardware_cost_usd"] == pytest.approx(
        from_flags["best"]["hardware_cost_usd"]
    )
    assert from_file["best"]["tpot_s"] == pytest.approx(from_flags["best"]["tpot_s"])
    code, _, err = _run(capsys, *common, "--design-space", str(space), "--design-nodes", "n3")
    assert code == 2 and "give the axes in one place" in err
