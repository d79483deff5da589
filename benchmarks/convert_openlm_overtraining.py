"""Convert the training records of Gadre et al. 2024 ("Language models scale reliably with
over-training and on downstream tasks", arXiv 2403.08540; repository mlfoundations/scaling,
MIT) into the project's scaling CSVs, one per training set (C4, RedPajama, RefinedWeb).

Input: a local git directory of the repository (``fetch github:mlfoundations/scaling``);
the files ``exp_data/models/*.json`` at ``--commit``. Per run: ``hyperparameters.params``
(all parameters, embeddings included) and ``hyperparameters.tokens`` (training tokens);
layers, width and heads from the model name (``d=512_l=8_h=4``) or open_lm's configs
(``open_lm_1b``: 24 x 2048, 16 heads; ``open_lm_7b``: 32 x 4096, 32 heads; mlfoundations/
open_lm ``open_lm/model_configs/``, commit 6851f479); the loss is the run's validation loss
on the Paloma split of its own training set (``paloma_c4_en``, ``paloma_redpajama``,
``paloma_falcon-refinedweb``: in distribution, the closest to a training loss).

Run: ``python benchmarks/convert_openlm_overtraining.py --repo /path/to/git-dir --out
data/scaling/overtrained``. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
from pathlib import Path

COMMIT = "a003c4913793ac2ae7ef87b28ecb562955d026d5"
DATASETS = {
    "c4_original": ("openlm_c4", "paloma_c4_en"),
    "rpj": ("openlm_redpajama", "paloma_redpajama"),
    "rw_original": ("openlm_refinedweb", "paloma_falcon-refinedweb"),
}
OPEN_LM = {"open_lm_1b": (24, 2048, 16), "open_lm_7b": (32, 4096, 32)}
SHAPE = re.compile(r"d=(\d+)_l=(\d+)_h=(\d+)")
FIELDS = ("params", "tokens", "layers", "hidden", "heads", "loss")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def shape(model: str) -> tuple[int, int, int]:
    """(layers, hidden, heads) of a run's model name."""
    if model in OPEN_LM:
        return OPEN_LM[model]
    match = SHAPE.fullmatch(model)
    if match is None:
        raise SystemExit(f"unknown model name {model!r}")
    hidden, layers, heads = (int(v) for v in match.groups())
    return layers, hidden, heads


def rows(repo: Path, commit: str) -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {name: [] for name, _ in DATASETS.values()}
    paths = git(repo, "ls-tree", "-r", "--name-only", commit, "exp_data/models").split()
    for path in sorted(paths):
        record = json.loads(git(repo, "show", f"{commit}:{path}"))
        name, split = DATASETS[record["dataset_name"]]
        hyper = record["hyperparameters"]
        model = Path(hyper["model"]).stem
        losses = [r["loss"] for r in record["results"] if any(split in v for v in r["val_data"])]
        if len(losses) != 1:
            raise SystemExit(f"{path}: expected one {split} result, found {len(losses)}")
        layers, hidden, heads = shape(model)
        out[name].append(
            {
                "params": hyper["params"],
                "tokens": hyper["tokens"],
                "layers": layers,
                "hidden": hidden,
                "heads": heads,
                "loss": repr(float(losses[0])),
                "path": path,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="git directory of the clone")
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    for name, table in rows(args.repo, args.commit).items():
        target = args.out / f"{name}.csv"
        with target.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=FIELDS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(table)
        sources = args.out / f"{name}.sources.txt"
        sources.write_text(
            "".join(f"{i + 2}: {row['path']}\n" for i, row in enumerate(table)), encoding="utf-8"
        )
        print(f"wrote {target} ({len(table)} runs)")


if __name__ == "__main__":
    main()
