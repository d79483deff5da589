"""Ray plumbing shared by the co-design grid and the serving sweeps
(``pip install .[distributed]``): import Ray with an install hint, use the running
instance or start (and afterwards shut down) a local one, and collect task results in
submission order behind one progress bar.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from roofline import InputError


def import_ray(option: str) -> Any:
    """The ``ray`` module, or an `InputError` naming ``option`` and how to install Ray."""
    try:
        import ray
    except ImportError:
        raise InputError(
            f"{option} needs Ray: pip install '.[distributed]' (or pip install 'ray>=2.9')"
        ) from None
    return ray


@contextmanager
def ray_running(ray: Any) -> Iterator[None]:
    """The running Ray instance if there is one (``ray.init(address=...)`` first for a
    cluster); otherwise a local one, shut down on exit."""
    started = not ray.is_initialized()
    if started:
        ray.init(include_dashboard=False, logging_level=logging.ERROR)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def gather(ray: Any, futures: Sequence[Any], desc: str, unit: str, progress: bool) -> list[Any]:
    """The results of ``futures`` in their order, as they finish (a tqdm bar when
    ``progress``)."""
    position = {future: index for index, future in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    pending = list(futures)
    with tqdm(total=len(futures), desc=desc, unit=unit, disable=not progress) as bar:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for future in done:
                results[position[future]] = ray.get(future)
                bar.update()
    return results
