"""How long the dashboard takes to answer a slider move (target: < 200 ms per page).

Drives ``app/dashboard/main.py`` with Streamlit's AppTest (no browser): on each page, move
the memory-bandwidth slider (memory capacity on the Memory page) through values not seen before (each page has its own
compute scale, so every move is a cache miss: a fresh prediction and fresh sweeps), then rerun with an unchanged value (a
cache hit). Prints the median and worst wall time of ``AppTest.run()``, which
includes AppTest's own polling, so it is an upper bound on the server's work.
The Precision page (when ``search`` is installed) is moved along its memory
budget instead: each move solves the bit-allocation ILP. The Serving page (when
``search.serving`` is installed) is moved along its request-rate slider through rates
not seen before: each move simulates the new rate and any round rate of the curve's
ladder that enters its span (0.25x to 2x; one or two runs): once with one
continuous-batching replica, once with 1 prefill + 2 decode replicas and 20 shared
prefixes.

Every figure is printed with the 1-minute load average when it was taken (on a shared
machine the same code runs 2-5x slower at load 10 than idle; compare figures taken at
similar loads, or old and new code back to back).

First, each page opened at its defaults in a fresh session (target: < 1 s): the first
visit in the process (cold: its own computations not cached yet, imports warm after the
Home page) and a second fresh session (warm: what every later visitor of a running
server sees). Sessions share the first one's component registry (`fresh_session`): before
2026-12-04 each paid Streamlit's scan of every installed package, about 1 s, which a
server pays once at start-up.

Run: ``python benchmarks/dashboard_slider_latency.py [open] [moves] [precision] [serving]``
(all four sections when none is named).
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import time
from importlib.util import find_spec
from pathlib import Path

from streamlit.testing.v1 import AppTest

DASHBOARD = Path(__file__).resolve().parents[1] / "app" / "dashboard" / "main.py"
#: Page, the slider moved through `MOVES`, and a compute scale of the page's own so that
#: no page reuses another's cached results. The Memory page shows no rates (no compute
#: or bandwidth sliders): it is moved along memory capacity, which no other page moves.
PAGES = (
    ("roofline", "bw_scale", 0.5),
    ("latency", "bw_scale", 0.75),
    ("memory", "capacity_scale", None),
    ("compare", "bw_scale", 1.5),
)
MOVES = (1.25, 1.5, 2.0, 3.0, 4.0, 0.75, 0.5)
#: Request rates the Serving page is moved through (none simulated before; from the
#: default 10 requests/s, 7.3, 17.1 and 31.3 bring a new ladder rate into the curve).
RATES = (7.3, 11.9, 17.1, 23.7, 31.3)
#: Memory budgets (GB) the Precision page is moved through (ILP solves).
BUDGETS_GB = (14.0, 12.0, 10.0, 9.0, 8.0, 7.0, 6.0)
TARGET_S = 0.2
#: Every page opened at its defaults, in menu order (optional ones when importable).
DEFAULT_PAGES = (
    ("home", None),
    ("roofline", None),
    ("latency", None),
    ("memory", None),
    ("compare", None),
    ("hardware", None),
    ("accuracy", None),
    ("precision", "search.bits.quantizer"),
    ("serving", "search.serving"),
    ("codesign", "search.codesign"),
)
FIRST_LOAD_TARGET_S = 1.0
#: Parts of the benchmark, selectable on the command line: pages opened at their defaults,
#: slider moves on the prediction pages, the Precision page's ILP, the Serving page.
SECTIONS = ("open", "moves", "precision", "serving")


def fresh_session(components: object) -> AppTest:
    """A new AppTest session sharing ``components``, the Streamlit component registry
    of the first session. Each AppTest otherwise scans every installed distribution's
    metadata for components on its first run (about 1 s at load 15, over 60 % of a
    fresh session's time), which a server does once at start-up, not per visitor."""
    at = AppTest.from_file(str(DASHBOARD), default_timeout=120)
    if components is not None and hasattr(at, "_bidi_component_manager"):
        at._bidi_component_manager = components  # private: absent in other versions
    return at


def first_loads(components: object) -> None:
    """Each page at its defaults in a fresh session: cold (first in the process), warm."""
    print(f"{'page':<13} {'cold open':>10} {'warm open':>10}  warm ratio to 1 s  load")
    for page, needs in DEFAULT_PAGES:
        if needs is not None and find_spec(needs) is None:
            continue
        times = []
        for _ in range(2):
            at = fresh_session(components)
            at.switch_page(f"{page}_page.py")
            times.append(timed_run(at))
        print(
            f"{page:<13} {times[0] * 1e3:>7.0f} ms {times[1] * 1e3:>7.0f} ms  "
            f"{times[1] / FIRST_LOAD_TARGET_S:.2f}              {load()}"
        )
    print()


def load() -> str:
    """The 1-minute load average now ('n/a' where the OS has none)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "n/a"


def timed_run(at: AppTest) -> float:
    start = time.perf_counter()
    at.run()
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return time.perf_counter() - start


def main(sections: list[str]) -> None:
    """Run the named `SECTIONS` (all when none is named)."""
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"unknown section(s) {unknown}; sections: {', '.join(SECTIONS)}")
    chosen = set(sections or SECTIONS)
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    first = AppTest.from_file(str(DASHBOARD), default_timeout=60).run()  # imports, Home
    if "open" in chosen:
        first_loads(getattr(first, "_bidi_component_manager", None))
    at = AppTest.from_file(str(DASHBOARD), default_timeout=60).run()
    print(
        f"{'page':<13} {'miss median':>12} {'miss worst':>11} {'hit median':>11}  "
        "ratio to 200 ms  load"
    )
    for page, moved, compute_scale in PAGES if "moves" in chosen else ():
        at.switch_page(f"{page}_page.py")
        timed_run(at)  # draws this page's sidebar
        if compute_scale is not None:
            at.select_slider(key="compute_scale").set_value(compute_scale)
        at.select_slider(key=moved).set_value(1.0)
        timed_run(at)  # warm up imports and this page's first run
        misses = []
        for value in MOVES:
            at.select_slider(key=moved).set_value(value)
            misses.append(timed_run(at))
        report(page, misses, [timed_run(at) for _ in range(5)])
    if "precision" in chosen and find_spec("search.bits.quantizer") is not None:
        # The Precision page solves an ILP per move: not a single-scenario prediction.
        at.switch_page("precision_page.py")
        timed_run(at)
        misses = []
        for budget_gb in BUDGETS_GB:
            at.slider(key="precision_memory_gb").set_value(budget_gb)
            misses.append(timed_run(at))
        report("precision", misses, [timed_run(at) for _ in range(5)])
    if "serving" in chosen and find_spec("search.serving") is not None:
        at.switch_page("serving_page.py")
        timed_run(at)
        for label in ("serving", "serving pools"):
            if label == "serving pools":
                at.selectbox(key="serving_policy").set_value("disaggregated")
                timed_run(at)
                at.number_input(key="serving_Decode_replicas").set_value(2)
                at.number_input(key="serving_prefix_share").set_value(0.8)
                at.number_input(key="serving_prefix_tokens").set_value(2000)
                at.number_input(key="serving_prefix_count").set_value(20)
                timed_run(at)
            misses = []
            for rate in RATES:
                at.slider[0].set_value(rate)
                misses.append(timed_run(at))
            report(label, misses, [timed_run(at) for _ in range(5)])


def report(page: str, misses: list[float], hits: list[float]) -> None:
    miss = statistics.median(misses)
    print(
        f"{page:<13} {miss * 1e3:>9.0f} ms {max(misses) * 1e3:>8.0f} ms "
        f"{statistics.median(hits) * 1e3:>8.0f} ms  {miss / TARGET_S:.2f}             {load()}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
