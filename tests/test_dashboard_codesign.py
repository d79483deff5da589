"""The Co-design page through Streamlit's AppTest: frontier chart, design pick, downloads,
and the CLI call under the page printing the same numbers."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from app import cli
from app.dashboard.codesign_page import extrapolation_note, failure_message
from search.codesign import load_space, search_designs

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "app" / "dashboard" / "main.py"


def page() -> AppTest:
    """The Co-design page on the small packaged example."""
    at = AppTest.from_file(str(DASHBOARD), default_timeout=60)
    at.switch_page("codesign_page.py")
    at.session_state["codesign_space"] = "edge_quickstart.yaml"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.header[0].value.startswith("Co-design")
    return at


def cli_frontier(command: str, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Run the page's ``codesign search`` line (from the repo root) and return its frontier."""
    monkeypatch.chdir(ROOT)
    argv = shlex.split(command)[1:]
    index = argv.index("--frontier-out")
    del argv[index : index + 2]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())["frontier"]


def test_frontier_pick_and_downloads_match_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    at = page()
    assert len(at.get("plotly_chart")) == 1
    labels = {button.label for button in at.get("download_button")}
    assert "Download config.json" in labels
    assert any(
        label.endswith(".zip (config.json, bits.yaml, platform.yaml, design.json)")
        for label in labels
    )
    at.selectbox(key="codesign_design").set_value(3).run()
    frontier = cli_frontier(at.code[-1].value.splitlines()[0], monkeypatch)
    third = next(row for row in frontier if row["rank"] == 3)
    assert at.subheader[0].value == third["design"]
    tpot = next(m.value for m in at.metric if m.label == "TPOT")
    assert tpot == f"{third['tpot_s'] * 1e3:.3g} ms"
    perplexity = next(m.value for m in at.metric if m.label == "Perplexity")
    assert perplexity == f"{third['perplexity']:.4g}"


def test_memory_bound_moves_the_feasible_count() -> None:
    at = page()
    bounded = next(c.value for c in at.caption if "feasible" in c.value)
    # The page shows the library's answer for the same space and bound.
    library = search_designs(load_space(ROOT / "examples" / "edge_quickstart.yaml"))
    assert bounded.startswith(f"{library.message}; ")
    # edge_quickstart: 2 bandwidths x 3 depths x 3 widths x 3 weight widths = 54 designs,
    # all within the Orin Nano's 8 GB. Its 2 GB bound excludes only the 24-layer,
    # 2048-wide design at 16 bits (at both bandwidths): 24 x 45.09e6 per layer + two
    # 32000 x 2048 embeddings = 1.213e9 parameters x 2 bytes = 2.43 GB. The next largest,
    # 16 layers at 16 bits, holds 0.853e9 x 2 = 1.71 GB + 42 MB of KV cache: it fits.
    assert "of 52 feasible (54 evaluated)" in bounded
    at.checkbox(key="codesign_bound").uncheck().run()
    free = next(c.value for c in at.caption if "feasible" in c.value)
    assert "of 54 feasible (54 evaluated)" in free
    at.checkbox(key="codesign_bound").check().run()
    at.number_input(key="codesign_memory_gb").set_value(0.1).run()
    assert at.error and at.error[0].value.startswith("no design meets the constraints")


def test_within_data_toggle_and_design_caption_match_the_library() -> None:
    at = page()
    caption = next(c.value for c in at.caption if "nats/token" in c.value)
    assert "post-training quantisation" in caption and "model-form spread" in caption
    at.checkbox(key="codesign_within_data").check().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "--within-data" in at.code[-1].value.splitlines()[0]
    library = search_designs(
        load_space(ROOT / "examples" / "edge_quickstart.yaml"), within_data=True
    )
    # Issue #27: --within-data also keeps only designs at the base model's value on the
    # dimensions the law cannot price. Every quickstart design either extrapolates or
    # moves GQA away from the llama-style base's 2 query heads per KV head (head_dim 128,
    # 4 KV heads: 1536 and 2048 wide give 3 and 4), so none is left, and the page says so.
    assert not library.success
    assert "unpriced dimensions" in library.message
    assert at.error and at.error[0].value == failure_message(library.message, True)
    assert "cannot price" in at.error[0].value


def test_extrapolated_frontier_designs_are_named_in_a_warning() -> None:
    """edge_quickstart: the page's warning counts the frontier designs the library marks
    as extrapolated; orin_space (all 228 of them, too slow to search here) words 'All'."""
    at = page()
    result = search_designs(load_space(ROOT / "examples" / "edge_quickstart.yaml"))
    count, outside = len(result.frontier), int(result.frontier["extrapolated"].sum())
    assert 0 < outside < count
    assert at.warning[0].value.startswith(
        f"{outside} of {count} frontier designs extrapolate beyond the loss law's data"
    )
    frame = pd.DataFrame(
        {"extrapolated": [True, True], "outside_domain": ["tokens", "params, tokens"]}
    )
    note = extrapolation_note(frame)
    assert note is not None and note.startswith("All 2 frontier designs")
    assert "(params, tokens outside" in note
    assert extrapolation_note(frame.assign(extrapolated=False)) is None


def test_within_data_failure_is_explained() -> None:
    message = (
        "no design meets the constraints; binding: inside the law's data domain "
        "(--within-data) (best achievable while meeting the others: 1)"
    )
    assert failure_message(message, True).startswith(
        "No design of this space lies inside the loss law's data"
    )
    assert failure_message("no design meets the constraints; binding: memory", False).startswith(
        "no design meets"
    )
