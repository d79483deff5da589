"""The shared look of every page: a one-line 'what this page shows' with its docs
section, a title on every chart (so its PNG says which model and hardware), legend
names in words (no raw column names), and the Home page with the presets' sources."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.cli.dashboard import streamlit_command
from app.dashboard.home_page import source_link

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "app" / "dashboard" / "main.py"
PAGES = (
    "roofline",
    "latency",
    "memory",
    "compare",
    "hardware",
    "accuracy",
    "precision",
    "serving",
    "codesign",
)


def opened(name: str) -> AppTest:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    at.switch_page(f"{name}_page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("name", PAGES)
def test_every_page_says_what_it_shows_and_titles_its_charts(name: str) -> None:
    if name == "precision":
        pytest.importorskip("search.bits.quantizer")
    if name in ("serving", "codesign"):
        pytest.importorskip(f"search.{name}")
    at = opened(name)
    links = [
        re.search(r"docs: `(docs/[\w-]+\.md)`, section \*([\w-]+)\*", c.value) for c in at.caption
    ]
    found = [link for link in links if link]
    assert found, [c.value for c in at.caption]
    # The section named is a heading of that docs file (MkDocs' anchor of its text).
    docs, section = ROOT / found[0][1], found[0][2]
    headings = [
        line.lstrip("#").strip() for line in docs.read_text().splitlines() if line.startswith("#")
    ]
    slugs = {re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", h).strip().lower()) for h in headings}
    assert section in slugs, (name, docs, section)
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec["layout"].get("title", {}).get("text", "")
        assert title, name
        for trace in spec["data"]:
            legend = trace.get("name") or ""
            assert not legend.endswith(("_ms", "_s", "_bytes")), (name, legend)


def test_a_weight_width_has_one_colour_on_every_page() -> None:
    """The Precision page's per-layer formats and the Co-design frontier colour a width
    alike (the shared `BITS_COLORS`): 8-bit is the same orange on both pages."""
    pytest.importorskip("search.bits.quantizer")
    pytest.importorskip("search.codesign")
    from app.charts import BITS_COLORS

    patterns = {"precision": r"\((\d+) bits\)$", "codesign": r"^frontier, (\d+)-bit weights$"}
    colours: dict[str, dict[int, str]] = {}
    for page, pattern in patterns.items():
        for chart in opened(page).get("plotly_chart"):
            for trace in json.loads(chart.proto.spec)["data"]:
                found = re.search(pattern, trace.get("name") or "")
                if found:
                    colours.setdefault(page, {})[int(found[1])] = trace["marker"]["color"]
    shared = set(colours["precision"]) & set(colours["codesign"])
    assert shared, colours
    for bits in shared:
        assert colours["precision"][bits] == colours["codesign"][bits] == BITS_COLORS[bits]


def test_precision_chart_title_names_the_allocation_not_the_sidebar_bits() -> None:
    """The Precision page replaces the sidebar's weight bits by its allocation: the chart
    (and its PNG) says mixed weights with the mean the page's card shows, not w16."""
    pytest.importorskip("search.bits.quantizer")
    at = opened("precision")
    mean = next(m.value for m in at.metric if m.label == "Mean weight bits")
    title = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    assert f"mixed weights (mean {mean} bits), a16 kv16" in title, title
    assert "w16" not in title, title


def test_sidebar_pages_titles_name_model_and_hardware() -> None:
    at = opened("latency")
    for chart in at.get("plotly_chart"):
        title = json.loads(chart.proto.spec)["layout"]["title"]["text"]
        assert "llama-3.1-8b on h100-sxm" in title, title


def test_home_page_explains_the_method_and_links_the_presets() -> None:
    at = AppTest.from_file(str(DASHBOARD), default_timeout=60).run()  # the default page
    assert not at.exception
    assert at.header[0].value.startswith("Home")
    text = "\n".join(m.value for m in at.markdown)
    for term in ("roofline", "operational intensity", "ridge point", "Tensor parallelism"):
        assert term.lower() in text.lower(), term
    assert "decode is memory-bound" in text  # the worked example, from the library
    models, hardware = at.dataframe[0].value, at.dataframe[1].value
    row = models.set_index("model").loc["llama-3.1-8b"]
    assert row["link"] == "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"
    assert hardware.set_index("hardware").loc["h100-sxm", "capacity (decimal)"] == "85.5 GB"
    assert hardware["datasheet source"].str.len().min() > 10


def test_source_link_takes_the_first_address() -> None:
    assert source_link("NVIDIA datasheet; glennklockwood.com/garden/processors/A100 x") == (
        "https://glennklockwood.com/garden/processors/A100"
    )
    assert source_link("Apple M1 press release (2020-11-10)") is None


def test_streamlit_command_hides_the_deploy_button_and_caps_uploads() -> None:
    command = streamlit_command(8765, "127.0.0.1", 20, "codesign")
    assert command[command.index("--client.toolbarMode") + 1] == "viewer"
    assert command[command.index("--server.maxUploadSize") + 1] == "20"
    assert command[command.index("--server.baseUrlPath") + 1] == "codesign"


def test_bad_upload_limit_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from app import cli

    assert cli.main(["app", "--max-upload-mb", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--max-upload-mb must be an integer in [1, 1000]" in err
