"""Helpers every page uses: the current selection, errors as one line, charts with
their data as CSV and their picture as PNG, and the CLI command that reproduces the
page's numbers."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from roofline import InputError

from .png_export import figure_png, system_chromium
from .state import CUSTOM_HW_FILE, SELECTION_KEY, UPLOADED_CONFIG_NAME, Selection

T = TypeVar("T")

#: Shown in place of the PNG button where the server has no Chromium to draw with.
NO_CHROMIUM_NOTE = (
    "PNG download needs Chromium on the server (Debian: apt install chromium); "
    "the chart's camera icon saves a PNG from your browser."
)


#: Base address of the built documentation (``mkdocs build``/``serve``), e.g.
#: ``https://example.org/llm-codesign/``; unset: pages name the docs file and section.
DOCS_URL_VARIABLE = "CODESIGN_DOCS_URL"


def docs_link(section: str, page: str = "dashboard") -> str:
    """Markdown for the docs section ``section`` (an anchor of ``docs/{page}.md``): a link
    under ``$CODESIGN_DOCS_URL`` when set, else the file and section in the repository."""
    base = os.environ.get(DOCS_URL_VARIABLE, "").strip()
    if base:
        return f"[docs: {page} / {section}]({base.rstrip('/')}/{page}/#{section})"
    return f"docs: `docs/{page}.md`, section *{section}*"


def page_intro(what: str, section: str, page: str = "dashboard") -> None:
    """The one line under a page's header: what the page shows, and where its docs are."""
    st.caption(f"{what} ({docs_link(section, page)})")


def tokens_per_s(value: float) -> str:
    """A token rate for a metric card: ``'158.6 tok/s'``, ``'44,410 tok/s'``."""
    return f"{value:,.0f} tok/s" if value >= 1000 else f"{value:.4g} tok/s"


def error_summary(frame: pd.DataFrame, error_column: str, by: list[str]) -> pd.DataFrame:
    """Rows, MAPE, median and p90 absolute error and bias (%) of the signed errors in
    ``error_column`` per ``by`` group, to 0.1."""
    return (
        frame.groupby(by)[error_column]
        .agg(
            rows="size",
            MAPE=lambda e: e.abs().mean(),
            median=lambda e: e.abs().median(),
            p90=lambda e: e.abs().quantile(0.9),
            bias="mean",
        )
        .round(1)
        .reset_index()
    )


def current_selection() -> Selection:
    """The sidebar's selection; stops the page if the sidebar reported an error."""
    selection = st.session_state.get(SELECTION_KEY)
    if selection is None:
        st.stop()
    return selection


def checked(function: Callable[..., T], *args: object) -> T:
    """Call ``function``; show an `InputError` as one line and stop the page."""
    try:
        return function(*args)
    except InputError as error:
        st.error(str(error))
        st.stop()


def chart_config(name: str) -> dict[str, object]:
    """Plotly's options for a chart: no logo; the camera icon saves ``name.png`` from the
    user's browser at twice the screen resolution, whatever the server has."""
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "scale": 2, "filename": name},
    }


def design_title(selection: Selection | None, weights: str | None = None) -> str:
    """``'llama-3.1-8b on h100-sxm, batch 1, 1024 in / 128 out, w16a16kv16, tp 1'``: what a
    chart was drawn for, so that an exported PNG says it. ``weights`` replaces the
    sidebar's weight bits where the page sets its own (the Precision page's allocation):
    ``'..., mixed weights (mean 9.74 bits), a16 kv16, ...'``."""
    if selection is None:
        return ""
    model = UPLOADED_CONFIG_NAME if selection.model_json is not None else selection.model
    hw = selection.hw + (" (scaled)" if selection.is_scaled else "")
    bits = (
        f"w{selection.weight_bits:g}a{selection.activation_bits:g}kv{selection.kv_bits:g}"
        if weights is None
        else f"{weights}, a{selection.activation_bits:g} kv{selection.kv_bits:g}"
    )
    return (
        f"{model} on {hw}, batch {selection.batch}, {selection.input_tokens} in / "
        f"{selection.output_tokens} out, {bits}, tp {selection.tp} pp {selection.pp}"
        + ("" if selection.runtime == "ideal" else f", {selection.runtime}")
    )


def show_chart(
    figure: go.Figure,
    data: pd.DataFrame,
    name: str,
    label: str | None = None,
    for_sidebar: bool = True,
    weights: str | None = None,
) -> None:
    """Draw ``figure``, then its `download_buttons`. A figure without a title gets
    ``label`` (default: ``name`` in words) over a smaller second line, the
    `design_title` (only when the chart shows the sidebar's design, ``for_sidebar``), so
    that its PNG names what it shows and for which model and hardware, and a title in a
    half-width column is not cut off. ``weights``: see `design_title`."""
    if not figure.layout.title.text:
        selection = st.session_state.get(SELECTION_KEY)
        design = design_title(selection, weights) if for_sidebar else ""
        what = label if label is not None else name.replace("_", " ")
        text = f"{what}:<br><sup>{design}</sup>" if design else what
        figure.update_layout(title={"text": text, "font": {"size": 14}})
        top = 80 if design else 60
        if figure.layout.margin.t is None or figure.layout.margin.t < top:
            figure.update_layout(margin={"t": top})
    st.plotly_chart(figure, config=chart_config(name), key=f"chart-{name}")
    download_buttons(figure, data, name)


def download_buttons(figure: go.Figure, data: pd.DataFrame, name: str) -> None:
    """``name.csv`` (the chart's table) and ``name.png`` (the chart, drawn by kaleido when
    clicked), side by side; `NO_CHROMIUM_NOTE` in place of the PNG where there is no Chromium."""
    browser = system_chromium()
    with st.container(horizontal=True, vertical_alignment="center"):
        st.download_button(
            f"Download {name}.csv",
            data.to_csv(index=False).encode("utf-8"),
            file_name=f"{name}.csv",
            mime="text/csv",
            key=f"csv-{name}",
            on_click="ignore",
        )
        if browser is None:
            st.caption(NO_CHROMIUM_NOTE)
            return
        st.download_button(
            f"Download {name}.png",
            lambda: figure_png(figure, browser),
            file_name=f"{name}.png",
            mime="image/png",
            key=f"png-{name}",
            on_click="ignore",
        )


def show_commands(selection: Selection | None, *commands: str, note: str = "") -> None:
    """An expander with the ``codesign`` call(s) that print this page's numbers
    (``selection``: the sidebar's, None on pages that do not read it)."""
    with st.expander("Reproduce with the CLI"):
        st.code("\n".join(commands), language="bash")
        if note:
            st.caption(note)
        if selection is not None and selection.model_json is not None:
            st.caption(f"`{UPLOADED_CONFIG_NAME}` is the uploaded file, saved under that name.")
        if selection is not None and selection.hw_yaml is not None:
            st.caption(
                f"`{CUSTOM_HW_FILE}` is the custom hardware typed in the sidebar (its download "
                "button there)."
            )
