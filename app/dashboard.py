"""What-if dashboard: ``codesign app`` or ``streamlit run app/dashboard.py``.

The sidebar (hardware preset and scale factors, model preset or uploaded
config.json, scenario) is shared; each page under ``app/dashboard_pages/`` reads
it. Pages for layers that are not installed (the ILP bit allocation and the
co-design search in ``search/``) are left out of the menu.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import streamlit as st

from app.dashboard_pages.sidebar import render_sidebar
from app.dashboard_pages.state import SELECTION_KEY

PAGES_DIR = Path(__file__).resolve().parent / "dashboard_pages"
#: Optional pages: (file, title, module that must be importable).
OPTIONAL_PAGES = (
    ("precision_page.py", "Precision", "search.bits.quantizer"),
    ("codesign_page.py", "Co-design", "search.codesign"),
)


def _available(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def pages() -> list[st.Page]:
    """The menu: the four core pages, then the optional ones whose layer exists."""
    menu = [
        st.Page(PAGES_DIR / "roofline_page.py", title="Roofline", default=True),
        st.Page(PAGES_DIR / "latency_page.py", title="Latency"),
        st.Page(PAGES_DIR / "memory_page.py", title="Memory"),
        st.Page(PAGES_DIR / "compare_page.py", title="Compare"),
    ]
    for file, title, module in OPTIONAL_PAGES:
        if _available(module):
            menu.append(st.Page(PAGES_DIR / file, title=title))
    return menu


def main() -> None:
    """Sidebar first, then the selected page."""
    st.set_page_config(page_title="LLM inference co-design", layout="wide")
    navigation = st.navigation(pages())
    selection = render_sidebar()
    st.session_state[SELECTION_KEY] = selection
    if selection is None:
        st.stop()
    navigation.run()


main()
