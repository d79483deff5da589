"""Render a Plotly HTML file (e.g. ``codesign_orin.py --figure``) in headless Chromium and
save a PNG screenshot, to look at the figure as a reader's browser draws it.

A figure written with ``include_plotlyjs="cdn"`` loads plotly.js from the network; the
copy rendered here gets the installed plotly package's own plotly.js inline instead, so
no network is needed. Needs selenium and Debian's ``chromium`` / ``chromium-driver``
(``.ci/install-browser``), as the dashboard's browser test does.

Run: ``python benchmarks/html_screenshot.py shapes.html docs/img/codesign-shapes.png``.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import plotly
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CDN_SCRIPT = re.compile(r'<script[^>]*src="https://cdn\.plot\.ly/[^"]*"[^>]*></script>')
RENDER_TIMEOUT_S = 60
#: Pixels added around the figure's own size (scrollbars, margins).
PADDING_PX = 40


def offline_html(html: str) -> str:
    """``html`` with a CDN plotly.js script tag replaced by the installed plotly.js (and
    Plotly's hover toolbar hidden)."""
    bundle = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    script = "<script>" + bundle.read_text(encoding="utf-8") + "</script>"
    script += "<style>.modebar-container { display: none; }</style>"  # no toolbar in a still
    return CDN_SCRIPT.sub(lambda _: script, html, count=1)


def screenshot(html_path: Path, png_path: Path, width: int, height: int) -> None:
    """Open ``html_path`` (made offline) at ``width`` x ``height`` and save ``png_path``."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"):
        options.add_argument(flag)
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "figure.html"
        page.write_text(offline_html(html_path.read_text(encoding="utf-8")), encoding="utf-8")
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            # the viewport itself (a window size would include the browser's own bars)
            metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            driver.get(page.as_uri())
            WebDriverWait(driver, RENDER_TIMEOUT_S).until(
                expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".main-svg"))
            )
            time.sleep(1.0)  # let the last traces and the colour bar draw
            driver.save_screenshot(str(png_path))
        finally:
            driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--width", type=int, default=1500 + PADDING_PX)
    parser.add_argument("--height", type=int, default=600 + PADDING_PX)
    args = parser.parse_args()
    screenshot(args.html, args.png, args.width, args.height)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
