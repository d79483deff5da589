"""The shared look of every page: a one-line 'what this page shows' with its docs
section, a title on every chart (so its PNG says which model and hardware), legend
names in words (no raw column names), and the Home page with the presets' sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.cli.dashboard import streamlit_command
from app.dashboard.home_page import source_link

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"
PAGES = (
    "roofline",
    "latency",
    "memory",
    "compare",
    "hardware",
    "accuracy",
    "precision",
    "serving",
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
    at = opened(name)
    assert any("docs/dashboard.md" in c.value for c in at.caption), [c.value for c in at.caption]
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec["layout"].get("title", {}).get("text", "")
        assert title, name
        for trace in spec["data"]:
            legend = trace.get("name") or ""
            assert not legend.endswith(("_ms", "_s", "_bytes")), (name, legend)


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
