"""The dashboard's menu: each page's script, title and the sidebar controls it reads
(importable without building the app, unlike ``main.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from app.dashboard.sidebar import EVERY_CONTROL
from app.dashboard.sidebar_modes import LORA_CONTROLS


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
    # Request lengths come from the page's traffic, the replica is one (no dp); samples,
    # beams, images and LoRA are `serve`'s --samples / --beams / --images / --lora-*.
    PageSpec(
        "serving_page.py",
        "Serving",
        EVERY_CONTROL - {"batch", "input_tokens", "output_tokens", "use_case", "dp"},
        needs="search.serving",
    ),
    # The space file names its own hardware, models and scenario (chosen in the sidebar).
    PageSpec("codesign_page.py", "Co-design", frozenset(), needs="search.codesign"),
)
