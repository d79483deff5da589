"""PNG pictures of the dashboard's charts, drawn by kaleido in the system's Chromium.

kaleido >= 1 renders plotly figures in a Chromium-based browser driven by
choreographer. `figure_png` names the browser explicitly (kaleido's ``path``
option, passed on to ``choreographer.Browser``), so choreographer never looks
for, or falls back to, a browser of its own; kaleido never downloads one by
itself (that takes an explicit ``kaleido.get_chrome()``). MathJax, which
kaleido's page would otherwise load from a CDN, is switched off: no chart uses
LaTeX. plotly's ``Figure.to_image`` reaches the same kaleido call but can set
neither option, hence the direct call.

Where no Chromium is installed (or kaleido is missing), `system_chromium` is
None and the pages show a one-line note in place of the PNG button.

One headless Chromium serves every PNG of the server process (`_Renderer`: kaleido's
browser kept open on an event loop of its own thread), so a click costs a render, not
a browser start (3-4 s before). Clicks are drawn one at a time (a lock), each within
`TIMEOUT_S`; a renderer that fails is closed and the next click starts a new one.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

#: Executable names of system Chromium-based browsers, looked up on PATH in this order.
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Width of a PNG in layout pixels when the figure sets none (the page lets it fill the column).
DEFAULT_WIDTH_PX = 1000
#: Height in layout pixels when the figure sets none (plotly's own default).
DEFAULT_HEIGHT_PX = 500
#: Device pixels per layout pixel: 2 gives a sharp picture on slides and high-DPI screens.
SCALE = 2.0
#: Seconds kaleido may take to draw one figure before giving up.
TIMEOUT_S = 60.0


def system_chromium() -> Path | None:
    """The Chromium kaleido will drive: ``$BROWSER_PATH`` if set (choreographer's own
    variable), else the first of `BROWSER_NAMES` on PATH; None if there is none or
    kaleido is not installed."""
    if find_spec("kaleido") is None:
        return None
    configured = os.environ.get("BROWSER_PATH")
    if configured:
        path = Path(configured)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


class _Renderer:
    """A kaleido browser kept open on its own event loop (a daemon thread)."""

    def __init__(self, browser: Path) -> None:
        import kaleido  # deferred: only a click on a PNG button needs it

        self.browser = browser
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.kaleido = kaleido.Kaleido(n=1, path=str(browser), mathjax=False, timeout=TIMEOUT_S)
        self._run(self.kaleido.open())

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(TIMEOUT_S)

    def render(self, figure: go.Figure, options: dict[str, object]) -> bytes:
        return bytes(self._run(self.kaleido.calc_fig(figure, opts=options)))

    def close(self) -> None:
        try:
            self._run(self.kaleido.close())
        except Exception:  # a broken browser: drop it all the same
            pass
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)


_LOCK = threading.Lock()
_RENDERER: _Renderer | None = None
#: Browser starts so far in this process (the tests check that clicks reuse one).
STARTS = [0]


def figure_png(figure: go.Figure, browser: Path, scale: float = SCALE) -> bytes:
    """The figure as PNG bytes, drawn in ``browser`` (a Chromium executable).

    Size: the figure's layout width and height in pixels (`DEFAULT_WIDTH_PX` and
    `DEFAULT_HEIGHT_PX` where unset), times ``scale`` device pixels per layout pixel
    (`SCALE` for the page's downloads; the notebooks' static images use 1). The first call starts the
    process's one headless browser (about a second); later calls reuse it.
    """
    global _RENDERER
    layout = figure.layout
    options = {
        "format": "png",
        "width": layout.width or DEFAULT_WIDTH_PX,
        "height": layout.height or DEFAULT_HEIGHT_PX,
        "scale": scale,
    }
    with _LOCK:
        if _RENDERER is not None and _RENDERER.browser != browser:
            _RENDERER.close()
            _RENDERER = None
        if _RENDERER is None:
            STARTS[0] += 1
            _RENDERER = _Renderer(browser)
        try:
            return _RENDERER.render(figure, options)
        except Exception:
            _RENDERER.close()
            _RENDERER = None
            raise
