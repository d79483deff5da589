"""Execute every notebook in ``notebooks/`` with nbclient: each must run top to bottom
without an error (the notebooks assert their own conclusions). The committed files carry
the outputs ``notebooks/regenerate.py`` wrote: every chart also as a PNG (GitHub draws no
plotly figure), cells numbered in order, no error, each file small.

The notebooks are independent (a kernel process each, a folder each), so the selected
ones run `PARALLEL_KERNELS` at a time, once per module (`executed`); each notebook's test
then checks its own run."""

from __future__ import annotations

import asyncio
import base64
import os
import struct
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed")
pytest.importorskip("ipykernel", reason="ipykernel is not installed")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 120
PLOTLY_MIMETYPE = "application/vnd.plotly.v1+json"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: A committed notebook's size limit: its PNGs at scale 1 are ~50-90 kB each.
MAX_NOTEBOOK_BYTES = 400_000
#: The smallest picture that still reads (layout pixels).
MIN_PNG_WIDTH_PX = 600
REGENERATE = "run `python notebooks/regenerate.py` to rewrite its outputs"
#: Kernels run at once: one per core, at most two (a notebook is one busy process).
PARALLEL_KERNELS = max(1, min(2, os.cpu_count() or 1))


def chart_cells(notebook) -> list[int]:
    """Indices of the code cells that display a plotly figure."""
    return [
        index
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        and any(PLOTLY_MIMETYPE in output.get("data", {}) for output in cell.outputs)
    ]


def png_size(encoded: str) -> tuple[int, int]:
    """(width, height) in pixels of a base64 PNG; fails on anything else."""
    data = base64.b64decode(encoded)
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_the_tutorial_notebooks_exist() -> None:
    names = {path.name for path in NOTEBOOKS}
    assert {
        "01_quickstart.ipynb",
        "02_edge_vs_datacenter_decode.ipynb",
        "03_scaling_law_codesign.ipynb",
    } <= names


def test_the_quickstart_and_codesign_notebooks_show_their_charts() -> None:
    counts = {path.stem: len(chart_cells(nbformat.read(path, as_version=4))) for path in NOTEBOOKS}
    assert counts["01_quickstart"] == 2 and counts["03_scaling_law_codesign"] == 1, REGENERATE


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_every_chart_carries_a_static_png(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for index in chart_cells(notebook):
        for output in notebook.cells[index].outputs:
            data = output.get("data", {})
            if PLOTLY_MIMETYPE in data:
                assert "image/png" in data, f"{path.name} cell {index}: no PNG; {REGENERATE}"
                width, height = png_size(data["image/png"])
                assert width >= MIN_PNG_WIDTH_PX and height >= 300, (path.name, index)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_committed_outputs_come_from_one_clean_run(path: Path) -> None:
    assert path.stat().st_size <= MAX_NOTEBOOK_BYTES, path.name
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), REGENERATE
    for cell in code:
        assert "execution" not in cell.metadata, path.name  # no timings: reruns diff cleanly
        for output in cell.outputs:
            assert output.output_type != "error", path.name
            html = output.get("data", {}).get("text/html", "")
            assert "<script" not in html, f"{path.name}: plotly.js inlined"


def cleared(path: Path):
    """The notebook at ``path`` with every code cell's outputs removed."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    return notebook


async def execute_all(paths: list[Path], folder: Path) -> dict[Path, object]:
    """Run each notebook top to bottom in its own kernel and folder, `PARALLEL_KERNELS` at
    a time: the executed notebook, or the exception its run raised."""
    gate = asyncio.Semaphore(PARALLEL_KERNELS)

    async def run(path: Path) -> object:
        notebook = cleared(path)
        cwd = folder / path.stem
        cwd.mkdir()
        client = nbclient.NotebookClient(
            notebook,
            timeout=CELL_TIMEOUT_S,
            kernel_name="python3",
            resources={"metadata": {"path": str(cwd)}},
        )
        async with gate:
            await client.async_execute()
        return notebook

    results = await asyncio.gather(*(run(path) for path in paths), return_exceptions=True)
    return dict(zip(paths, results, strict=True))


@pytest.fixture(scope="module")
def executed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The notebooks the session's `test_notebook_executes` items name, each executed."""
    wanted = [
        item.callspec.params["path"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_notebook_executes"
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PLOTLY_RENDERER", "plotly_mimetype")  # what regenerate.py uses
        return asyncio.run(execute_all(wanted, tmp_path_factory.mktemp("notebooks")))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_executes(path: Path, executed: dict[Path, object]) -> None:
    committed = nbformat.read(path, as_version=4)
    notebook = executed[path]
    if isinstance(notebook, BaseException):
        raise notebook
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert not errors
    # The committed file shows a chart (with its PNG) exactly where the code draws one,
    # and an output wherever the code prints one.
    assert chart_cells(committed) == chart_cells(notebook), REGENERATE
    with_output = [i for i, cell in enumerate(notebook.cells) if cell.get("outputs")]
    assert with_output == [i for i, cell in enumerate(committed.cells) if cell.get("outputs")]
