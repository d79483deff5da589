"""What-if dashboard: ``codesign app`` or ``streamlit run app/dashboard/main.py``.

The sidebar (hardware preset and scale factors, model preset or uploaded
config.json, scenario) is shared; each page under ``app/dashboard/`` reads
it, and shows there only the controls it reads (`page_specs.PAGES`). Pages for layers that are not installed (the ILP bit allocation and the
co-design search in ``search/``) are left out of the menu.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import streamlit as st

from app.dashboard.page_specs import PAGES
from app.dashboard.sidebar import keep_sidebar_values, render_sidebar
from app.dashboard.state import SELECTION_KEY
from app.dashboard.warm_up import start_background_imports

PAGES_DIR = Path(__file__).resolve().parent


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
