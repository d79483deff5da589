"""End to end: serve the dashboard on localhost, open it in headless Chromium, wait for
the Roofline chart and save a screenshot to ``test-artifacts/dashboard.png``; click a
chart's PNG button and check that the browser receives a PNG file.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/install-browser``) and
selenium; skipped with the reason when either is missing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from app.cli.dashboard import streamlit_command

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
STARTUP_TIMEOUT_S = 60
CHART_TIMEOUT_S = 120
#: The PNG is drawn on click: a cold headless Chromium loads plotly.js (~4 MB) first.
DOWNLOAD_TIMEOUT_S = 120
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()),
    reason="no /usr/bin/chromium or /usr/bin/chromedriver (run .ci/install-browser)",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"streamlit exited with code {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"streamlit did not answer {url} within {STARTUP_TIMEOUT_S} s")


@pytest.fixture(scope="module")
def dashboard_url(tmp_path_factory: pytest.TempPathFactory):
    tmp_path = tmp_path_factory.mktemp("dashboard")
    port = free_port()
    log = (tmp_path / "streamlit.log").open("w")
    server = subprocess.Popen(
        streamlit_command(port, "127.0.0.1"),
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
        env={**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def chromium(tmp_path: Path, downloads: Path | None = None):
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    if downloads is not None:
        options.add_experimental_option(
            "prefs",
            {"download.default_directory": str(downloads), "download.prompt_for_download": False},
        )
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1600,1100",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def test_roofline_chart_renders_in_chromium(dashboard_url: str, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    browser = chromium(tmp_path)
    try:
        browser.get(f"{dashboard_url}/roofline_page")
        wait = WebDriverWait(browser, CHART_TIMEOUT_S)
        chart = wait.until(
            expected_conditions.presence_of_element_located(
                (By.CSS_SELECTOR, ".js-plotly-plot .main-svg")
            )
        )
        # One marker per costed operator: the plot drew the prediction, not an empty frame.
        wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .point")) >= 10)
        assert "Ridge point" in browser.find_element(By.TAG_NAME, "body").text
        assert chart.size["width"] > 300
        assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        time.sleep(1)  # let plotly finish its transition before the picture
        ARTIFACTS.mkdir(exist_ok=True)
        assert browser.save_screenshot(str(ARTIFACTS / "dashboard.png"))
    finally:
        browser.quit()


def test_png_button_downloads_the_chart_as_png(dashboard_url: str, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser = chromium(tmp_path, downloads)
    try:
        browser.get(f"{dashboard_url}/roofline_page")
        button = WebDriverWait(browser, CHART_TIMEOUT_S).until(
            lambda b: next(
                (
                    e
                    for e in b.find_elements(
                        By.CSS_SELECTOR, '[data-testid="stDownloadButton"] button'
                    )
                    if e.text == "Download roofline_operators.png"
                ),
                None,
            )
        )
        button.click()
        saved = downloads / "roofline_operators.png"
        WebDriverWait(browser, DOWNLOAD_TIMEOUT_S).until(lambda b: saved.is_file())
        assert saved.read_bytes()[:8] == PNG_SIGNATURE
        assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
    finally:
        browser.quit()


#: Pages screenshotted for the docs (``docs/img/dashboard-<page>.png``), each with the
#: text its page must show once drawn.
SCREENSHOTS = {
    "home": "Worked example",
    "roofline": "Ridge point",
    "latency": "TPOT",
    "memory": "KV cache",
    "compare": "TTFT against decode throughput",
    "hardware": "Device cost",
    "precision": "Mean weight bits",
    "serving": "SLO met",
    "accuracy": "Out-of-sample error",
    "codesign": "Frontier design",
}


#: Pages checked by default (the full set with ``CODESIGN_SCREENSHOTS=1``, which
#: regenerates every docs screenshot: about a minute on an idle 2-core machine).
QUICK = ("home", "compare", "serving")


def test_every_page_draws_without_a_deploy_button(dashboard_url: str, tmp_path: Path) -> None:
    """Each page in a real browser: its text appears, no exception, no "Deploy" button
    (toolbarMode viewer); a screenshot per page in test-artifacts/ for the docs
    (``cp test-artifacts/dashboard-*.png docs/img/``)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser = chromium(tmp_path)
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        every = os.environ.get("CODESIGN_SCREENSHOTS") == "1"
        for page, text in SCREENSHOTS.items():
            if not every and page not in QUICK:
                continue
            browser.get(f"{dashboard_url}/" + ("" if page == "home" else f"{page}_page"))
            WebDriverWait(browser, CHART_TIMEOUT_S).until(
                lambda b, text=text: text in b.find_element(By.TAG_NAME, "body").text
            )
            if page != "home":
                WebDriverWait(browser, CHART_TIMEOUT_S).until(
                    lambda b: b.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .main-svg")
                )
            time.sleep(1.5)  # plotly's transition
            body = browser.find_element(By.TAG_NAME, "body").text
            assert "Deploy" not in body, page
            assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]'), page
            assert browser.save_screenshot(str(ARTIFACTS / f"dashboard-{page}.png"))
    finally:
        browser.quit()
