"""End to end: serve the dashboard on localhost, open it in headless Chromium, wait for
the Roofline chart and save a screenshot to ``test-artifacts/dashboard.png``; click a
chart's PNG button and check that the browser receives a PNG file; visit every page.

One server and one Chromium serve the module (a Chromium start and its first page, which
compiles the dashboard's JavaScript, cost more CPU than a page); the Roofline page is
loaded once for the two tests that read it. Screenshots are taken once the picture is
still (two identical frames), at most the settling time plotly's transition needs.

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
#: Seconds between the two frames compared by `settled_png`.
FRAME_GAP_S = 0.25
ROOFLINE_PAGE = "roofline_page"

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


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared browser's download folder."""
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, downloads: Path):
    """One headless Chromium for the module (downloads into `downloads`)."""
    driver = chromium(tmp_path_factory.mktemp("chromium"), downloads)
    try:
        yield driver
    finally:
        driver.quit()


def on_page(browser, url: str) -> bool:
    """Whether ``browser`` shows ``url`` already (loaded by an earlier test)."""
    return browser.current_url.rstrip("/") == url.rstrip("/")


@pytest.fixture
def roofline(browser, dashboard_url: str):
    """``browser`` on the Roofline page with its chart drawn (loaded once for the tests
    that read it, unless another page was opened since)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    url = f"{dashboard_url}/{ROOFLINE_PAGE}"
    if not on_page(browser, url):
        browser.get(url)
    WebDriverWait(browser, CHART_TIMEOUT_S).until(
        expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, ".js-plotly-plot .main-svg")
        )
    )
    return browser


def settled_png(browser, limit_s: float) -> bytes:
    """A screenshot once two frames `FRAME_GAP_S` apart are identical (plotly's transition
    over), or the one taken after ``limit_s`` seconds; checked to be a PNG."""
    deadline = time.monotonic() + limit_s
    frame = browser.get_screenshot_as_png()
    while time.monotonic() < deadline:
        time.sleep(FRAME_GAP_S)
        previous, frame = frame, browser.get_screenshot_as_png()
        if frame == previous:
            break
    assert frame[:8] == PNG_SIGNATURE
    return frame


def test_roofline_chart_renders_in_chromium(roofline) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser = roofline
    chart = browser.find_element(By.CSS_SELECTOR, ".js-plotly-plot .main-svg")
    # One marker per costed operator: the plot drew the prediction, not an empty frame.
    WebDriverWait(browser, CHART_TIMEOUT_S).until(
        lambda b: len(b.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .point")) >= 10
    )
    assert "Ridge point" in browser.find_element(By.TAG_NAME, "body").text
    assert chart.size["width"] > 300
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
    picture = settled_png(browser, 1.0)  # let plotly finish its transition before the picture
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "dashboard.png").write_bytes(picture)


def test_png_button_downloads_the_chart_as_png(roofline, downloads: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser = roofline
    button = WebDriverWait(browser, CHART_TIMEOUT_S).until(
        lambda b: next(
            (
                e
                for e in b.find_elements(By.CSS_SELECTOR, '[data-testid="stDownloadButton"] button')
                if e.text == "Download roofline_operators.png"
            ),
            None,
        )
    )
    saved = downloads / "roofline_operators.png"
    saved.unlink(missing_ok=True)
    button.click()
    WebDriverWait(browser, DOWNLOAD_TIMEOUT_S).until(lambda b: saved.is_file())
    assert saved.read_bytes()[:8] == PNG_SIGNATURE
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')


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


def test_every_page_draws_without_a_deploy_button(browser, dashboard_url: str) -> None:
    """Each page in a real browser: its text appears, no exception, no "Deploy" button
    (toolbarMode viewer); a screenshot per page in test-artifacts/ for the docs
    (``cp test-artifacts/dashboard-*.png docs/img/``)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    ARTIFACTS.mkdir(exist_ok=True)
    every = os.environ.get("CODESIGN_SCREENSHOTS") == "1"
    for page, text in SCREENSHOTS.items():
        if not every and page not in QUICK:
            continue
        url = f"{dashboard_url}/" + ("" if page == "home" else f"{page}_page")
        if not on_page(browser, url):
            browser.get(url)
        WebDriverWait(browser, CHART_TIMEOUT_S).until(
            lambda b, text=text: text in b.find_element(By.TAG_NAME, "body").text
        )
        if page != "home":
            WebDriverWait(browser, CHART_TIMEOUT_S).until(
                lambda b: b.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .main-svg")
            )
        picture = settled_png(browser, 1.5)  # plotly's transition
        body = browser.find_element(By.TAG_NAME, "body").text
        assert "Deploy" not in body, page
        assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]'), page
        (ARTIFACTS / f"dashboard-{page}.png").write_bytes(picture)
