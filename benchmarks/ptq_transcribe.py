"""Transcribe published PTQ perplexities of over-trained models into a PTQ table (issue #27).

Writes ``data/scaling/ptq/published/ptq_overtrained.csv`` (same columns as
``ptq_published.csv``, read by `scaling_law.ptq_data.load_ptq_rows`) from the cells below,
each copied by hand from the public source named with it and never edited:

* ``ANY4``: facebookresearch/any4 ``README.md`` at commit 02a60112 ("Accuracy Results",
  WikiText-2 column): Llama-3.2 1B, Llama-3 8B / 70B, Llama-2 7B / 13B / 70B at 16 bits and
  after round-to-nearest 4-bit group quantisation (group 128, ``lm_head`` skipped) to INT4,
  FP4, NF4 and the paper's learned ANY4 (Elhoushi & Johnson, ICML 2025, arXiv 2507.04610).
* ``LLAMA3_IMATRIX``: llama.cpp's "LLaMA 3 8b Scoreboard" (``tools/perplexity/README.md``,
  added by ggml-org/llama.cpp PR #6936, revision f364eb6f), the rows quantised with the
  "WT 10m" importance matrix (the project already ships that table's rows without one).
* ``GEMMA2_9B``: ik_llama.cpp PR #53 (2024-09-14, mirrored in ikawrakow/ik_llama.cpp
  ``github-data/pull_requests/53 - Quantization mixes tweaks.md``): Gemma-2 9B, mainline
  quantisation mixes ("main" columns): bits per weight of the whole model and
  ``QError = PPL(Q) / PPL(fp16) - 1``.
* ``LLAMA31_8B``: ik_llama.cpp PR #83 (2024-10-09, same mirror, ``83 - New SOTA
  quantization_ 4.25 bpw IQ4_KS.md``): LLaMA-3.1-8B, ``Qerr(IQ4_XS)`` (mainline type).
* ``ptq_gguf_tables.py`` (issue #27 round 3): llama.cpp tables of several sizes of one
  family: the Qwen team's Qwen2-Instruct 0.5B-72B card table, ThomasBaruzier's
  Qwen2.5-Instruct 0.5B / 1.5B / 32B and Llama-3.3-70B-Instruct tables, dranger003's
  Llama-3 70B table (llama.cpp PR #6745), the LLaMA-1 7B / 13B k-quants of PR #1684.

Sources quoting only the ratio give ``ppl_16 = 1`` and ``ppl_quant = 1 + QError``: only the
ratio enters the degradation ``ln(PPL_q / PPL_16)``, and ``source_table`` says so.

Run from the repository root (a fraction of a second)::

    python benchmarks/ptq_transcribe.py [--out data/scaling/ptq/published/ptq_overtrained.csv]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from ptq_gguf_tables import gguf_cells

from scaling_law.ptq_data import PTQ_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "data" / "scaling" / "ptq" / "published" / "ptq_overtrained.csv"
DATE_READ = "2026-12-04"

#: Model: (family, parameters N, training tokens D). Cards: Llama 3.2 (1.23B, "up to 9T
#: tokens"), Llama 3 / 3.1 ("over 15T"), Llama 2 (2.0T, arXiv 2307.09288 Table 1), Gemma 2
#: (9B: 8T tokens, arXiv 2408.00118 Section 3), Qwen2 (arXiv 2407.10671, model table:
#: trained tokens 12T for 0.5B, 7T for 1.5B / 7B / 72B), Qwen2.5 (18T tokens, Qwen2.5
#: report arXiv 2412.15115), Llama 3.3 70B ("15+ trillion tokens", NVIDIA NeMo's Llama
#: model page); Qwen and Llama-3.3 N nominal, as the names say, and their rows are of the
#: -Instruct models (the base model plus post-training). N of the models already shipped
#: in ptq_published.csv is kept as there (nominal sizes), so one model has one (N, D).
MODELS = {
    "Llama-3.2 1B": ("llama3", 1.23e9, 9e12),
    "Llama-3 8B": ("llama3", 8.0e9, 15e12),
    "Llama-3.1 8B": ("llama3", 8.0e9, 15e12),
    "Llama-3 70B": ("llama3", 70.6e9, 15e12),
    "Llama-2 7B": ("llama2", 6.7e9, 2e12),
    "Llama-2 13B": ("llama2", 13.0e9, 2e12),
    "Llama-2 70B": ("llama2", 70e9, 2e12),
    "Gemma-2 9B": ("gemma2", 9.24e9, 8e12),
    "Qwen2 0.5B-Instruct": ("qwen2", 0.5e9, 12e12),
    "Qwen2 1.5B-Instruct": ("qwen2", 1.5e9, 7e12),
    "Qwen2 7B-Instruct": ("qwen2", 7e9, 7e12),
    "Qwen2 72B-Instruct": ("qwen2", 72e9, 7e12),
    "Qwen2.5 0.5B-Instruct": ("qwen2.5", 0.5e9, 18e12),
    "Qwen2.5 1.5B-Instruct": ("qwen2.5", 1.5e9, 18e12),
    "Qwen2.5 32B-Instruct": ("qwen2.5", 32e9, 18e12),
    "Llama-3.3 70B-Instruct": ("llama3", 70.6e9, 15e12),
    "LLaMA-1 7B": ("llama1", 6.7e9, 1e12),
    "LLaMA-1 13B": ("llama1", 13.0e9, 1e12),
}

ANY4_SOURCE = (
    "https://github.com/facebookresearch/any4/blob/02a6011279bf691844e245917b18244040b4ead2/"
    "README.md (Elhoushi & Johnson, 'any4: Learned 4-bit Numeric Representation for LLMs', "
    "ICML 2025, arXiv 2507.04610)"
)
ANY4_TABLE = (
    "Accuracy Results, {model} table, WikiText-2 column: FP16 row = ppl_16, {kind} row = "
    "ppl_quant (round-to-nearest, group size 128, lm_head skipped)"
)
ANY4_BITS = (
    "4-bit codes + 16-bit scale and zero point per group of 128 weights = 4.25 (the any4 "
    "code's grouped intq; FP4/NF4/ANY4 given the same basis, their format offset absorbs any "
    "difference), quantised linear layers only (lm_head and embeddings stay 16-bit)"
)
#: any4 README: model -> (FP16, INT4, FP4, NF4, ANY4) WikiText-2 perplexities.
ANY4 = {
    "Llama-3.2 1B": (9.76, 11.89, 13.01, 10.99, 10.63),
    "Llama-3 8B": (6.14, 6.87, 7.10, 6.63, 6.51),
    "Llama-3 70B": (2.86, 3.63, 3.94, 3.43, 3.20),
    "Llama-2 7B": (5.47, 5.74, 5.83, 5.66, 5.59),
    "Llama-2 13B": (4.88, 5.05, 5.07, 4.99, 4.97),
    "Llama-2 70B": (3.32, 3.46, 3.53, 3.44, 3.40),
}
ANY4_KINDS = ("INT4", "FP4", "NF4", "ANY4")

LLAMA3_SOURCE = (
    "https://github.com/ggml-org/llama.cpp/blob/master/tools/perplexity/README.md (added by "
    "https://github.com/ggml-org/llama.cpp/pull/6936; read in the copy at "
    "ikawrakow/ik_llama.cpp@8337e4cd examples/perplexity/README.md)"
)
LLAMA3_TABLE = (
    "LLaMA 3 8b Scoreboard (revision f364eb6f), imatrix 'WT 10m' rows, PPL column; ppl_16 = "
    "the f16 row"
)
LLAMA3_F16_PPL = 6.233160
LLAMA3_F16_GIB = 14.97
#: Scoreboard, imatrix "WT 10m": type -> (model size GiB, PPL).
LLAMA3_IMATRIX = {
    "Q4_K_M": (4.58, 6.382937),
    "Q4_K_S": (4.37, 6.409697),
    "IQ4_NL": (4.35, 6.455593),
    "IQ4_XS": (4.14, 6.459705),
    "Q3_K_L": (4.03, 6.671223),
    "Q3_K_M": (3.74, 6.734255),
    "IQ3_M": (3.53, 6.898327),
    "IQ3_S": (3.42, 6.965501),
    "IQ3_XS": (3.28, 7.163043),
    "IQ3_XXS": (3.05, 7.458436),
    "Q3_K_S": (3.41, 7.602878),
    "IQ2_M": (2.74, 8.600799),
    "Q2_K": (2.96, 8.647825),
    "Q2_K_S": (2.96, 9.323778),
    "IQ2_S": (2.56, 9.650781),
    "IQ2_XS": (2.43, 10.761424),
    "IQ2_XXS": (2.24, 14.091782),
    "IQ1_M": (2.01, 25.493722),
}

IK_MIRROR = (
    "ikawrakow/ik_llama.cpp@8337e4cd3861406fc04e0854b1409cd1b027fbc9 github-data/pull_requests/"
)
GEMMA_SOURCE = (
    "https://github.com/ikawrakow/ik_llama.cpp/pull/53 (ikawrakow, 2024-09-14; text in "
    + IK_MIRROR
    + "53 - Quantization mixes tweaks.md)"
)
GEMMA_TABLE = (
    "Gemma2-9b table, 'bpw (main)' and 'QError (main)' columns (QError = PPL(Q)/PPL(fp16)-1; "
    "ratio only, so ppl_16 = 1, ppl_quant = 1 + QError)"
)
#: PR #53, main branch (mainline llama.cpp mixes): type -> (bpw, QError %).
GEMMA2_9B = {
    "IQ1_M": (2.20, 78.04),
    "IQ2_XXS": (2.44, 41.79),
    "IQ2_XS": (2.65, 29.58),
    "IQ2_S": (2.77, 22.12),
    "IQ2_M": (2.97, 15.22),
    "IQ3_XXS": (3.28, 8.46),
    "IQ3_S": (3.75, 4.79),
    "IQ4_XS": (4.48, 1.56),
}

LLAMA31_SOURCE = (
    "https://github.com/ikawrakow/ik_llama.cpp/pull/83 (ikawrakow, 2024-10-09; text in "
    + IK_MIRROR
    + "83 - New SOTA quantization_ 4.25 bpw IQ4_KS.md)"
)
LLAMA31_TABLE = (
    "Qerr table, LLaMA-3.1-8B row, Qerr(IQ4_XS) column (Qerr = PPL(Q)/PPL(f16)-1; ratio only, "
    "so ppl_16 = 1, ppl_quant = 1 + Qerr)"
)
LLAMA31_QERR_PERCENT = 2.82
#: Same architecture and mainline IQ4_XS mix as Llama-3 8B, whose IQ4_XS file is 4.14 GiB.
LLAMA31_BITS = round(16 * 4.14 / LLAMA3_F16_GIB, 3)


def _row(
    model: str,
    quant: str,
    bits: float,
    basis: str,
    ppl_16: float,
    ppl_q: float,
    source: str,
    table: str,
) -> dict[str, object]:
    family, params, tokens = MODELS[model]
    return {
        "model": model,
        "family": family,
        "params": f"{params:.0f}",
        "train_tokens": f"{tokens:.0f}",
        "quant_type": quant,
        "bits_per_weight": f"{bits:g}",
        "bits_basis": basis,
        "ppl_16": f"{ppl_16:g}",
        "ppl_quant": f"{ppl_q:.6g}",
        "source": source,
        "source_table": table,
        "date_read": DATE_READ,
    }


def rows() -> list[dict[str, object]]:
    """Every transcribed row, in source order."""
    out = []
    for model, (fp16, *quantised) in ANY4.items():
        for kind, ppl in zip(ANY4_KINDS, quantised, strict=True):
            table = ANY4_TABLE.format(model=model.replace("-", ""), kind=kind)
            out.append(_row(model, f"{kind}-g128", 4.25, ANY4_BITS, fp16, ppl, ANY4_SOURCE, table))
    for quant, (gib, ppl) in LLAMA3_IMATRIX.items():
        bits = round(16 * gib / LLAMA3_F16_GIB, 3)
        basis = (
            f"16 x file size {gib} GiB / f16 size {LLAMA3_F16_GIB} GiB (whole file, incl. "
            "scales and unquantised tensors)"
        )
        out.append(
            _row(
                "Llama-3 8B",
                f"{quant}+imatrix",
                bits,
                basis,
                LLAMA3_F16_PPL,
                ppl,
                LLAMA3_SOURCE,
                LLAMA3_TABLE,
            )
        )
    for quant, (bpw, qerr) in GEMMA2_9B.items():
        basis = "bits per weight of the whole model as stated in the source (bpw (main))"
        out.append(
            _row("Gemma-2 9B", quant, bpw, basis, 1.0, 1 + qerr / 100, GEMMA_SOURCE, GEMMA_TABLE)
        )
    basis = (
        f"16 x 4.14 GiB / {LLAMA3_F16_GIB} GiB: Llama-3 8B's mainline IQ4_XS file (LLaMA 3 8b "
        "Scoreboard); Llama-3.1 8B has the same architecture and tensor shapes"
    )
    out.append(
        _row(
            "Llama-3.1 8B",
            "IQ4_XS",
            LLAMA31_BITS,
            basis,
            1.0,
            1 + LLAMA31_QERR_PERCENT / 100,
            LLAMA31_SOURCE,
            LLAMA31_TABLE,
        )
    )
    out.extend(_row(*cell) for cell in gguf_cells())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="CSV to write")
    args = parser.parse_args(argv)
    table = rows()
    with args.out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=PTQ_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)
    print(f"wrote {len(table)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
