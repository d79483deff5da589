"""How long each dashboard page takes to open in a real browser (target: < 1 s warm).

Serves the dashboard with ``codesign app``'s own Streamlit command on a free loopback
port and opens every page in headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by selenium, as ``tests/test_dashboard_browser.py``). A
page counts as open when the page's own text is shown, its charts are drawn and
Streamlit's "running" indicator has gone: what a user waits for, server and browser
both (on the same cores). Each page is opened twice in new sessions: ``cold`` (the
first visit since the server started: its computations not cached yet) and ``warm``
(a later visitor of the running server); Home, opened first, also pays the server's
imports. Beside each, the ratio to a floor: a one-line Streamlit page with a two-point
chart served and opened the same way (`FLOOR_SCRIPT`), what any Streamlit page costs
in this browser on these cores. The 1-minute load average is printed beside
each figure: on a shared machine the same code is 2-5x slower at load 10 than idle.

With ``--baseline DIR`` (a source tree, e.g. ``git archive main | tar -x -C DIR``) it
instead starts servers of DIR and of this tree alternately (two each; ``PYTHONPATH`` set
to the tree served) and prints each page's median cold open of both, with the ratio.

Run: ``python benchmarks/dashboard_page_load.py [--baseline DIR] [page ...]``
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from app.cli.dashboard import DASHBOARD, streamlit_command

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: Page (URL path without ``_page``) and a text it shows once its script has run.
PAGES = {
    "home": "Worked example",
    "roofline": "Ridge point",
    "latency": "Prefill rate",
    "memory": "capacity wall",
    "compare": "TTFT against decode throughput",
    "hardware": "Device cost",
    "accuracy": "Out-of-sample error",
    "precision": "Mean weight bits",
    "serving": "SLO met",
    "codesign": "Frontier design",
}
#: Pages without a chart (nothing to wait for but the text).
NO_CHART = {"home"}
TARGET_S = 1.0
TIMEOUT_S = 180.0
POLL_S = 0.05


def load() -> str:
    """The 1-minute load average now."""
    return f"{os.getloadavg()[0]:.1f}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_healthy(url: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"streamlit did not answer {url} within {TIMEOUT_S:g} s")


def browser(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--window-size=1600,1100",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def is_open(driver, text: str, charts: bool) -> bool:
    from selenium.webdriver.common.by import By

    if driver.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]'):
        return False  # Streamlit still running the page's script
    if driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]'):
        raise SystemExit("the page raised an exception")
    if charts and not driver.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .main-svg"):
        return False
    return text in driver.find_element(By.TAG_NAME, "body").text


def open_page(driver, url: str, page: str) -> float:
    """Seconds from navigating to ``page`` in a new session until it is open."""
    address = f"{url}/" + ("" if page == "home" else f"{page}_page")
    return open_address(driver, address, PAGES[page], page not in NO_CHART)


def open_address(driver, address: str, text: str, charts: bool) -> float:
    """Seconds from navigating to ``address`` until it shows ``text`` (and a chart)."""
    driver.get("about:blank")
    start = time.perf_counter()
    driver.get(address)
    deadline = start + TIMEOUT_S
    while time.perf_counter() < deadline:
        if is_open(driver, text, charts):
            return time.perf_counter() - start
        time.sleep(POLL_S)
    raise SystemExit(f"{address} did not open within {TIMEOUT_S:g} s")


#: The peer every page is timed against: a Streamlit page with one line and one
#: two-point plotly chart, served and opened the same way (the browser's and Streamlit's
#: own cost of a page with a chart, on the same cores at the same load).
FLOOR_SCRIPT = """import plotly.graph_objects as go
import streamlit as st

st.write("Floor page")
st.plotly_chart(go.Figure(go.Scatter(x=[1, 2], y=[1, 2])))
"""


def floor_times(driver, scratch: Path) -> tuple[float, float]:
    """(cold, warm) seconds to open `FLOOR_SCRIPT` served by its own Streamlit."""
    script = scratch / "floor.py"
    script.write_text(FLOOR_SCRIPT)
    port = free_port()
    command = streamlit_command(port, "127.0.0.1")
    command[command.index(str(DASHBOARD))] = str(script)
    server = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=scratch
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url)
        cold = open_address(driver, url, "Floor page", charts=True)
        return cold, open_address(driver, url, "Floor page", charts=True)
    finally:
        server.terminate()
        server.wait(timeout=30)


def served(root: Path | None, scratch: Path) -> tuple[subprocess.Popen, str]:
    """A dashboard server (the installed one, or ``root``'s source tree with
    ``PYTHONPATH`` set to it) on a free port, once healthy, and its address."""
    port = free_port()
    command = streamlit_command(port, "127.0.0.1")
    env = dict(os.environ)
    if root is not None:
        command[command.index(str(DASHBOARD))] = str(root / "app" / "dashboard" / "main.py")
        env["PYTHONPATH"] = str(root)
    server = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=scratch, env=env
    )
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url)
    return server, url


def open_all(driver, url: str, pages: list[str]) -> dict[str, tuple[float, float]]:
    """(cold, warm) seconds per page of a just-started server, Home first."""
    times = {"home": (open_page(driver, url, "home"), open_page(driver, url, "home"))}
    for page in pages:
        if page != "home":
            times[page] = (open_page(driver, url, page), open_page(driver, url, page))
    return times


def compare(driver, baseline: Path, pages: list[str], scratch: Path, rounds: int = 2) -> None:
    """Cold opens of ``baseline``'s tree and of this one, servers started alternately
    (``rounds`` each), medians side by side with their ratio."""
    runs: dict[str, list[dict[str, tuple[float, float]]]] = {"baseline": [], "this tree": []}
    here = Path(__file__).resolve().parents[1]
    for _ in range(rounds):
        for label, root in (("baseline", baseline), ("this tree", here)):
            server, url = served(root, scratch)
            try:
                runs[label].append(open_all(driver, url, pages))
            finally:
                server.terminate()
                server.wait(timeout=30)
    print(f"cold opens, median of {rounds} servers each: {baseline} against this tree")
    print(f"{'page':<10} {'baseline':>10} {'this tree':>10}  ratio  load")
    for page in runs["this tree"][0]:
        before = statistics.median(run[page][0] for run in runs["baseline"])
        after = statistics.median(run[page][0] for run in runs["this tree"])
        print(
            f"{page:<10} {before * 1e3:>7.0f} ms {after * 1e3:>7.0f} ms  "
            f"{before / after:5.2f}  {load()}"
        )


def main(pages: list[str], baseline: Path | None = None) -> int:
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        print("needs /usr/bin/chromium and /usr/bin/chromedriver (.ci/install-browser)")
        return 2
    unknown = sorted(set(pages) - set(PAGES))
    if unknown:
        print(f"unknown page(s) {unknown}; pages: {', '.join(PAGES)}")
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        driver = browser(Path(scratch) / "profile")
        try:
            if baseline is not None:
                compare(driver, baseline, pages or list(PAGES), Path(scratch))
                return 0
            server, url = served(None, Path(scratch))
            try:
                # The first page opened also pays the server's imports: Home, the default.
                cold = {"home": open_page(driver, url, "home")}
                floor_cold, floor = floor_times(driver, Path(scratch))
                print(
                    f"{'page':<10} {'cold open':>10} {'warm open':>10}  warm ratio to 1 s  "
                    "warm / floor  load"
                )
                print(
                    f"{'floor':<10} {floor_cold * 1e3:>7.0f} ms {floor * 1e3:>7.0f} ms  "
                    f"{floor / TARGET_S:.2f}              1.00          {load()}"
                )
                for page in pages or list(PAGES):
                    if page not in cold:
                        cold[page] = open_page(driver, url, page)
                    warm = open_page(driver, url, page)
                    print(
                        f"{page:<10} {cold[page] * 1e3:>7.0f} ms {warm * 1e3:>7.0f} ms  "
                        f"{warm / TARGET_S:.2f}              {warm / floor:.2f}          {load()}",
                        flush=True,
                    )
            finally:
                server.terminate()
                server.wait(timeout=30)
        finally:
            driver.quit()
    return 0


if __name__ == "__main__":
    arguments = sys.argv[1:]
    before = None
    if "--baseline" in arguments:
        index = arguments.index("--baseline")
        before = Path(arguments[index + 1]).resolve()
        del arguments[index : index + 2]
    sys.exit(main(arguments, before))
