"""Imports the later pages need, done once per server process in a background thread.

The first page a visitor opens is usually Home (text only); scipy (the Precision page's
LP bound, a recalibration), the co-design search and the serving simulator (numba) take
0.5-2 s each to import, which the first visitor of those pages would otherwise wait for.
The server starts importing them as soon as it runs its first page, one thread, in menu
order; a page that needs a module still being imported waits for that import (Python's
per-module import lock), it never imports it twice. Optional layers that are not
installed are skipped.
"""

from __future__ import annotations

import importlib
import logging
import threading

logger = logging.getLogger(__name__)

#: Imported in the background, in this order (menu order of the pages needing them).
BACKGROUND_IMPORTS = (
    "search.codesign",
    "scipy.optimize",
    "scipy.sparse",
    "search.bits.quantizer",
    "search.serving",
)

_lock = threading.Lock()
_started: set[tuple[str, ...]] = set()


def start_background_imports(modules: tuple[str, ...] = BACKGROUND_IMPORTS) -> bool:
    """Start importing ``modules`` in a daemon thread, once per process and list.

    Returns True when this call started the thread, False when an earlier one did.
    """
    with _lock:
        if modules in _started:
            return False
        _started.add(modules)
    thread = threading.Thread(
        target=import_all, args=(modules,), name="dashboard-warm-up", daemon=True
    )
    thread.start()
    return True


def import_all(modules: tuple[str, ...]) -> None:
    """Import each of ``modules``; one that is not installed is logged and skipped."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as error:
            logger.info("warm-up: %s not imported (%s)", name, error)
