"""Execute the tutorial notebooks and commit them with their outputs, every chart also
as a static PNG.

GitHub (and any viewer without plotly's JavaScript) shows nothing for plotly's own
output type, ``application/vnd.plotly.v1+json``; this script executes each notebook top
to bottom with nbclient (plotly renderer ``plotly_mimetype``: the figure's JSON, no
inlined plotly.js) and adds an ``image/png`` beside every plotly figure, drawn by
kaleido in the system's Chromium (`app.dashboard.png_export`, one browser for the whole
run). Jupyter front ends with plotly support still draw the interactive figure; GitHub
draws the picture. Cell timing metadata is not recorded, so a rerun changes only what
the code prints.

    python notebooks/regenerate.py                      # every notebook in notebooks/
    python notebooks/regenerate.py 01_quickstart        # those whose name contains a filter

``tests/test_notebooks.py`` checks that every chart cell carries its PNG, that the
committed cells are those the code produces, and that each file stays small
(`MAX_NOTEBOOK_BYTES`). Needs Chromium (``.ci/install-browser``).
"""

from __future__ import annotations

import base64
import os
import sys
import tempfile
import time
from pathlib import Path

import nbclient
import nbformat
import plotly.graph_objects as go

from app.dashboard.png_export import figure_png, system_chromium

NOTEBOOK_DIR = Path(__file__).resolve().parent
PLOTLY_MIMETYPE = "application/vnd.plotly.v1+json"
PNG_MIMETYPE = "image/png"
#: Device pixels per layout pixel of a notebook's PNG: 1 keeps each picture ~50-100 kB.
NOTEBOOK_PNG_SCALE = 1.0
#: Seconds one cell may run.
CELL_TIMEOUT_S = 120


def execute(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` executed top to bottom in a fresh kernel (working directory
    a scratch folder, so nothing it writes lands in the repository)."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    os.environ["PLOTLY_RENDERER"] = "plotly_mimetype"
    with tempfile.TemporaryDirectory() as scratch:
        client = nbclient.NotebookClient(
            notebook,
            timeout=CELL_TIMEOUT_S,
            kernel_name="python3",
            record_timing=False,
            resources={"metadata": {"path": scratch}},
        )
        client.execute()
    return notebook


def add_static_images(notebook: nbformat.NotebookNode, browser: Path) -> int:
    """Add an ``image/png`` to every output that carries a plotly figure; returns how many."""
    count = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            figure_json = output.get("data", {}).get(PLOTLY_MIMETYPE)
            if figure_json is None:
                continue
            png = figure_png(go.Figure(figure_json), browser, scale=NOTEBOOK_PNG_SCALE)
            output["data"][PNG_MIMETYPE] = base64.b64encode(png).decode("ascii")
            count += 1
    return count


def main(filters: list[str]) -> int:
    browser = system_chromium()
    if browser is None:
        print("regenerate: no Chromium (run .ci/install-browser) or no kaleido", file=sys.stderr)
        return 2
    paths = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    if filters:
        paths = [path for path in paths if any(text in path.stem for text in filters)]
    if not paths:
        print(f"regenerate: no notebook in {NOTEBOOK_DIR} matches {filters}", file=sys.stderr)
        return 2
    for path in paths:
        started = time.perf_counter()
        notebook = execute(path)
        charts = add_static_images(notebook, browser)
        nbformat.write(notebook, path)
        print(
            f"{path.name}: {charts} chart(s) with PNG, {path.stat().st_size / 1e3:.0f} kB, "
            f"{time.perf_counter() - started:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
