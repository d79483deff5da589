"""What-if dashboard: ``codesign app`` or ``streamlit run app/dashboard/main.py``.

The sidebar (hardware preset and scale factors, model preset or uploaded
config.json, scenario) is shared; each page under ``app/dashboard/`` reads
it, and shows there only the controls it reads (`PAGES`). Pages for layers that are not installed (the ILP bit allocation and the
co-design search in ``search/``) are left out of the menu.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import streamlit as st

from app.dashboard.sidebar import EVERY_CONTROL, keep_sidebar_values, render_sidebar
from app.dashboard.sidebar_modes import LORA_CONTROLS
from app.dashboard.state import SELECTION_KEY
from app.dashboard.warm_up import start_background_imports

PAGES_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class PageSpec:
    """One menu entry: its script, title, the sidebar controls it reads (keys of
    `sidebar.DEFAULTS`; the others are hidden there) and, for optional pages, the
    module that must be importable."""

    file: str
    title: str
    controls: frozenset[str]
    needs: str | None = None


#: The menu, in order; the first page is the default. Why each page hides what it hides:
PAGES = (
    # The method, the presets and their sources: reads no sidebar value.
    PageSpec("home_page.py", "Home", frozenset()),
    # Operators, OI and bounds of one replica on the hardware's roofline (physics: no
    # serving stack): capacity and data parallelism change none.
    PageSpec("roofline_page.py", "Roofline", EVERY_CONTROL - {"capacity_scale", "dp", "runtime"}),
    # Times, throughput (dp) and the capacity wall (capacity): everything.
    PageSpec("latency_page.py", "Latency", EVERY_CONTROL),
    # Bytes per device against capacity: no rates (no serving stack), and dp replicas do
    # not share memory.
    PageSpec(
        "memory_page.py",
        "Memory",
        EVERY_CONTROL - {"compute_scale", "bw_scale", "link_bw_scale", "dp", "runtime"},
    ),
    # Design A is the whole sidebar.
    PageSpec("compare_page.py", "Compare", EVERY_CONTROL),
    # The page builds its own device (no preset, no scale factors) and `hw design` takes
    # no serving stack: the model and scenario only; a designed device has no host
    # memory link, so no offload.
    PageSpec(
        "hardware_page.py",
        "Hardware designer",
        EVERY_CONTROL
        - {"hw", "compute_scale", "bw_scale", "capacity_scale", "link_bw_scale"}
        - {"runtime", "weight_offload", "kv_offload"}
        - LORA_CONTROLS,  # nor LoRA flags on `hw design`
    ),
    # Published measurements against out-of-sample predictions: no sidebar input.
    PageSpec("accuracy_page.py", "Accuracy", frozenset()),
    # The allocation replaces the weight bits; footprint and step times are per replica.
    PageSpec(
        "precision_page.py",
        "Precision",
        EVERY_CONTROL - {"weight_bits", "dp"} - LORA_CONTROLS,  # `quantize` has no LoRA
        needs="search.bits.quantizer",
    ),
    # Request lengths come from the page's traffic, the replica is one (no dp); `serve`
    # has no parallel-sampling, beam, image or LoRA option, so those controls are hidden.
    PageSpec(
        "serving_page.py",
        "Serving",
        EVERY_CONTROL
        - {"batch", "input_tokens", "output_tokens", "use_case", "dp"}
        - {"parallel_samples", "beam_width", "images"}
        - LORA_CONTROLS,
        needs="search.serving",
    ),
    # The space file names its own hardware, models and scenario (chosen in the sidebar).
    PageSpec("codesign_page.py", "Co-design", frozenset(), needs="search.codesign"),
)


def _available(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def pages() -> list[st.Page]:
    """The menu: the core pages, then the optional ones whose layer exists."""
    return [
        st.Page(PAGES_DIR / spec.file, title=spec.title, default=index == 0)
        for index, spec in enumerate(PAGES)
        if spec.needs is None or _available(spec.needs)
    ]


def main() -> None:
    """The sidebar controls of the selected page, then the page (the first run of the
    server also starts `warm_up`'s background imports)."""
    st.set_page_config(page_title="LLM inference co-design", layout="wide")
    start_background_imports()  # once per server: scipy, search layers (`warm_up`)
    navigation = st.navigation(pages())
    controls = next(spec.controls for spec in PAGES if spec.title == navigation.title)
    if controls:
        selection = render_sidebar(controls)
        st.session_state[SELECTION_KEY] = selection
        if selection is None:
            st.stop()
    else:
        keep_sidebar_values()
    navigation.run()


main()
