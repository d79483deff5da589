"""Why H100 prefill is simulated too fast against A100: one prefill pass per set-up.

The NIM / GenAI-Perf rows (``data/validation/serving/nim_genai_perf_llama3.csv``) at
concurrency 1 measure one request at a time, so their mean TTFT is one prefill pass
(plus the front end), on A100-SXM4-80GB and H100 SXM with the same model, TP and
prompt. For each such pair the script prints the measured A100 / H100 TTFT ratio, the
simulated one (`genz.predict`, the rows' ``tensorrt-llm`` profile) and the simulated
one with each device's cited achievable dense GEMM rate
(`calibration.serving_costs.gemm_scale`: max-achievable-matmul BF16, A100 0.869, H100
0.803 of peak, ``data/hardware/microbenchmarks.csv``), and where the H100 pass's time
goes: GEMMs, attention, all-reduces (TP > 1), other (memory-bound norms, activations,
embedding), the per-step fixed cost. Prompts of 2,000 tokens and more are compute-bound; 200-token
prompts are memory- and fixed-cost-bound and measure the front end more than the GEMMs.

Run: ``python benchmarks/serving_prefill_devices.py`` (a few seconds).
"""

from __future__ import annotations

import csv

import numpy as np

from calibration.serving_costs import adapt_profile, gemm_scale
from genz import Parallelism, Precision, RuntimeProfile, Scenario, load_model, load_runtime, predict
from roofline import data_dir, load_platform

ROWS = data_dir() / "validation" / "serving" / "nim_genai_perf_llama3.csv"
DEVICES = ("a100-sxm-80gb", "h100-sxm")
PROFILE = "tensorrt-llm"


def measured_ttft() -> dict[tuple[str, int, int, str], float]:
    """(model, tp, prompt tokens, hardware) -> measured mean TTFT at concurrency 1, s
    (the first row of each; output lengths share one prefill)."""
    found: dict[tuple[str, int, int, str], float] = {}
    with ROWS.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if (row["metric"], row["statistic"], row["concurrency"]) != ("ttft_ms", "mean", "1"):
                continue
            key = (row["model"], int(row["tp"]), int(float(row["input_tokens"])), row["hardware"])
            found.setdefault(key, float(row["measured"]) / 1e3)
    return found


def prefill(
    model: str, tp: int, tokens: int, hw: str, runtime: RuntimeProfile, cited: bool
) -> tuple[float, dict[str, float]]:
    """Simulated TTFT of one request (s) and its prefill time per operator class."""
    platform = load_platform(hw)
    if cited:
        runtime = adapt_profile(runtime, platform, gemm_scale(runtime, hw, 16.0))
    scenario = Scenario(
        batch=1,
        input_tokens=tokens,
        output_tokens=2,
        precision=Precision(),
        parallelism=Parallelism(tp=tp),
    )
    result = predict(load_model(model), platform, scenario, runtime)
    shares = {"gemm": 0.0, "attention": 0.0, "all-reduce": 0.0, "other": 0.0, "step": 0.0}
    for op in result.prefill.operators:
        kind = op.kind if op.kind in ("gemm", "attention") else "other"
        if op.interconnect_s > 0:
            kind = "all-reduce"
        shares["step" if op.group == "runtime" else kind] += op.time_s
    return float(result.ttft_s), shares


def main() -> None:
    runtime = load_runtime(PROFILE)
    measured = measured_ttft()
    pairs = sorted({key[:3] for key in measured if all((*key[:3], d) in measured for d in DEVICES)})
    print(
        f"{'model':<12} {'tp':>2} {'prompt':>6} | TTFT ms A100 meas/sim | H100 meas/sim | "
        "A100/H100 meas  sim  cited | H100 prefill: gemm attn a-r other step"
    )
    errors: dict[str, list[float]] = {"sim": [], "cited": []}
    for model, tp, tokens in pairs:
        a_meas, h_meas = (measured[(model, tp, tokens, d)] for d in DEVICES)
        (a_sim, _), (h_sim, shares) = (
            prefill(model, tp, tokens, d, runtime, False) for d in DEVICES
        )
        a_cit, h_cit = (prefill(model, tp, tokens, d, runtime, True)[0] for d in DEVICES)
        ratio, sim, cited = a_meas / h_meas, a_sim / h_sim, a_cit / h_cit
        total = sum(shares.values())
        if tokens >= 2000:
            errors["sim"].append(abs(np.log(sim / ratio)))
            errors["cited"].append(abs(np.log(cited / ratio)))
        cells = " ".join(f"{v / total:>4.0%}" for v in shares.values())
        print(
            f"{model:<12} {tp:>2} {tokens:>6} | {a_meas * 1e3:8.1f} {a_sim * 1e3:8.1f}    | "
            f"{h_meas * 1e3:6.1f} {h_sim * 1e3:6.1f} | {ratio:13.2f} {sim:4.2f} {cited:6.2f} | "
            f"{cells:>29}"
        )
    for name, values in errors.items():
        print(
            f"prompts >= 2000: mean |log(simulated / measured A100/H100 ratio)| "
            f"{name}: {np.mean(values):.3f} ({len(values)} pairs)"
        )


if __name__ == "__main__":
    main()
