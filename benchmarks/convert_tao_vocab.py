"""Convert the vocabulary-sweep records of Tao et al. 2024 ("Scaling Laws with Vocabulary:
Larger Models Deserve Larger Vocabularies", NeurIPS 2024, arXiv 2407.13623; repository
sail-sg/scaling-with-vocab) into one row per finished training run.

Input: the repository's ``exp_data.csv`` at commit 6701cc20 (``--source``: a checkout or
``git show 6701cc20:exp_data.csv`` of sail-sg/scaling-with-vocab; the repository has no
licence file, so the raw file is not redistributed here, only the 60 finished-run values
transcribed from it with their line numbers): 1,200 rows = 60 runs (6 model families x 10 vocabulary
sizes, 4,096-96,256) x 20 evaluation points along each run's cosine schedule. A run is the
group of rows sharing ``(embed_dim, Non_vocab_parameters, vocab_size)``; its finished loss
is the row with the most FLOPs (the end of the schedule: the learning rate has decayed to
its minimum there, the earlier rows are mid-schedule and are not finished runs). Tokens
follow from the source's own FLOP count, ``FLOPs = 6 (Non_vocab_parameters + vocab_size x
embed_dim) D``. The architecture of each family (layers, heads, FFN width) comes from
``tao2024_families.json`` (the repository's model configs). The loss is the source's
``Lossu``: unigram-normalised validation loss on SlimPajama, nats per token (negative).

Run: ``python benchmarks/convert_tao_vocab.py --source exp_data.csv`` (writes ``data/scaling/vocab/tao2024_runs.csv``;
``--check`` compares instead of writing). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "data" / "scaling" / "vocab"
FIELDS = (
    "family",
    "layers",
    "hidden",
    "heads",
    "ffn",
    "vocab",
    "non_vocab_params",
    "tokens",
    "lossu",
    "source_line",
)


def runs(source: Path, families: Path) -> list[dict[str, object]]:
    """One row per run: the last evaluation point of each (family, vocabulary) group."""
    shapes = {int(f["non_vocab_params"]): f for f in json.loads(families.read_text())["families"]}
    last: dict[tuple[int, int, int], tuple[float, int, dict[str, str]]] = {}
    with source.open(newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            key = (
                int(float(row["embed_dim"])),
                int(float(row["Non_vocab_parameters"])),
                int(float(row["vocab_size"])),
            )
            flops = float(row["FLOPs"])
            if key not in last or flops > last[key][0]:
                last[key] = (flops, line, row)
    out = []
    for (width, non_vocab, vocab), (flops, line, row) in sorted(
        last.items(), key=lambda item: (item[0][1], item[0][2])
    ):
        family = shapes.get(non_vocab)
        if family is None or family["hidden"] != width:
            raise SystemExit(f"line {line}: no family with {non_vocab} non-vocab params, {width}")
        tokens = flops / (6.0 * (non_vocab + vocab * width))
        out.append(
            {
                "family": family["name"],
                "layers": family["layers"],
                "hidden": width,
                "heads": family["heads"],
                "ffn": family["ffn"],
                "vocab": vocab,
                "non_vocab_params": non_vocab,
                "tokens": f"{tokens:.6g}",
                "lossu": row["Lossu"],
                "source_line": line,
            }
        )
    return out


def render(rows: list[dict[str, object]]) -> str:
    """The CSV text of the converted rows."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source", type=Path, required=True, help="exp_data.csv of sail-sg/scaling-with-vocab"
    )
    parser.add_argument("--families", type=Path, default=FOLDER / "tao2024_families.json")
    parser.add_argument("--out", type=Path, default=FOLDER / "tao2024_runs.csv")
    parser.add_argument("--check", action="store_true", help="compare with --out, write nothing")
    args = parser.parse_args()
    text = render(runs(args.source, args.families))
    if args.check:
        same = args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'matches' if same else 'DIFFERS from'} the conversion")
        sys.exit(0 if same else 1)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({text.count(chr(10)) - 1} runs)")


if __name__ == "__main__":
    main()
