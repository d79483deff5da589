"""Convert LMDeploy's TurboMind A100 benchmark page (data/validation/serving/raw/) into
serving validation rows (data/validation/serving/lmdeploy_*_a100_llama2.csv).

Source: github.com/InternLM/lmdeploy, ``docs/en/benchmark/a100_fp16.md`` (Apache-2.0) in
two editions, each a byte copy in ``raw/``:

- ``v0.1.0a1`` (commit ebe90bc9, 2023-12-06): "Static Inference Benchmark" tables of
  ``benchmark/profile_generation.py`` (``batch`` client threads, each sending 6 requests
  of fixed prompt / output length one after another: a closed loop) for Llama 2 7B, 13B
  (1 GPU) and 70B (TP 4): output tokens/s, mean first-token latency and the 50 and 99 %
  per-token latencies (the 75 and 95 % have no simulated counterpart); and the "Request Throughput Benchmark" table of
  ``benchmark/profile_throughput.py`` (``batch`` threads drawing 3,000 ShareGPT
  requests from one queue: a closed loop): requests/s, mean first-token latency,
  output tokens/s.
- ``v0.2.0`` (commit 9e420561, 2024-01-15): the new "Request Throughput Benchmark"
  table (same client, also the per-token percentiles).

The engine settings are the benchmark scripts' of the same commit (KV cache
``cache_max_entry_count`` blocks of ``cache_block_seq_len`` 128 tokens, ``max_batch_size``,
the prefill budget ``max_context_token_num`` x ``session_len``). internlm-20b has no
preset and is left out.

Run: ``python benchmarks/convert_lmdeploy_a100.py --edition v0.1.0a1`` (or ``v0.2.0``).
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from pathlib import Path

from serving_validate import MEASURE, SETUP

from roofline import data_dir

FOLDER = data_dir() / "validation" / "serving"
REPO = "https://github.com/InternLM/lmdeploy/blob"
COLUMNS = [*SETUP, *MEASURE, "assumptions"]
MODELS = {"llama2-7b": "llama-2-7b", "llama2-13b": "llama-2-13b", "llama2-70b": "llama-2-70b"}
#: tokens per KV block (``cache_block_seq_len``, the converter's default in both commits)
BLOCK_TOKENS = 128
#: Llama 2's ``session_len`` (lmdeploy/model.py 4096, + 8 in the TurboMind converter)
SESSION_LEN = 4104
#: seconds in the tables are printed to 3 decimals: +-0.5 ms
ROUNDING_MS = 0.5
#: per-token latency percentiles compared (the simulator reports ITL at 50 / 90 / 99 %,
#: so the pages' 75 % and 95 % are left out)
ITL_PERCENTILES = ("50", "99")


@dataclass(frozen=True)
class Edition:
    """One edition of the page and the engine settings its benchmark scripts set."""

    version: str
    commit: str
    raw: str
    out: str
    #: model -> (max_batch_size, cache_max_entry_count blocks)
    engine: dict[str, tuple[int, int]]
    #: ``max_context_token_num`` as set (<= max_batch_size: times session_len)
    context_factor: int
    scripts: str
    static: bool


EDITIONS = {
    "v0.1.0a1": Edition(
        "v0.1.0a1",
        "ebe90bc943eeace841b33fa54fbf1726311b63db",
        "lmdeploy_a100_fp16_ebe90bc.md",
        "lmdeploy_v010_a100_llama2.csv",
        {"llama2-7b": (128, 1000), "llama2-13b": (128, 500), "llama2-70b": (256, 4000)},
        4,
        "benchmark/benchmark_{7b,13b,70b}.sh (crudini: max_context_token_num 4, "
        "cache_chunk_size -1, cache_max_entry_count, max_batch_size)",
        True,
    ),
    "v0.2.0": Edition(
        "v0.2.0",
        "9e4205613aecc772a07998c5afd11a611250da5e",
        "lmdeploy_a100_fp16_9e42056.md",
        "lmdeploy_v020_a100_llama2_sharegpt.csv",
        {"llama2-7b": (256, 1000), "llama2-13b": (128, 500), "llama2-70b": (256, 4000)},
        1,
        "benchmark/benchmark.sh with benchmark/config/llama_{7b,13b,70b}.ini "
        "(cache_max_entry_count, max_batch_size; max_context_token_num the converter's 1)",
        False,
    ),
}


def tables(text: str) -> list[tuple[str, list[dict[str, str]]]]:
    """Every markdown table of ``text``: (the heading above it, its rows by column)."""
    found: list[tuple[str, list[dict[str, str]]]] = []
    heading, lines = "", text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|") and i + 1 < len(lines) and set(lines[i + 1]) <= set("|- :"):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=True)))
                i += 1
            found.append((heading, rows))
            continue
        i += 1
    return found


def setup(
    edition: Edition, name: str, tp: str, concurrency: int, requests: int, lengths: tuple
) -> dict[str, object]:
    """The set-up columns of one row (``lengths``: kind, mean input, mean output, cv)."""
    batch, blocks = edition.engine[name]
    kind, isl, osl, cv = lengths
    client = "profile_generation.py" if kind == "fixed" else "profile_throughput.py"
    return {
        "model": MODELS[name],
        "hardware": "a100-sxm-80gb",
        "tp": tp,
        "weight_bits": 16,
        "activation_bits": 16,
        "kv_bits": 16,
        "runtime": f"LMDeploy {edition.version} (TurboMind, in-process {client} client)",
        "profile": "ideal",
        "scenario": "closed",
        "rate_per_s": "",
        "requests": requests,
        "lengths": kind,
        "input_tokens": isl,
        "output_tokens": osl,
        "length_cv": cv,
        "policy": "chunked",
        "max_sequences": batch,
        "max_batched_tokens": edition.context_factor * SESSION_LEN,
        "memory_utilization": 0.9,
        "kv_capacity_tokens": blocks * BLOCK_TOKENS,
        "concurrency": concurrency,
        "kv_free_fraction": "",
    }


def assumptions(edition: Edition, name: str, kind: str) -> str:
    """What the row adds to the page (the page states model, GPU, tp, batch, lengths)."""
    batch, blocks = edition.engine[name]
    common = (
        f"A100-80G(x8) read as A100-SXM4-80GB (not stated: SXM or PCIe); fp16 weights, "
        f"activations and KV cache (the page's FP16); engine settings from {edition.scripts} "
        f"at the same commit: max_batch_size {batch}, KV cache {blocks} blocks x "
        f"{BLOCK_TOKENS} tokens (cache_block_seq_len default) = {blocks * BLOCK_TOKENS} "
        f"tokens, prefill budget max_context_token_num {edition.context_factor} x "
        f"session_len {SESSION_LEN} = {edition.context_factor * SESSION_LEN} tokens a step, "
        "whole prompts (max_prefill_iters 1); TurboMind's steps, which batch new prompts "
        "with running decodes, simulated as the chunked policy with that budget; no "
        "LMDeploy runtime profile: ideal physics; closed loop scored over the steady "
        "window (the benchmark averages over all requests); per-token latencies compared "
        "with the simulated gaps between streamed chunks (ITL)"
    )
    if kind == "fixed":
        return common + (
            "; profile_generation.py defaults: test_round 6 requests per client thread "
            "after 1 warm-up round (so 6 x batch requests), random prompt ids of exactly "
            "prompt_tokens, ignore_eos; throughput = generated tokens / wall time"
        )
    return common + (
        "; ShareGPT sampled by profile_throughput.py (first two turns, prompt <= 1024 and "
        "prompt + completion <= 2048 tokens, both >= 4; Llama 2 tokenizer), outputs forced "
        "to the completion length (ignore_eos); mean lengths = the row's output tok/s / RPS "
        "and (total - output) tok/s / RPS; lognormal lengths with cv 1.0 (assumed); which "
        "of the script's repeated runs the table shows is not stated"
    )


def rows_of(edition: Edition, text: str) -> list[dict[str, object]]:
    """Every measured number of the edition's tables, one dict per row."""
    source = f"{REPO}/{edition.commit}/docs/en/benchmark/a100_fp16.md"
    out: list[dict[str, object]] = []

    def add(base: dict, name: str, kind: str, metric: str, stat: str, value: str, where: str):
        seconds = metric in ("ttft_ms", "itl_ms")
        out.append(
            {
                **base,
                "metric": metric,
                "statistic": stat,
                "measured": f"{float(value) * (1e3 if seconds else 1):.6g}",
                "reading_error": ROUNDING_MS if seconds else 0,
                "source": source,
                "locator": where,
                "read": "2026-12-04",
                "assumptions": assumptions(edition, name, kind),
            }
        )

    for heading, rows in tables(text):
        name = heading.split()[-1]
        if edition.static and name in MODELS:
            for row in rows:
                batch = int(row["batch"])
                isl, osl = int(row["prompt_tokens"]), int(row["output_tokens"])
                base = setup(edition, name, row["tp"], batch, 6 * batch, ("fixed", isl, osl, 0))
                where = f"Static Inference Benchmark, {name}, batch {batch}, {isl}/{osl}"
                add(base, name, "fixed", "output_tokens_per_s", "value",
                    row["throughput(out tok/s)"], where + ", throughput(out tok/s)")  # fmt: skip
                add(
                    base, name, "fixed", "ttft_ms", "mean", row["FTL(ave)(s)"], where + ", FTL(ave)"
                )
                for stat in ITL_PERCENTILES:
                    add(base, name, "fixed", "itl_ms", f"p{stat}", row[f"{stat}%(s)"],
                        where + f", {stat}%")  # fmt: skip
        if "model" not in (rows[0] if rows else {}):
            continue
        name = ""
        for row in rows:
            name = row["model"] or name  # a blank model cell continues the one above
            if name not in MODELS:
                continue
            rps = float(row.get("PRS") or row["RPS"])
            out_tps = float(row["throughput(out tok/s)"])
            total_tps = float(row["throughput(total tok/s)"])
            mean_out, mean_in = out_tps / rps, (total_tps - out_tps) / rps
            batch = int(row["batch"])
            prompts = int(row.get("num_prompts") or row["num_promts"])
            base = setup(
                edition, name, row["tp"], batch, prompts,
                ("sharegpt", f"{mean_in:.2f}", f"{mean_out:.2f}", 1.0),
            )  # fmt: skip
            where = f"Request Throughput Benchmark, {name}, batch {batch}"
            add(base, name, "sharegpt", "requests_per_s", "value", str(rps), where + ", RPS")
            add(base, name, "sharegpt", "output_tokens_per_s", "value", row["throughput(out tok/s)"],
                where + ", throughput(out tok/s)")  # fmt: skip
            add(base, name, "sharegpt", "ttft_ms", "mean", row["FTL(ave)(s)"], where + ", FTL(ave)")
            for stat in ITL_PERCENTILES:
                if f"{stat}%(s)" in row:
                    add(base, name, "sharegpt", "itl_ms", f"p{stat}", row[f"{stat}%(s)"],
                        where + f", {stat}%")  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edition", choices=sorted(EDITIONS), default="v0.1.0a1")
    parser.add_argument("--out", type=Path, help="output CSV (default: the edition's file)")
    args = parser.parse_args()
    edition = EDITIONS[args.edition]
    text = (FOLDER / "raw" / edition.raw).read_text(encoding="utf-8")
    out = rows_of(edition, text)
    target = args.out or FOLDER / edition.out
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(out)
    print(f"{target}: {len(out)} numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
