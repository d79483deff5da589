"""Published llama.cpp (GGUF) perplexity tables of several sizes of one family, as cells
for `ptq_transcribe.py` (issue #27 item 3). Each table is copied by hand from the source
named with it and never edited; `gguf_cells` turns them into rows
``(model, quant_type, bits, bits_basis, ppl_16, ppl_quant, source, source_table)``.

* ``QWEN2``: the Qwen team's table in its Qwen2-Instruct GGUF cards ("Evaluation", llama.cpp
  ``llama-perplexity`` on wikitext; 0.5B, 1.5B, 7B, 72B; the 57B-A14B MoE row and the
  72B-only iq1_m cell are not taken).
* ``BARUZIER_TABLES``: ThomasBaruzier's ``perplexity.md`` tables in his
  Qwen2.5-Instruct (0.5B, 1.5B, 32B) and Llama-3.3-70B-Instruct GGUF repositories (every
  quant made with an importance matrix from Bartowski's calibration file; one set-up for
  all four). The 3B, 7B and 14B tables are not taken: their stored copies stop before the
  F16 row.
* ``LLAMA3_70B``: dranger003's Llama-3 70B table in llama.cpp PR #6745 (2024-05-03; 400
  chunks of wiki.train as importance matrix for the quants below Q6_K).
* ``LLAMA1_KQUANTS``: the k-quants table of llama.cpp PR #1684 (ikawrakow, LLaMA-1 7B and
  13B; the F16 perplexities are those of the legacy table already shipped for these models,
  same set-up); 13B only where the table's file-size row is stored (Q2_K ... Q4_K_S).

Bits per weight, stated per row: the Qwen2 table gives no sizes, and the small Qwen2.5
models' 152k-token embedding (tied: 28 % of the 0.5B model's weights, 15 % of the 1.5B's)
makes a whole-file ratio a poor measure of the mix, so those k-quant rows are read from the
BPW tables of llama.cpp's ``examples/quantize/README.md`` (bits of the mix on the transformer
tensors; Llama 2 7B table, 70B table for Qwen2 72B) and only their k-quants are taken; the
other models' rows are ``16 x file size / F16 file size`` from the sources' own size columns
(whole file, embedding and output included: 3-5 % of these models' weights), the basis of
the Llama-3 8B scoreboard rows. Legacy formats are their block bits (32 weights + fp16
scale: Q4_0 4.5, Q5_0 5.5, Q8_0 8.5). Importance-matrix rows carry ``+imatrix`` (the format
kinds of `scaling_law.ptq_formats`); their legacy rows are not taken (no model measures the
offset of legacy formats made with an importance matrix, so they could not be placed).
"""

from __future__ import annotations

QUANTIZE_README = (
    "https://github.com/ggerganov/llama.cpp/blob/02240912ff3621da378ed62cb5d0f279f17fc9d1/"
    "examples/quantize/README.md"
)
#: QUANTIZE_README's BPW tables: Llama 2 7B and 70B.
BPW_TABLES = {
    "Llama 2 7B": {
        "Q2_K": 3.35, "Q3_K_S": 3.50, "Q3_K_M": 3.91, "Q3_K_L": 4.27, "Q4_K_S": 4.58,
        "Q4_K_M": 4.84, "Q5_K_S": 5.52, "Q5_K_M": 5.68, "Q6_K": 6.56,
    },
    "Llama 2 70B": {
        "Q2_K": 3.40, "Q3_K_S": 3.47, "Q3_K_M": 3.85, "Q3_K_L": 4.19, "Q4_K_S": 4.53,
        "Q4_K_M": 4.80, "Q5_K_S": 5.50, "Q5_K_M": 5.65, "Q6_K": 6.56,
    },
}  # fmt: skip
LEGACY_BPW = {"Q8_0": 8.5, "Q5_0": 5.5, "Q4_0": 4.5}
LEGACY_BASIS = "legacy block format: 32 weights + one fp16 scale"
KQUANTS = ("Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K")

QWEN2_SOURCE = (
    "https://huggingface.co/Qwen/Qwen2-0.5B-Instruct-GGUF/commit/"
    "b182c7646062bdd5fd6e0cf75337cb8ad096f56c (README.md, 'Evaluation'; the same table in "
    "Qwen/Qwen2-1.5B-Instruct-GGUF, -7B-, -72B-Instruct-GGUF)"
)
QWEN2_TABLE = (
    "Evaluation table (llama.cpp llama-perplexity on wikitext), {size} row: fp16 column = "
    "ppl_16, {kind} column = ppl_quant"
)
QWEN2_TYPES = ("Q8_0", "Q6_K", "Q5_K_M", "Q5_0", "Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K")
#: Qwen2 card table: size -> (fp16, q8_0, q6_k, q5_k_m, q5_0, q4_k_m, q4_0, q3_k_m, q2_k).
QWEN2 = {
    "0.5B": (15.11, 15.13, 15.14, 15.24, 15.40, 15.36, 16.28, 15.70, 16.74),
    "1.5B": (10.43, 10.43, 10.45, 10.50, 10.56, 10.61, 10.79, 11.08, 13.04),
    "7B": (7.93, 7.94, 7.96, 7.97, 7.98, 8.02, 8.19, 8.20, 10.58),
    "72B": (5.58, 5.58, 5.59, 5.59, 5.60, 5.61, 5.66, 5.68, 5.91),
}

BARUZIER = "https://huggingface.co/ThomasBaruzier/{repo}/commit/{commit} (perplexity.md)"
BARUZIER_TABLE = (
    "{name} perplexity table, PPL column: F16 row = ppl_16, {quant} row = ppl_quant "
    "(made with an importance matrix)"
)
#: ThomasBaruzier tables: model -> (repo, commit, F16 size MB, F16 PPL, {quant: (MB, PPL)}).
BARUZIER_TABLES = {
    "Qwen2.5 0.5B-Instruct": ("Qwen2.5-0.5B-Instruct-GGUF", "43933b7d3f186b9074b4ab7cdf7a1652c086a4cf",
                     949, 15.1819, {
        "Q2_K": (323, 17.6841), "Q3_K_S": (323, 17.7765), "Q3_K_M": (339, 15.8499),
        "Q3_K_L": (353, 15.7298), "Q4_K_S": (368, 15.5497), "Q4_K_M": (380, 15.4428),
        "Q5_K_S": (394, 15.5266), "Q5_K_M": (401, 15.4788), "Q6_K": (483, 15.2145)}),
    "Qwen2.5 1.5B-Instruct": ("Qwen2.5-1.5B-Instruct-GGUF", "449ed4880d309facedc2fceac95cbf64105f76c8",
                     2951, 10.1512, {
        "Q2_K": (645, 14.1657), "Q3_K_S": (726, 12.4782), "Q3_K_M": (786, 11.3529),
        "Q3_K_L": (840, 11.1934), "Q4_K_S": (897, 10.5236), "Q4_K_M": (941, 10.4628),
        "Q5_K_S": (1048, 10.2715), "Q5_K_M": (1073, 10.2529), "Q6_K": (1214, 10.2030)}),
    "Qwen2.5 32B-Instruct": ("Qwen2.5-32B-Instruct-GGUF", "1fe22900f056ea7b52345931e37d5bc889147907",
                    62500, 5.5191, {
        "Q2_K": (11743, 6.6603), "Q3_K_S": (13726, 6.0878), "Q3_K_M": (15197, 5.8008),
        "Q3_K_L": (16449, 5.7812), "Q4_K_S": (17915, 5.6367), "Q4_K_M": (18932, 5.6224),
        "Q5_K_S": (21590, 5.5680), "Q5_K_M": (22185, 5.5670), "Q6_K": (25641, 5.5305),
        "IQ2_M": (10743, 6.7268), "IQ3_XXS": (12245, 6.1570), "IQ3_M": (14125, 5.9942),
        "IQ4_XS": (16874, 5.6502)}),
    "Llama-3.3 70B-Instruct": ("Llama-3.3-70B-Instruct-GGUF", "ed38ae9 (short hash as stored)",
                      134580, 5.4539, {
        "Q2_K": (25153, 6.7633), "Q3_K_S": (29480, 5.9948), "Q3_K_M": (32680, 5.8430),
        "Q3_K_L": (35420, 5.8050), "Q4_K_S": (38478, 5.5814), "Q4_K_M": (40550, 5.5582),
        "Q5_K_S": (46403, 5.5143), "Q5_K_M": (47635, 5.4842), "Q6_K": (55206, 5.4699),
        "IQ2_M": (23001, 6.8673), "IQ3_XXS": (26196, 6.1197), "IQ3_M": (30457, 5.7853),
        "IQ4_XS": (36146, 5.6062)}),
}  # fmt: skip
#: Models whose k-quant bits are read from a BPW table (embedding a large share of N).
BPW_TABLE_OF = {"Qwen2 0.5B-Instruct": "Llama 2 7B", "Qwen2 1.5B-Instruct": "Llama 2 7B",
                "Qwen2 7B-Instruct": "Llama 2 7B", "Qwen2 72B-Instruct": "Llama 2 70B",
                "Qwen2.5 0.5B-Instruct": "Llama 2 7B",
                "Qwen2.5 1.5B-Instruct": "Llama 2 7B"}  # fmt: skip

LLAMA3_70B_SOURCE = (
    "https://github.com/ggml-org/llama.cpp/pull/6745 (comment by dranger003, 2024-05-03, "
    "issuecomment-2093892514)"
)
LLAMA3_70B_TABLE = (
    "Llama-3 70B table, Perplexity (wiki.test) column: F16 row = ppl_16, {quant} row = "
    "ppl_quant (imatrix: 400 chunks of wiki.train below Q6_K)"
)
#: PR #6745 comment: quant -> (size GiB, PPL); F16 131.43 GiB, PPL 2.8308.
LLAMA3_70B_F16 = (131.43, 2.8308)
LLAMA3_70B = {
    "IQ2_XXS": (17.79, 6.6705), "IQ2_XS": (19.69, 5.7486), "IQ2_S": (20.71, 5.5215),
    "IQ2_M": (22.46, 4.8959), "Q2_K": (24.56, 4.7763), "IQ3_XXS": (25.58, 3.9671),
    "IQ3_XS": (27.29, 3.7210), "Q3_K_S": (28.79, 3.6502), "IQ3_S": (28.79, 3.4698),
    "IQ3_M": (29.74, 3.4402), "Q3_K_M": (31.91, 3.3617), "Q3_K_L": (34.59, 3.3016),
    "IQ4_XS": (35.30, 3.0310), "IQ4_NL": (37.30, 3.0261), "Q4_K_S": (37.58, 3.0050),
    "Q4_K_M": (39.60, 2.9674), "Q5_K_S": (45.32, 2.8843), "Q5_K_M": (46.52, 2.8656),
    "Q6_K": (53.91, 2.8441), "Q8_0": (69.83, 2.8316),
}  # fmt: skip
LLAMA3_70B_PLAIN = ("Q6_K", "Q8_0")  # made without the importance matrix

LLAMA1_SOURCE = "https://github.com/ggml-org/llama.cpp/pull/1684 (ikawrakow, description)"
LLAMA1_TABLE = (
    "Performance table, {size} perplexity and file size rows: F16 column = ppl_16, {quant} "
    "column = ppl_quant"
)
#: PR #1684: size -> (F16 file size G, F16 PPL, {quant: (file size G, PPL)}).
LLAMA1_KQUANTS = {
    "7B": (13.0, 5.9066, {
        "Q2_K": (2.67, 6.7764), "Q3_K_S": (2.75, 6.4571), "Q3_K_M": (3.06, 6.1503),
        "Q3_K_L": (3.35, 6.0869), "Q4_K_S": (3.56, 6.0215), "Q4_K_M": (3.80, 5.9601),
        "Q5_K_S": (4.33, 5.9419), "Q5_K_M": (4.45, 5.9208), "Q6_K": (5.15, 5.9110)}),
    "13B": (25.0, 5.2543, {
        "Q2_K": (5.13, 5.8545), "Q3_K_S": (5.27, 5.6033), "Q3_K_M": (5.88, 5.4498),
        "Q3_K_L": (6.45, 5.4063), "Q4_K_S": (6.80, 5.3404)}),
}  # fmt: skip

Cell = tuple[str, str, float, str, float, float, str, str]


def _file_bits(size: float, f16_size: float, unit: str) -> tuple[float, str]:
    return round(16 * size / f16_size, 3), (
        f"16 x file size {size:g} {unit} / F16 size {f16_size:g} {unit} (whole file, incl. "
        "scales, embedding and output)"
    )


def _table_bits(model: str, quant: str) -> tuple[float, str]:
    if quant in LEGACY_BPW:
        return LEGACY_BPW[quant], LEGACY_BASIS
    table = BPW_TABLE_OF[model]
    return BPW_TABLES[table][quant], (
        f"{table} BPW table, {QUANTIZE_README} (the mix's bits on the transformer tensors; "
        "the 152k-token embedding, a large share of this model's weights, is not counted)"
    )


def gguf_cells() -> list[Cell]:
    """Every row of the tables above, in the order they are listed."""
    out: list[Cell] = []
    for size, (fp16, *quantised) in QWEN2.items():
        model = f"Qwen2 {size}-Instruct"
        for quant, ppl in zip(QWEN2_TYPES, quantised, strict=True):
            bits, basis = _table_bits(model, quant)
            table = QWEN2_TABLE.format(size=size, kind=quant.lower())
            out.append((model, quant, bits, basis, fp16, ppl, QWEN2_SOURCE, table))
    for model, (repo, commit, f16_mb, f16_ppl, cells) in BARUZIER_TABLES.items():
        for quant, (mb, ppl) in cells.items():
            if model in BPW_TABLE_OF:
                bits, basis = _table_bits(model, quant)
            else:
                bits, basis = _file_bits(mb, f16_mb, "MB")
            source = BARUZIER.format(repo=repo, commit=commit)
            table = BARUZIER_TABLE.format(name=repo.removesuffix("-GGUF"), quant=quant)
            out.append((model, f"{quant}+imatrix", bits, basis, f16_ppl, ppl, source, table))
    f16_gib, f16_ppl = LLAMA3_70B_F16
    for quant, (gib, ppl) in LLAMA3_70B.items():
        bits, basis = _file_bits(gib, f16_gib, "GiB")
        name = quant if quant in LLAMA3_70B_PLAIN else f"{quant}+imatrix"
        table = LLAMA3_70B_TABLE.format(quant=quant)
        out.append(("Llama-3 70B", name, bits, basis, f16_ppl, ppl, LLAMA3_70B_SOURCE, table))
    for size, (f16_g, f16_ppl, cells) in LLAMA1_KQUANTS.items():
        for quant, (g, ppl) in cells.items():
            bits, basis = _file_bits(g, f16_g, "G")
            table = LLAMA1_TABLE.format(size=size, quant=quant)
            out.append((f"LLaMA-1 {size}", quant, bits, basis, f16_ppl, ppl, LLAMA1_SOURCE, table))
    return out
